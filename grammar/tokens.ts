// Token vocabulary and the Chevrotain lexer. Layout tokens (NEWLINE/INDENT/DEDENT) have no pattern:
// grammar/layout.ts synthesizes them from line structure after lexing.
import type { IToken, TokenType } from "chevrotain";
import { createToken, Lexer } from "./chevrotain.ts";

// ---------- categories ----------

/** Any reserved word (lets the parser accept one where a name is expected and report E010 instead of E001). */
export const Keyword = createToken({ name: "Keyword", pattern: Lexer.NA });
/**
 * A reserved word that is neither an operand nor an operator (every one but `it`, `true`, `false`, `not`, `and`,
 * `or`): read as a misused name where an expression's operand belongs, so `f(input)` is E010, not E001.
 */
export const ReservedName = createToken({ name: "ReservedName", pattern: Lexer.NA, label: "a name" });
/** An identifier or a reserved word: member names (`x.error`, `a.with`) and object keys. */
export const NameLike = createToken({ name: "NameLike", pattern: Lexer.NA, label: "a name" });
/** Every infix operator: `or`, `and`, comparisons, `+`, `-` (the parser climbs precedence itself). */
export const BinaryOp = createToken({ name: "BinaryOp", pattern: Lexer.NA, label: "an operator" });
export const CompareOp = createToken({ name: "CompareOp", pattern: Lexer.NA, label: "a comparison operator", categories: [BinaryOp] });

export const Identifier = createToken({
  name: "Identifier",
  pattern: /[A-Za-z_][A-Za-z0-9_]*/,
  label: "a name",
  categories: [NameLike],
});

const KEYWORD_LIST = [
  "import", "from", "as", "export", "agent", "def", "return", "match", "case", "choose", "by", "option",
  "constrain", "require", "with", "input", "if", "elif", "else", "while", "for", "in", "try", "except",
  "finally", "raise", "pass", "break", "continue", "and", "or", "not", "it", "true", "false", "error",
] as const;
type KeywordText = (typeof KEYWORD_LIST)[number];
export const RESERVED_WORDS: ReadonlySet<string> = new Set(KEYWORD_LIST);

/** Reserved words that are operands or operators in their own right, so never a misused name in an expression. */
const OPERAND_WORDS: ReadonlySet<KeywordText> = new Set(["it", "true", "false", "not", "and", "or"]);

function keyword(word: KeywordText): TokenType {
  const categories = [Keyword, NameLike];
  if (word === "and" || word === "or") categories.push(BinaryOp);
  if (!OPERAND_WORDS.has(word)) categories.push(ReservedName);
  return createToken({ name: `Kw_${word}`, pattern: new RegExp(word), longer_alt: Identifier, label: `'${word}'`, categories });
}

export const KW = Object.fromEntries(KEYWORD_LIST.map((w) => [w, keyword(w)])) as Record<KeywordText, TokenType>;

// ---------- literals ----------

// Closed literals are matched by scanners, not one regular expression: an alternation under `*` keeps a
// backtracking entry per character, and a literal of a few megabytes overflowed V8's regexp stack.
const BACKSLASH = 0x5c;
const NL = 0x0a;

/**
 * A literal from `quote` to the next unescaped `quote`; a backslash pairs with the character after it. Runs of
 * plain characters are skipped by `plain`, a sticky expression without alternation that stops at the quote's
 * character, a backslash, and (single-line) a line break, which, even escaped, leaves the literal unclosed.
 * Unclosed: no match, and the unterminated token takes it (E003/E004).
 */
function closedLiteral(quote: string, plain: RegExp, multiline: boolean): (text: string, offset: number) => [string] | null {
  const q = quote.charCodeAt(0);
  return (text, offset) => {
    if (!text.startsWith(quote, offset)) return null;
    let i = offset + quote.length;
    for (;;) {
      plain.lastIndex = i;
      plain.test(text);
      i = plain.lastIndex;
      const c = text.charCodeAt(i);
      if (c === q) {
        if (text.startsWith(quote, i)) return [text.slice(offset, i + quote.length)];
        i++; // one `"` inside a triple-quoted string
      } else if (c === BACKSLASH && i + 1 < text.length && (multiline || text.charCodeAt(i + 1) !== NL)) i += 2;
      else return null;
    }
  };
}

export const TripleString = createToken({
  name: "TripleString",
  pattern: { exec: closedLiteral('"""', /[^"\\]*/y, true) },
  line_breaks: true,
  start_chars_hint: ['"'],
  label: "a string",
});
/** `"""` never closed: reported as E003, runs to the end of the file. */
export const UnterminatedTripleString = createToken({
  name: "UnterminatedTripleString",
  pattern: /"""[\s\S]*/,
  line_breaks: true,
  start_chars_hint: ['"'],
});
export const StringTok = createToken({
  name: "String",
  pattern: { exec: closedLiteral('"', /[^"\\\n]*/y, false) },
  line_breaks: false,
  start_chars_hint: ['"'],
  label: "a string",
});
/** `"` not closed on its line: reported as E003. */
export const UnterminatedString = createToken({ name: "UnterminatedString", pattern: /"[^\n]*/ });
/** Backtick template; a backslash pairs with the next character so that `\`` never closes it. */
export const Template = createToken({
  name: "Template",
  pattern: { exec: closedLiteral("`", /[^`\\]*/y, true) },
  line_breaks: true,
  start_chars_hint: ["`"],
  label: "a template",
});
export const UnterminatedTemplate = createToken({
  name: "UnterminatedTemplate",
  pattern: /`[\s\S]*/,
  line_breaks: true,
  start_chars_hint: ["`"],
});
export const NumberTok = createToken({ name: "Number", pattern: /\d+(?:\.\d+)?/, label: "a number" });

// ---------- punctuation ----------

function punct(name: string, text: string, categories: TokenType[] = []): TokenType {
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return createToken({ name, pattern: new RegExp(escaped), label: `'${text}'`, categories });
}

export const EqEq = punct("EqEq", "==", [CompareOp]);
export const NotEq = punct("NotEq", "!=", [CompareOp]);
export const LtEq = punct("LtEq", "<=", [CompareOp]);
export const GtEq = punct("GtEq", ">=", [CompareOp]);
export const Lt = punct("Lt", "<", [CompareOp]);
export const Gt = punct("Gt", ">", [CompareOp]);
export const Equals = punct("Equals", "=");
export const Plus = punct("Plus", "+", [BinaryOp]);
export const Minus = punct("Minus", "-", [BinaryOp]);
export const At = punct("At", "@");
export const Question = punct("Question", "?");
export const Dot = punct("Dot", ".");
export const Comma = punct("Comma", ",");
export const Colon = punct("Colon", ":");
export const LParen = punct("LParen", "(");
export const RParen = punct("RParen", ")");
export const LBracket = punct("LBracket", "[");
export const RBracket = punct("RBracket", "]");
export const LBrace = punct("LBrace", "{");
export const RBrace = punct("RBrace", "}");

// ---------- skipped ----------

const Spaces = createToken({ name: "Spaces", pattern: /[ \t\f]+/, group: Lexer.SKIPPED });
const LineBreak = createToken({ name: "LineBreak", pattern: /\n/, line_breaks: true, group: Lexer.SKIPPED });
const Comment = createToken({ name: "Comment", pattern: /#[^\n]*/, group: Lexer.SKIPPED });

// ---------- layout (synthesized) ----------

export const Newline = createToken({ name: "NEWLINE", pattern: Lexer.NA, label: "NEWLINE" });
export const Indent = createToken({ name: "INDENT", pattern: Lexer.NA, label: "an indented block" });
export const Dedent = createToken({ name: "DEDENT", pattern: Lexer.NA, label: "the end of the block" });

/** Order matters: Chevrotain takes the first pattern that matches, so longer forms come first. */
const lexedTokens: TokenType[] = [
  Spaces,
  LineBreak,
  Comment,
  TripleString,
  UnterminatedTripleString,
  StringTok,
  UnterminatedString,
  Template,
  UnterminatedTemplate,
  NumberTok,
  // Longest first, so that `in` never shadows `input` (longer_alt only rescues identifiers).
  ...Object.values(KW).sort((a, b) => String(b.PATTERN).length - String(a.PATTERN).length),
  Identifier,
  EqEq,
  NotEq,
  LtEq,
  GtEq,
  Lt,
  Gt,
  Equals,
  Plus,
  Minus,
  At,
  Question,
  Dot,
  Comma,
  Colon,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
];

/** Every token type the parser knows, categories included. */
export const allTokens: TokenType[] = [
  Keyword,
  ReservedName,
  NameLike,
  BinaryOp,
  CompareOp,
  Newline,
  Indent,
  Dedent,
  ...lexedTokens,
];

export const lexer = new Lexer(lexedTokens, {
  // End positions are derived on demand (tokenEnd): fewer fields per token means less GC on big files.
  positionTracking: "onlyStart",
  ensureOptimizations: true,
  // Line terminators are normalised to "\n" before lexing (grammar/index.ts).
  lineTerminatorsPattern: /\n/g,
  lineTerminatorCharacters: ["\n"],
});

/** Token types whose text may span lines. */
export const MULTILINE_TYPES: ReadonlySet<TokenType> = new Set([TripleString, UnterminatedTripleString, Template, UnterminatedTemplate]);

/** Line and column just past the end of a token (1-based, exclusive). */
export function tokenEnd(t: IToken): { line: number; col: number } {
  const image = t.image;
  if (MULTILINE_TYPES.has(t.tokenType)) {
    const last = image.lastIndexOf("\n");
    if (last >= 0) {
      let lines = 0;
      for (let i = image.indexOf("\n"); i >= 0; i = image.indexOf("\n", i + 1)) lines++;
      return { line: t.startLine! + lines, col: image.length - last };
    }
  }
  return { line: t.startLine!, col: t.startColumn! + image.length };
}

export const OPENERS: ReadonlySet<TokenType> = new Set([LParen, LBracket, LBrace]);
export const CLOSERS: ReadonlySet<TokenType> = new Set([RParen, RBracket, RBrace]);
