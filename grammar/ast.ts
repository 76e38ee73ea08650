// The typed syntax tree produced by grammar/ and consumed by the validator and the interpreter.
// Every node carries a source span; unions are discriminated by `kind`.

/** 1-based line and column of the first character, and of the character just past the end. */
export interface Span {
  line: number;
  col: number;
  endLine: number;
  endCol: number;
}

// ---------- templates ----------

export type TemplatePart =
  | { kind: "text"; value: string }
  /** `{}`: the call's primary input */
  | { kind: "input"; span: Span }
  /** `{name}` or `{a.b.c}` (dialect: member paths) */
  | { kind: "path"; names: string[]; span: Span };

export interface Template {
  kind: "Template";
  parts: TemplatePart[];
  span: Span;
}

// ---------- expressions ----------

export interface KwArg {
  name: string;
  nameSpan: Span;
  value: Expr;
}

export interface UnitLit { kind: "Unit"; span: Span }
export interface BoolLit { kind: "Bool"; value: boolean; span: Span }
export interface NumberLit { kind: "Number"; value: number; span: Span }
export interface StringLit { kind: "String"; value: string; span: Span }
export interface TemplateExpr { kind: "TemplateExpr"; template: Template; span: Span }
export interface NameRef { kind: "Name"; name: string; span: Span }
export interface ItRef { kind: "It"; span: Span }
export interface ListLit { kind: "List"; items: Expr[]; span: Span }
export interface ObjectEntry { key: string; keySpan: Span; value: Expr }
export interface ObjectLit { kind: "Object"; entries: ObjectEntry[]; span: Span }

export type BinaryOp = "+" | "-" | "==" | "!=" | "<" | "<=" | ">" | ">=";
export interface Binary { kind: "Binary"; op: BinaryOp; left: Expr; right: Expr; span: Span }
export interface Logical { kind: "Logical"; op: "and" | "or"; left: Expr; right: Expr; span: Span }
export interface Not { kind: "Not"; operand: Expr; span: Span }

/** Dialect: `a.b` */
export interface Member { kind: "Member"; object: Expr; name: string; nameSpan: Span; span: Span }
/** Dialect: `a[i]` */
export interface Index { kind: "Index"; object: Expr; index: Expr; span: Span }
/** `f(a, b, k=v)`; upstream only calls plain names, the dialect calls any expression. */
export interface Call { kind: "Call"; callee: Expr; args: Expr[]; kwargs: KwArg[]; span: Span }

/** Which agent an `@...` call or a derivation refers to. */
export type AgentRef =
  /** `@name` or `@name.with(k=v)`; `name` is a declared/imported agent or (dialect) a variable holding an agent value. */
  | { kind: "NamedAgent"; name: string; nameSpan: Span; with: KwArg[] | null; span: Span }
  /** `@{model="haiku", prompt="..."}` */
  | { kind: "InlineAgent"; kwargs: KwArg[]; span: Span };

/** `@agent `task`(input?, options...)` */
export interface AgentCall {
  kind: "AgentCall";
  agent: AgentRef;
  template: Template;
  /** Positional arguments as written; the first is the input. `()` means none (use `it`). */
  args: Expr[];
  kwargs: KwArg[];
  span: Span;
}

/** `?`criterion`` or `?`criterion`(value)` */
export interface Predicate { kind: "Predicate"; criterion: Template; input: Expr | null; span: Span }

export type Expr =
  | UnitLit
  | BoolLit
  | NumberLit
  | StringLit
  | TemplateExpr
  | NameRef
  | ItRef
  | ListLit
  | ObjectLit
  | Binary
  | Logical
  | Not
  | Member
  | Index
  | Call
  | AgentCall
  | Predicate;

// ---------- statements ----------

export interface AgentDecl { kind: "AgentDecl"; name: string; nameSpan: Span; kwargs: KwArg[]; span: Span }
/**
 * `input name: "description" = default` (dialect, as upstream's later versions write it): a value the program
 * takes from `vvm run --arg/--input`. Description and default are optional; without a default it is required.
 */
export interface InputDecl {
  kind: "InputDecl";
  name: string;
  nameSpan: Span;
  description: StringLit | null;
  default: Expr | null;
  span: Span;
}
export interface Param { name: string; span: Span }
export interface DefStmt { kind: "Def"; name: string; nameSpan: Span; params: Param[]; body: Stmt[]; span: Span }
/** `import "skill" from "source"` */
export interface SkillImport { kind: "SkillImport"; skill: StringLit; source: StringLit; span: Span }
/** `from "./x.vvm" import name [as alias]` / `import @agent [as alias]` */
export interface FromImport {
  kind: "FromImport";
  path: StringLit;
  name: string;
  nameSpan: Span;
  isAgent: boolean;
  alias: string | null;
  aliasSpan: Span | null;
  span: Span;
}
export type ExportTarget =
  | { kind: "agent"; name: string; nameSpan: Span }
  | { kind: "name"; name: string; nameSpan: Span }
  /** Dialect: `export pack(a=a)`; see spec/semantics.md for the export key. */
  | { kind: "expr"; expr: Expr };
export interface ExportStmt { kind: "Export"; target: ExportTarget; span: Span }

export interface IfBranch { cond: Expr; body: Stmt[]; span: Span }
export interface IfStmt { kind: "If"; branches: IfBranch[]; orelse: Stmt[] | null; span: Span }
export interface WhileStmt { kind: "While"; cond: Expr; body: Stmt[]; span: Span }
export interface ForStmt { kind: "For"; target: string; targetSpan: Span; iter: Expr; body: Stmt[]; span: Span }

export type Pattern =
  | { kind: "Wildcard"; span: Span }
  /** `error(_)` */
  | { kind: "ErrorAny"; span: Span }
  /** `error(kind="timeout")` */
  | { kind: "ErrorKind"; errorKind: string; span: Span }
  /** Dialect: `error(e)` binds the error value to `e`. */
  | { kind: "ErrorBind"; name: string; nameSpan: Span; span: Span }
  /** `?`criterion`` judged with `it` = the subject */
  | { kind: "Semantic"; criterion: Template; span: Span };
export interface MatchCase { pattern: Pattern; body: Stmt[]; span: Span }
export interface MatchStmt { kind: "Match"; subject: Expr; cases: MatchCase[]; span: Span }

export interface ChooseOption { label: string; labelSpan: Span; body: Stmt[]; span: Span }
export interface ChooseStmt {
  kind: "Choose";
  subject: Expr;
  criterion: Template;
  /** the name bound to the chosen label (`as label`) */
  binding: string;
  bindingSpan: Span;
  options: ChooseOption[];
  span: Span;
}

export interface Requirement { criterion: Template; span: Span }
export interface ConstrainStmt {
  kind: "Constrain";
  target: string;
  targetSpan: Span;
  kwargs: KwArg[];
  requires: Requirement[];
  span: Span;
}

export interface WithInputStmt { kind: "WithInput"; expr: Expr; body: Stmt[]; span: Span }
export interface ExceptClause { name: string; nameSpan: Span; body: Stmt[]; span: Span }
export interface TryStmt { kind: "Try"; body: Stmt[]; handler: ExceptClause | null; finalBody: Stmt[] | null; span: Span }
/** `raise "msg"`, bare `raise`; the dialect allows any expression. */
export interface RaiseStmt { kind: "Raise"; value: Expr | null; span: Span }
export interface ReturnStmt { kind: "Return"; value: Expr | null; span: Span }
export interface PassStmt { kind: "Pass"; span: Span }
export interface BreakStmt { kind: "Break"; span: Span }
export interface ContinueStmt { kind: "Continue"; span: Span }
/** `name = expr`; `it = ...` is parsed too (target "it") so the validator can report E060 with a position. */
export interface AssignStmt { kind: "Assign"; target: string; targetSpan: Span; value: Expr; span: Span }
export interface ExprStmt { kind: "ExprStmt"; expr: Expr; span: Span }

export type Stmt =
  | AgentDecl
  | InputDecl
  | DefStmt
  | SkillImport
  | FromImport
  | ExportStmt
  | IfStmt
  | WhileStmt
  | ForStmt
  | MatchStmt
  | ChooseStmt
  | ConstrainStmt
  | WithInputStmt
  | TryStmt
  | RaiseStmt
  | ReturnStmt
  | PassStmt
  | BreakStmt
  | ContinueStmt
  | AssignStmt
  | ExprStmt;

export interface Program {
  kind: "Program";
  /** absolute path of the source file (or a pseudo path such as `<stdin>`) */
  path: string;
  body: Stmt[];
  span: Span;
}
