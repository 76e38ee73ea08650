// Readable E001 messages ("expected ':' after the if condition, found NEWLINE") and the E010 wording.
import type { IParserErrorMessageProvider, IToken, TokenType } from "chevrotain";
import { EOF } from "./chevrotain.ts";
import {
  At,
  Colon,
  Comma,
  KW,
  Dedent,
  Identifier,
  Indent,
  Keyword,
  Newline,
  NumberTok,
  RBrace,
  RBracket,
  RParen,
  StringTok,
  Template,
  TripleString,
} from "./tokens.ts";

/** What a ':' follows, per rule. */
const HEADER: Record<string, string> = {
  ifStmt: "the if condition",
  elifClause: "the elif condition",
  elseClause: "'else'",
  whileStmt: "the while condition",
  forStmt: "the for loop header",
  defStmt: "the parameter list",
  matchStmt: "the match subject",
  caseClause: "the case pattern",
  chooseStmt: "the choose header",
  optionClause: "the option label",
  constrainStmt: "the constrain header",
  withInputStmt: "the with input expression",
  tryStmt: "'try'",
  exceptClause: "'except as name'",
  objectEntry: "the object key",
};

/** What a rule is, for "expected ... in <rule>" and no-viable-alternative messages. */
const RULE: Record<string, string> = {
  stmt: "a statement",
  bindName: "a name",
  agentDecl: "an agent declaration",
  defStmt: "a function definition",
  skillImport: "a skill import",
  fromImport: "a module import",
  exportStmt: "an export",
  matchStmt: "a match statement",
  caseClause: "a case pattern",
  pattern: "a case pattern",
  chooseStmt: "a choose statement",
  optionClause: "an option",
  constrainStmt: "a constrain statement",
  kwargList: "keyword arguments",
  kwarg: "a keyword argument (name=value)",
  argList: "the arguments",
  arg: "an argument",
  postfixExpr: "an expression",
  expr: "an expression",
  objectEntry: "an object entry (key: value)",
  agentCall: "an agent call",
  predicate: "a predicate",
  exprStmt: "a statement",
  simpleKeywordStmt: "a statement",
};

const CLOSE: Map<TokenType, string> = new Map([
  [RParen, "to close '('"],
  [RBracket, "to close '['"],
  [RBrace, "to close '{'"],
]);

function describeType(t: TokenType): string {
  if (t === EOF) return "end of file";
  return t.LABEL ?? t.name;
}

function describeToken(tok: IToken): string {
  const t = tok.tokenType;
  if (t === EOF) return "end of file";
  if (t === Newline) return "NEWLINE";
  if (t === Indent) return "an indented block";
  if (t === Dedent) return "the end of the block";
  const image = tok.image.length > 30 ? tok.image.slice(0, 30) + "…" : tok.image;
  if (t === Identifier) return `name '${image}'`;
  if (t === NumberTok) return `number ${image}`;
  if (t === StringTok || t === TripleString) return `string ${image}`;
  if (t === Template) return `template ${image}`;
  if (t.CATEGORIES?.includes(Keyword)) return `'${image}'`;
  return `'${image}'`;
}

function mismatchContext(expected: TokenType, ruleName: string, previous: IToken): string {
  if (expected === Colon && HEADER[ruleName]) return ` after ${HEADER[ruleName]}`;
  if (expected === Indent) return " after ':'";
  if (expected === Newline && previous.tokenType === Colon) return " after ':' (the block starts on the next line, indented)";
  if (expected === Newline) return " at the end of the statement";
  const close = CLOSE.get(expected);
  if (close) return ` ${close}`;
  const rule = RULE[ruleName];
  return rule ? ` in ${rule}` : "";
}

function firstTokens(paths: TokenType[][][]): string {
  const seen = new Set<string>();
  for (const alt of paths) for (const path of alt) if (path[0]) seen.add(describeType(path[0]));
  const list = [...seen];
  if (list.length === 0) return "something else";
  if (list.length > 6) return list.slice(0, 6).join(", ") + ", …";
  return list.length === 1 ? list[0]! : `${list.slice(0, -1).join(", ")} or ${list[list.length - 1]}`;
}

export const errorMessageProvider: IParserErrorMessageProvider = {
  buildMismatchTokenMessage({ expected, actual, previous, ruleName }) {
    // Inside a list of items, a missing comma is the likelier mistake than a missing closer.
    const what =
      CLOSE.has(expected) && actual.tokenType !== Comma && actual.tokenType !== Newline
        ? `',' or ${describeType(expected)}`
        : describeType(expected);
    const message = `expected ${what}${mismatchContext(expected, ruleName, previous)}, found ${describeToken(actual)}`;
    // Upstream's EBNF counts a comment as a statement, so a block of only a comment looks complete to its writer.
    if (expected === Indent) return `${message} (a block needs a statement: write pass for an empty one; a comment is not a statement)`;
    // `import @helper from "./x.vvm"` reads naturally but is not the form: say which one is
    if (ruleName === "skillImport" && actual.tokenType === At) return `${message} (to import an agent, write from "./file.vvm" import @name)`;
    // Python's `except ValueError as e:` and bare `except:`: VVM has no error classes; match on kind inside
    if (ruleName === "exceptClause" && expected === KW.as) return `${message} (except catches every raise: write except as name:)`;
    // `lambda: 1` reads `lambda` as a name (it starts a lambda only before a parameter), so the ':' is what fails
    if (actual.tokenType === Colon && previous.image === "lambda") return `${message} (a lambda takes at least one parameter: lambda x: …)`;
    return message;
  },
  buildNotAllInputParsedMessage({ firstRedundant }) {
    const t = firstRedundant.tokenType;
    if (t === KW.else || t === KW.elif) return `expected a statement, found ${describeToken(firstRedundant)} (it must follow an if block)`;
    if (t === KW.except || t === KW.finally) return `expected a statement, found ${describeToken(firstRedundant)} (it must follow a try block)`;
    return `expected a statement, found ${describeToken(firstRedundant)}`;
  },
  buildNoViableAltMessage({ expectedPathsPerAlt, actual, ruleName }) {
    const what = RULE[ruleName];
    const found = describeToken(actual[0]!);
    if (what) return `expected ${what}, found ${found}`;
    return `expected ${firstTokens(expectedPathsPerAlt)}, found ${found}`;
  },
  buildEarlyExitMessage({ expectedIterationPaths, actual, ruleName }) {
    const found = describeToken(actual[0]!);
    if (ruleName === "block") return `expected a statement in the block, found ${found}`;
    return `expected ${firstTokens([expectedIterationPaths])}, found ${found}`;
  },
};

/** Position of an E010 that reads "cannot be assigned" rather than "cannot be used as …". */
export const ASSIGNED = "assigned";

/** E010: `'input' is a reserved word and cannot be used as a parameter name`. */
export function reservedWordMessage(word: string, position: string): string {
  const what = position === ASSIGNED ? "be assigned" : `be used as ${position}`;
  return `'${word}' is a reserved word and cannot ${what}`;
}

/** Where an E010's word stands: a name of a value, the agent after `@`, or a key (`f(k=…)`, `agent a(k=…)`). */
export type ReservedSlot = "name" | "agent" | "key";

/**
 * The way out of an E010, where it is obvious. `@agent` (a placeholder in many snippets): declare an agent and
 * call it by its name. `input` as a name: any other name does, and `it` already is the implicit input.
 */
export function reservedWordHint(word: string, slot: ReservedSlot): string | undefined {
  if (slot === "agent") return 'declare an agent and call it by its name: agent worker(model="sonnet", prompt="…"), then @worker';
  if (slot === "name" && word === "input") return "use another name, such as data or item; `it` is the implicit input";
  return undefined;
}
