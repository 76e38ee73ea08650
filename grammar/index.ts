// The front end's entry point: source text → typed AST plus diagnostics. Never throws.
// Pipeline: normalise line ends → Chevrotain lexer → layout pass (NEWLINE/INDENT/DEDENT) → parser with
// embedded actions. Syntax errors resume at the next top-level statement, so one mistake does not hide the rest.
import type { IRecognitionException, IToken, TokenType } from "chevrotain";
import { EOF } from "./chevrotain.ts";
import type { Program, Span } from "./ast.ts";
import { CappedDiagnostics, diagnostic, MAX_ERRORS, type Diagnostic } from "./diagnostics.ts";
import { layout } from "./layout.ts";
import { tokenSpan, VvmParser } from "./parser.ts";
import {
  Dedent,
  Equals,
  Indent,
  Keyword,
  lexer,
  Newline,
  UnterminatedString,
  UnterminatedTemplate,
  UnterminatedTripleString,
} from "./tokens.ts";

const UNTERMINATED: ReadonlySet<TokenType> = new Set([UnterminatedString, UnterminatedTripleString, UnterminatedTemplate]);

interface ParseResult {
  program: Program | null;
  diagnostics: Diagnostic[];
}

const parser = new VvmParser();

function endOfSource(text: string): Span {
  let line = 1;
  let lastNl = -1;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) {
    line++;
    lastNl = i;
  }
  const col = text.length - lastNl;
  return { line, col, endLine: line, endCol: col };
}

/** One character for a message: by its code point when it shows as nothing or as something else. */
export function showChar(ch: string): string {
  const code = ch.codePointAt(0)!;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
  // one that shows as nothing (a control, a format character such as U+200B or the byte-order mark) is
  // named by its code point; one that looks like something else (U+00A0 like a space) by both
  if (/^[\p{C}\p{Zl}\p{Zp}]$/u.test(ch)) return hex;
  if (/^\p{Zs}$/u.test(ch) || code === 0xfffd) return `'${ch}' (${hex})`;
  return `'${ch}'`;
}

/**
 * An expression's source as a name (the key of `export <expression>`): its tokens in order, comments
 * dropped, one space wherever the source had a gap between two tokens; a string or template keeps its own
 * spaces and line breaks (they are its value, not a gap).
 */
export function expressionKey(text: string): string {
  let out = "";
  let end = 0;
  for (const t of lexer.tokenize(text).tokens) {
    if (out !== "" && t.startOffset > end) out += " ";
    out += t.image;
    end = t.startOffset + t.image.length;
  }
  return out;
}

export function parse(source: string, path: string): ParseResult {
  try {
    return parseUnsafe(source, path);
  } catch (err) {
    // A bug in the front end must not surface as a stack trace; say so plainly.
    const message = err instanceof Error ? err.message : String(err);
    return {
      program: null,
      diagnostics: [
        diagnostic(
          "E001",
          `internal error in the parser (please report it): ${message}`,
          path,
          { line: 1, col: 1, endLine: 1, endCol: 1 },
        ),
      ],
    };
  }
}

function parseUnsafe(source: string, path: string): ParseResult {
  // CRLF and lone CR become LF; columns of every other character are unchanged. readSource dropped a leading
  // byte-order mark from the text that export keys and carets also read, so one left here is a stray character.
  let text = source;
  if (text.indexOf("\r") >= 0) text = text.replace(/\r\n?/g, "\n");
  const diagnostics: Diagnostic[] = [];

  // ---- lexing ----
  const lexed = lexer.tokenize(text);
  for (const e of lexed.errors) {
    if (diagnostics.length >= MAX_ERRORS) break;
    const ch = String.fromCodePoint(text.codePointAt(e.offset) ?? 0xfffd);
    diagnostics.push(
      diagnostic("E001", `unexpected character ${showChar(ch)}`, path, {
        line: e.line ?? 1,
        col: e.column ?? 1,
        endLine: e.line ?? 1,
        endCol: (e.column ?? 1) + 1,
      }),
    );
  }
  // Unterminated literals are lexed as tokens of their own (so lexing goes on); report them and drop them.
  let tokens: IToken[] = lexed.tokens;
  if (tokens.some((t) => UNTERMINATED.has(t.tokenType))) {
    tokens = [];
    for (const tok of lexed.tokens) {
      const t = tok.tokenType;
      if (!UNTERMINATED.has(t)) {
        tokens.push(tok);
        continue;
      }
      if (diagnostics.length >= MAX_ERRORS) continue;
      const span = tokenSpan(tok);
      const width = t === UnterminatedTripleString ? 3 : 1;
      const where = { line: span.line, col: span.col, endLine: span.line, endCol: span.col + width };
      if (t === UnterminatedTemplate) {
        diagnostics.push(diagnostic("E004", "unterminated template literal: missing closing '`'", path, where));
      } else if (t === UnterminatedString) {
        diagnostics.push(diagnostic("E003", "unterminated string: missing closing '\"' on this line", path, where));
      } else {
        diagnostics.push(diagnostic("E003", 'unterminated string: missing closing """', path, where));
      }
    }
  }
  if (diagnostics.length > 0) return { program: null, diagnostics };

  // ---- layout ----
  const laid = layout(tokens, text, path);
  if (laid.diagnostics.length > 0) return { program: null, diagnostics: laid.diagnostics };

  // ---- parsing ----
  const stream = laid.tokens;
  const eof = endOfSource(text);
  const body: Program["body"] = [];
  parser.path = path;
  parser.diags = new CappedDiagnostics();
  parser.pendingLambdas = [];
  parser.lambdaDepth = 0;
  parser.lambdaLimitReported = false;
  let from = 0;
  let syntaxErrors = 0;
  parser.input = stream;
  while (from < stream.length) {
    parser.programFrom(from);
    // On a syntax error the rule aborts; its complete top-level statements are still in `parser.collected`.
    // (a loop, not push(...spread): a spread of a million statements overflows the call stack)
    for (const s of parser.collected) body.push(s);
    parser.collected = [];
    parser.pendingLambdas = [];
    parser.lambdaDepth = 0;
    const err = parser.errors[0];
    if (err === undefined) break;
    syntaxErrors++;
    const at = err.token.tokenType === EOF ? stream.length : stream.indexOf(err.token, from);
    diagnostics.push(syntaxDiagnostic(err, stream, at, path, eof));
    if (syntaxErrors >= MAX_ERRORS) break;
    from = nextTopLevelStatement(stream, from, Math.max(at, from) + 1);
  }
  // Diagnostics found while building the tree (E005, E010, E050, E052, ...): at most MAX_ERRORS of each code.
  for (const d of parser.diags.kept) diagnostics.push(d);
  parser.diags = new CappedDiagnostics();
  parser.input = [];

  if (syntaxErrors > 0 && body.length === 0) return { program: null, diagnostics };
  const program: Program = {
    kind: "Program",
    path,
    body,
    span: { line: 1, col: 1, endLine: eof.endLine, endCol: eof.endCol },
  };
  return { program, diagnostics };
}

/**
 * First index at or after `i` that starts a top-level statement (block level 0, after a NEWLINE or DEDENT).
 * `from` is the start of the statement that failed, where the level is 0.
 */
function nextTopLevelStatement(stream: IToken[], from: number, i: number): number {
  let level = 0;
  for (let k = from; k < i && k < stream.length; k++) {
    const t = stream[k]!.tokenType;
    if (t === Indent) level++;
    else if (t === Dedent) level--;
  }
  for (let k = i; k < stream.length; k++) {
    const prev = stream[k - 1]?.tokenType;
    const t = stream[k]!.tokenType;
    if (level === 0 && (prev === Newline || prev === Dedent) && t !== Dedent && t !== Indent) return k;
    if (t === Indent) level++;
    else if (t === Dedent) level--;
  }
  return stream.length;
}

/** `at`: the index of `err.token` in `stream` */
function syntaxDiagnostic(err: IRecognitionException, stream: IToken[], at: number, path: string, eof: Span): Diagnostic {
  const tok = err.token;
  if (tok.tokenType === EOF) return diagnostic("E001", err.message, path, eof);
  // `for = 3`, `def = 1`: a reserved word where a name is assigned is E010, not a generic syntax error.
  if (tok.tokenType === Equals) {
    const kw = stream[at - 1];
    const before = stream[at - 2]?.tokenType;
    if (
      kw !== undefined &&
      kw.tokenType.CATEGORIES?.includes(Keyword) &&
      (before === undefined || before === Newline || before === Indent || before === Dedent)
    ) {
      return diagnostic("E010", `'${kw.image}' is a reserved word and cannot be assigned`, path, tokenSpan(kw));
    }
  }
  const span = tokenSpan(tok);
  // Synthesized layout tokens are zero-width; show a one-character caret.
  if (span.endLine === span.line && span.endCol <= span.col) span.endCol = span.col + 1;
  return diagnostic("E001", err.message, path, span);
}
