// The layout pass: turns the lexer's token stream (which has no whitespace, newlines or comments) into a
// stream with NEWLINE / INDENT / DEDENT tokens, the way starlark-go's scanner does it.
// - A logical line starts at the first token whose line is past the end of the previous token, unless
//   we are inside ( ) [ ] { } (multi-line strings and templates are single tokens, so they never split a line).
// - Blank and comment-only lines produce no tokens at all, so they never matter.
// - INDENT is only legal after a line ending in ':'; a dedent must land on an enclosing level (E002).
// - End of file closes every open block.
import type { IToken, TokenType } from "chevrotain";
import { createTokenInstance } from "./chevrotain.ts";
import type { Span } from "./ast.ts";
import { diagnostic, type Diagnostic } from "./diagnostics.ts";
import {
  CLOSERS,
  Colon,
  Dedent,
  Indent,
  KW,
  LBrace,
  LBracket,
  LParen,
  Newline,
  OPENERS,
  MULTILINE_TYPES,
  RBrace,
  RBracket,
  RParen,
  tokenEnd,
} from "./tokens.ts";

const PAIRS: ReadonlyMap<TokenType, TokenType> = new Map([
  [LParen, RParen],
  [LBracket, RBracket],
  [LBrace, RBrace],
]);
const BLOCK_KEYWORDS: ReadonlySet<TokenType> = new Set(
  (["if", "elif", "else", "while", "for", "def", "match", "case", "choose", "option", "constrain", "with", "try", "except", "finally"] as const).map(
    (w) => KW[w],
  ),
);

/** Deepest nesting of brackets, and of indented blocks, the front end accepts (keeps recursion bounded). */
export const MAX_NESTING = 100;
/** Indentation errors reported per file (a wholly tab-indented file would otherwise get one per line). */
const MAX_LAYOUT_ERRORS = 50;

interface LayoutResult {
  tokens: IToken[];
  diagnostics: Diagnostic[];
  /** true when a limit was hit and the token stream is incomplete */
  aborted: boolean;
}

function synth(type: TokenType, line: number, col: number, offset: number): IToken {
  return createTokenInstance(type, "", offset, offset, line, line, col, col - 1);
}

/** NEWLINE placed just past the last token of a logical line. */
function newlineAfter(prev: IToken): IToken {
  const end = tokenEnd(prev);
  return synth(Newline, end.line, end.col, prev.startOffset + prev.image.length);
}

function spanAt(line: number, col: number, width = 1): Span {
  return { line, col, endLine: line, endCol: col + width };
}

export function layout(tokens: IToken[], source: string, path: string): LayoutResult {
  const out: IToken[] = [];
  const diagnostics: Diagnostic[] = [];
  const stack = [0];
  let depth = 0;
  /** the open brackets, innermost last */
  const openers: IToken[] = [];
  let prev: IToken | null = null;
  let prevEndLine = 0;
  /** first token of the previous logical line */
  let lineFirst: IToken | null = null;
  for (const tok of tokens) {
    const line = tok.startLine!;
    if (depth === 0 && (prev === null || line > prevEndLine)) {
      if (prev !== null) out.push(newlineAfter(prev));
      const col = tok.startColumn!;
      const lineStart = tok.startOffset - (col - 1);
      let tab = -1;
      for (let k = lineStart; k < tok.startOffset; k++) {
        if (source.charCodeAt(k) === 9) {
          tab = k - lineStart;
          break;
        }
      }
      if (tab >= 0 && diagnostics.length < MAX_LAYOUT_ERRORS) {
        diagnostics.push(
          diagnostic("E002", "tab in indentation; indent with spaces", path, spanAt(line, tab + 1)),
        );
      }
      const indent = col - 1;
      const top = stack[stack.length - 1]!;
      if (indent > top) {
        // After a block header that lacks its ':', open the block anyway: the parser then reports the
        // missing ':' precisely ("expected ':' after the if condition"), which beats "unexpected indentation".
        if (prev !== null && (prev.tokenType === Colon || (lineFirst !== null && BLOCK_KEYWORDS.has(lineFirst.tokenType)))) {
          if (stack.length > MAX_NESTING) {
            diagnostics.push(
              diagnostic("E001", `blocks nested deeper than ${MAX_NESTING} levels are not supported`, path, spanAt(line, col)),
            );
            return { tokens: out, diagnostics, aborted: true };
          }
          stack.push(indent);
          out.push(synth(Indent, line, col, tok.startOffset));
        } else if (tab < 0 && diagnostics.length < MAX_LAYOUT_ERRORS) {
          diagnostics.push(
            diagnostic("E002", "unexpected indentation: only a line ending in ':' opens a block", path, spanAt(line, col)),
          );
        }
      } else if (indent < top) {
        while (indent < stack[stack.length - 1]!) {
          stack.pop();
          out.push(synth(Dedent, line, col, tok.startOffset));
        }
        if (indent !== stack[stack.length - 1]! && tab < 0) {
          if (diagnostics.length < MAX_LAYOUT_ERRORS) diagnostics.push(
            diagnostic(
              "E002",
              `dedent to column ${col} does not match any enclosing block (expected column ${stack[stack.length - 1]! + 1})`,
              path,
              spanAt(line, col),
            ),
          );
          // Adopt the level so that following lines are judged against it, not reported again.
          stack.push(indent);
        }
      }
    }
    const type = tok.tokenType;
    if (depth === 0 && (prev === null || line > prevEndLine)) lineFirst = tok;
    if (OPENERS.has(type)) {
      depth++;
      openers.push(tok);
      if (depth > MAX_NESTING) {
        diagnostics.push(
          diagnostic(
            "E001",
            `brackets nested deeper than ${MAX_NESTING} levels are not supported`,
            path,
            spanAt(line, tok.startColumn!),
          ),
        );
        return { tokens: out, diagnostics, aborted: true };
      }
    } else if (CLOSERS.has(type)) {
      // Bracket mistakes are reported here, precisely, rather than as whatever the parser trips over later.
      const open = openers.pop();
      if (open === undefined) {
        diagnostics.push(diagnostic("E001", `unmatched '${tok.image}'`, path, spanAt(line, tok.startColumn!)));
        return { tokens: out, diagnostics, aborted: true };
      }
      if (PAIRS.get(open.tokenType) !== type) {
        diagnostics.push(
          diagnostic(
            "E001",
            `closing '${tok.image}' does not match '${open.image}' opened at ${open.startLine}:${open.startColumn}`,
            path,
            spanAt(line, tok.startColumn!),
          ),
        );
        return { tokens: out, diagnostics, aborted: true };
      }
      depth--;
    }
    out.push(tok);
    prev = tok;
    prevEndLine = MULTILINE_TYPES.has(type) ? tokenEnd(tok).line : line;
  }
  const unclosed = openers.pop();
  if (unclosed !== undefined) {
    diagnostics.push(
      diagnostic("E001", `'${unclosed.image}' was never closed`, path, spanAt(unclosed.startLine!, unclosed.startColumn!)),
    );
    return { tokens: out, diagnostics, aborted: true };
  }
  if (prev !== null) {
    const nl = newlineAfter(prev);
    out.push(nl);
    for (let i = 1; i < stack.length; i++) out.push(synth(Dedent, nl.startLine!, nl.startColumn!, nl.startOffset));
  }
  return { tokens: out, diagnostics, aborted: false };
}
