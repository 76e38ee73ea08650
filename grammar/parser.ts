// The Chevrotain parser (embedded actions: the rules build the typed AST directly; see spec/grammar.md).
// One instance is built at module load and reused: `parser.input = tokens`, then invoke a rule.
import type { IOrAlt, IToken, TokenType } from "chevrotain";
import { EmbeddedActionsParser } from "./chevrotain.ts";
import type {
  AgentCall,
  BinaryOp,
  AgentRef,
  ChooseOption,
  ExceptClause,
  Expr,
  ExportTarget,
  IfBranch,
  InputDecl,
  KwArg,
  MatchCase,
  Param,
  Pattern,
  Predicate,
  Requirement,
  Span,
  Stmt,
  StringLit,
  Template,
} from "./ast.ts";
import { CappedDiagnostics, diagnostic, type Diagnostic } from "./diagnostics.ts";
import { ASSIGNED, errorMessageProvider, reservedWordHint, reservedWordMessage, type ReservedSlot } from "./messages.ts";
import { decodeString, parseTemplate } from "./literals.ts";
import {
  allTokens,
  CLOSERS,
  BinaryOp as BinaryOpTok,
  At,
  Colon,
  Comma,
  CompareOp,
  Dedent,
  Dot,
  Equals,
  Identifier,
  Indent,
  Keyword,
  KW,
  LBrace,
  LBracket,
  LParen,
  NameLike,
  Newline,
  NumberTok,
  Question,
  RBrace,
  RBracket,
  ReservedName,
  RParen,
  StringTok,
  Template as TemplateTok,
  MULTILINE_TYPES,
  tokenEnd,
  TripleString,
} from "./tokens.ts";

export function tokenSpan(t: IToken): Span {
  const line = t.startLine!;
  const col = t.startColumn!;
  if (!MULTILINE_TYPES.has(t.tokenType)) return { line, col, endLine: line, endCol: col + t.image.length };
  const end = tokenEnd(t);
  return { line, col, endLine: end.line, endCol: end.col };
}

function join(a: Span, b: Span): Span {
  return { line: a.line, col: a.col, endLine: b.endLine, endCol: b.endCol };
}

interface Block {
  body: Stmt[];
  span: Span;
}

interface Args {
  args: Expr[];
  kwargs: KwArg[];
}

type ArgItem = { kind: "pos"; expr: Expr } | { kind: "kw"; kw: KwArg };

/**
 * Rule bodies also run once while the parser is constructed (Chevrotain's recording phase), with placeholder
 * tokens and sub-results; no node is built then. `this.RECORDING_PHASE ? RECORDING : node` is Chevrotain's
 * `ACTION(() => node)` written inline, which saves a closure per node on big files.
 */
const RECORDING = undefined as never;

/** Deepest AST (in nodes) handed to later passes, which may recurse once per level. */
const MAX_AST_DEPTH = 1000;
const MAX_LAMBDA_NESTING = 100;

/** Whether the tree under `root` is more than `limit` nodes deep (iterative: safe on any depth). */
function depthExceeds(root: object, limit: number): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [0];
  while (values.length > 0) {
    const v = values.pop();
    const d = depths.pop()!;
    if (Array.isArray(v)) {
      for (const x of v) {
        if (x !== null && typeof x === "object") {
          values.push(x);
          depths.push(d);
        }
      }
      continue;
    }
    const o = v as Record<string, unknown>;
    const nd = typeof o.kind === "string" ? d + 1 : d;
    if (nd > limit) return true;
    for (const key in o) {
      if (key === "span" || key.endsWith("Span")) continue;
      const x = o[key];
      if (x !== null && typeof x === "object") {
        values.push(x);
        depths.push(nd);
      }
    }
  }
  return false;
}

/** What the keys of a keyword list are, for E010 (`agent a(input="x")`, `f(in=1)`). */
const CONFIG_KEY = "an agent configuration key";
const KEYWORD_NAME = "a keyword argument name";

const NOT_PRECEDENCE = 3;
const COMPARE_PRECEDENCE = 4;

function precedence(op: IToken): number {
  const t = op.tokenType;
  if (t === KW.or) return 1;
  if (t === KW.and) return 2;
  return t.CATEGORIES!.includes(CompareOp) ? COMPARE_PRECEDENCE : 5;
}

/** Reserved words that only continue a statement (`else:`, `case _:`, `except as e:`, `option "a":`, `require ?…`). */
const CLAUSE_WORDS: ReadonlySet<TokenType> = new Set([KW.elif, KW.else, KW.except, KW.finally, KW.case, KW.option, KW.require]);
/** Reserved words that start no statement and no clause. */
const INNER_WORDS: ReadonlySet<TokenType> = new Set([KW.as, KW.by, KW.in, KW.input, KW.error]);
/** Tokens that may follow a name at the start of a statement: `x = …`, `x.y`, `x(…)`, `x[…]`, `x`, `x + …`. */
const NAME_FOLLOWERS: ReadonlySet<TokenType> = new Set([
  Equals,
  Dot,
  LParen,
  LBracket,
  Newline,
  ...allTokens.filter((t) => t.CATEGORIES?.includes(BinaryOpTok)),
]);

function lastSpan(body: Stmt[], fallback: Span): Span {
  return body.length > 0 ? body[body.length - 1]!.span : fallback;
}

export class VvmParser extends EmbeddedActionsParser {
  /** diagnostics found while building the AST (E005, E010, E050, E052, semantic E001s) */
  diags = new CappedDiagnostics();
  path = "";

  /** `validate`: run Chevrotain's grammar checks (ambiguities, left recursion) — the tests do; the CLI skips them. */
  constructor(validate = false) {
    super(allTokens, { maxLookahead: 1, errorMessageProvider, recoveryEnabled: false, skipValidations: !validate });
    this.performSelfAnalysis();
  }

  private report(code: "E001" | "E010" | "E050", message: string, span: Span): void {
    if (this.diags.wants(code)) this.diags.push(diagnostic(code, message, this.path, span));
  }

  /** Reserved words read as operands, each with its E010 (re-worded by the rule that knows the position). */
  private reservedOperands = new WeakMap<Expr, Diagnostic>();

  /** E010 for a reserved word standing where a name belongs (`position` for the message, `slot` for the hint). */
  private reserved(tok: IToken, position: string, slot: ReservedSlot = "name"): Diagnostic {
    const word = tok.image;
    const d = diagnostic("E010", reservedWordMessage(word, position), this.path, tokenSpan(tok), reservedWordHint(word, slot));
    this.diags.push(d);
    return d;
  }

  /** Whether `e` is a reserved word read as an operand; if so, its E010 names `position` instead of "a name". */
  private reservedOperand(e: Expr, position: string): boolean {
    const d = this.reservedOperands.get(e);
    if (d === undefined || e.kind !== "Name") return false;
    d.message = reservedWordMessage(e.name, position);
    return true;
  }

  /** Whether a member, index or call chain starts at a reserved word (its E010 is the one report). */
  private startsReserved(e: Expr): boolean {
    for (;;) {
      if (e.kind === "Member" || e.kind === "Index") e = e.object;
      else if (e.kind === "Call") e = e.callee;
      else return this.reservedOperands.has(e);
    }
  }

  /**
   * At the start of a statement, whether one begins here. A reserved word that starts no statement is read as a
   * misused name (E010) only when a name's continuation follows (`input = 1`, `input.x`, `error(…)`; a clause word
   * only before `=`), so `else:`, `case _:` or `as x` stop the statement list and get the usual E001.
   */
  private statementAhead(): boolean {
    const t = this.LA(1).tokenType;
    if (CLAUSE_WORDS.has(t)) return this.LA(2).tokenType === Equals;
    if (t === KW.input && this.inputDeclAhead()) return true;
    return !INNER_WORDS.has(t) || NAME_FOLLOWERS.has(this.LA(2).tokenType);
  }

  /**
   * At `input`: an input declaration follows (`input topic: "…"`, `input n = 3`, `input x`), rather than the
   * reserved word misused as a name (`input = 1`, `input.x`). A reserved word as the declared name is read as
   * one when `:`, `=` or the end of the line follows it, for E010.
   */
  private inputDeclAhead(): boolean {
    const next = this.LA(2).tokenType;
    if (next === Identifier) return true;
    if (!next.CATEGORIES?.includes(Keyword)) return false;
    const after = this.LA(3).tokenType;
    return after === Colon || after === Equals || after === Newline;
  }

  private template(tok: IToken): Template {
    return parseTemplate(tok.image, { line: tok.startLine!, col: tok.startColumn! }, this.path, this.diags);
  }

  private stringLit(tok: IToken): StringLit {
    const value = decodeString(tok.image, { line: tok.startLine!, col: tok.startColumn! }, this.path, this.diags);
    return { kind: "String", value, span: tokenSpan(tok) };
  }

  // ---------- names ----------

  /**
   * A name in a position that takes only a name (a bound name, a parameter, an agent after `@`, a keyword
   * argument's name); a reserved word here is E010 naming the position rather than a syntax error.
   */
  bindName = this.RULE("bindName", (what: string, slot: ReservedSlot = "name"): { name: string; span: Span } => {
    const tok = this.OR([
      { ALT: () => this.CONSUME(Identifier) },
      { ALT: () => this.CONSUME(Keyword) },
    ]);
    return this.ACTION(() => {
      if (tok.tokenType !== Identifier) this.reserved(tok, what, slot);
      return { name: tok.image, span: tokenSpan(tok) };
    });
  });

  /** complete top-level statements, kept even when a later one fails (see grammar/index.ts) */
  collected: Stmt[] = [];
  /**
   * `lambda` expressions become synthetic nested `def`s placed just before the statement that holds them
   * (spec/dialect.md); they wait here until that statement is complete.
   */
  pendingLambdas: Stmt[] = [];

  /** Push `s`, preceded by the lambda definitions created while parsing it. */
  private pushStmt(body: Stmt[], mark: number, s: Stmt): void {
    if (this.pendingLambdas.length > mark) for (const d of this.pendingLambdas.splice(mark)) body.push(d);
    body.push(s);
  }

  // ---------- statements ----------

  /** nesting of `lambda` inside `lambda` (the one recursion that brackets and blocks do not bound) */
  lambdaDepth = 0;

  /**
   * `program` from token `index` of the input, resuming after a syntax error. The input stays the same array:
   * setting it to the rest (a slice) copied the remaining tokens at every resume, and Chevrotain's end padding
   * copied them once more.
   */
  programFrom(index: number): void {
    this.reset();
    // Chevrotain's lexer position is the index of the last consumed token; its typings leave the setter out.
    (this as unknown as { importLexerState(at: number): void }).importLexerState(index - 1);
    this.program();
  }

  program = this.RULE("program", (): void => {
    this.MANY({ GATE: () => this.statementAhead(), DEF: () => {
      const mark = this.RECORDING_PHASE ? RECORDING : this.pendingLambdas.length;
      const start = this.RECORDING_PHASE ? RECORDING : this.LA(1).startOffset;
      const s = this.SUBRULE(this.stmt);
      this.ACTION(() => {
        // A tree can be no deeper than its statement has tokens, and tokens are at least a character each:
        // only long statements need the (iterative) depth check that protects later recursive passes.
        const end = this.LA(1).startOffset;
        // (the lambdas created in the statement are checked with it: their bodies live in those defs)
        if (!(end - start < MAX_AST_DEPTH) && depthExceeds([s, ...this.pendingLambdas.slice(mark)], MAX_AST_DEPTH)) {
          this.report("E001", `statement nested deeper than ${MAX_AST_DEPTH} levels is not supported (a chain of ${MAX_AST_DEPTH} operators, calls or member accesses counts as that deep: split it up)`, s.span);
          this.pendingLambdas.length = mark;
          return;
        }
        this.pushStmt(this.collected, mark, s);
      });
    } });
  });

  // Alternatives of the hottest ORs, built once rather than as a fresh array of closures per call.
  private stmtAlts?: IOrAlt<Stmt>[];
  private primaryAlts?: IOrAlt<Expr>[];

  stmt = this.RULE("stmt", (): Stmt =>
    this.OR((this.stmtAlts ??= [
      { ALT: () => this.SUBRULE(this.agentDecl) },
      { GATE: () => this.inputDeclAhead(), ALT: () => this.SUBRULE(this.inputDecl), IGNORE_AMBIGUITIES: true },
      { ALT: () => this.SUBRULE(this.defStmt) },
      { ALT: () => this.SUBRULE(this.skillImport) },
      { ALT: () => this.SUBRULE(this.fromImport) },
      { ALT: () => this.SUBRULE(this.exportStmt) },
      { ALT: () => this.SUBRULE(this.ifStmt) },
      { ALT: () => this.SUBRULE(this.whileStmt) },
      { ALT: () => this.SUBRULE(this.forStmt) },
      { ALT: () => this.SUBRULE(this.matchStmt) },
      { ALT: () => this.SUBRULE(this.chooseStmt) },
      { ALT: () => this.SUBRULE(this.constrainStmt) },
      { ALT: () => this.SUBRULE(this.withInputStmt) },
      { ALT: () => this.SUBRULE(this.tryStmt) },
      { ALT: () => this.SUBRULE(this.raiseStmt) },
      { ALT: () => this.SUBRULE(this.returnStmt) },
      { ALT: () => this.SUBRULE(this.simpleKeywordStmt) },
      // Last, so `if`, `agent`, … start their own statements; it takes the other reserved words (`input = 1`, E010).
      { ALT: () => this.SUBRULE(this.exprStmt), IGNORE_AMBIGUITIES: true },
    ])),
  );

  /** NEWLINE INDENT stmt+ DEDENT (the ':' is consumed by each statement, so messages can name the header). */
  block = this.RULE("block", (): Block => {
    const body: Stmt[] = [];
    const nl = this.CONSUME(Newline);
    this.CONSUME(Indent);
    this.AT_LEAST_ONE({ GATE: () => this.statementAhead(), DEF: () => {
      const mark = this.RECORDING_PHASE ? RECORDING : this.pendingLambdas.length;
      const s = this.SUBRULE(this.stmt);
      if (!this.RECORDING_PHASE) this.pushStmt(body, mark, s);
    } });
    this.CONSUME(Dedent);
    return this.RECORDING_PHASE ? RECORDING : ({ body, span: lastSpan(body, tokenSpan(nl)) });
  });

  agentDecl = this.RULE("agentDecl", (): Stmt => {
    const kw = this.CONSUME(KW.agent);
    const name = this.SUBRULE(this.bindName, { ARGS: ["an agent name"] });
    this.CONSUME(LParen);
    const kwargs = this.SUBRULE(this.kwargList, { ARGS: [CONFIG_KEY] });
    const close = this.CONSUME(RParen);
    this.CONSUME(Newline);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "AgentDecl",
      name: name.name,
      nameSpan: name.span,
      kwargs,
      span: join(tokenSpan(kw), tokenSpan(close)),
    });
  });

  /** `input name: "description" = default` (dialect); the description and the default are optional. */
  inputDecl = this.RULE("inputDecl", (): Stmt => {
    const kw = this.CONSUME(KW.input);
    const name = this.SUBRULE(this.bindName, { ARGS: ["an input name"] });
    const description = this.OR([
      {
        ALT: () => {
          this.CONSUME(Colon);
          return this.CONSUME(StringTok);
        },
      },
      {
        // `input topic "The topic"`: read the description, say what is missing
        ALT: () => {
          const t = this.CONSUME2(StringTok);
          this.ACTION(() => this.report("E001", "expected ':' between the input's name and its description", tokenSpan(t)));
          return t;
        },
      },
      { ALT: () => undefined },
    ]);
    const value = this.OPTION2(() => {
      this.CONSUME(Equals);
      return this.SUBRULE(this.expr);
    });
    this.CONSUME(Newline);
    return this.ACTION((): InputDecl => {
      const desc = description === undefined ? null : this.stringLit(description);
      const end = value?.span ?? desc?.span ?? name.span;
      return { kind: "InputDecl", name: name.name, nameSpan: name.span, description: desc, default: value ?? null, span: join(tokenSpan(kw), end) };
    });
  });

  defStmt = this.RULE("defStmt", (): Stmt => {
    const kw = this.CONSUME(KW.def);
    const name = this.SUBRULE(this.bindName, { ARGS: ["a function name"] });
    this.CONSUME(LParen);
    const params: Param[] = [];
    this.OPTION(() => {
      const first = this.SUBRULE2(this.bindName, { ARGS: ["a parameter name"] });
      if (!this.RECORDING_PHASE) params.push({ name: first.name, span: first.span });
      this.MANY({
        GATE: () => this.LA(2).tokenType !== RParen,
        DEF: () => {
          this.CONSUME(Comma);
          const p = this.SUBRULE3(this.bindName, { ARGS: ["a parameter name"] });
          if (!this.RECORDING_PHASE) params.push({ name: p.name, span: p.span });
        },
      });
      this.OPTION2(() => this.CONSUME2(Comma));
    });
    this.CONSUME(RParen);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Def",
      name: name.name,
      nameSpan: name.span,
      params,
      body: block.body,
      span: join(tokenSpan(kw), block.span),
    });
  });

  skillImport = this.RULE("skillImport", (): Stmt => {
    const kw = this.CONSUME(KW.import);
    const skill = this.CONSUME(StringTok);
    this.CONSUME(KW.from);
    const source = this.CONSUME2(StringTok);
    this.CONSUME(Newline);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "SkillImport",
      skill: this.stringLit(skill),
      source: this.stringLit(source),
      span: join(tokenSpan(kw), tokenSpan(source)),
    });
  });

  fromImport = this.RULE("fromImport", (): Stmt => {
    const kw = this.CONSUME(KW.from);
    const file = this.CONSUME(StringTok);
    this.CONSUME(KW.import);
    const at = this.OPTION(() => this.CONSUME(At));
    const name = this.SUBRULE(this.bindName, { ARGS: ["an imported name"] });
    const alias = this.OPTION2(() => {
      this.CONSUME(KW.as);
      return this.SUBRULE2(this.bindName, { ARGS: ["an import alias"] });
    });
    this.CONSUME(Newline);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "FromImport",
      path: this.stringLit(file),
      name: name.name,
      nameSpan: name.span,
      isAgent: at !== undefined,
      alias: alias ? alias.name : null,
      aliasSpan: alias ? alias.span : null,
      span: join(tokenSpan(kw), alias ? alias.span : name.span),
    });
  });

  exportStmt = this.RULE("exportStmt", (): Stmt => {
    const kw = this.CONSUME(KW.export);
    const target = this.OR([
      {
        // `export @name` versus exporting an agent call `@name `t`(x)`: decided by the token after the name.
        GATE: () => this.LA(3).tokenType === Newline,
        IGNORE_AMBIGUITIES: true,
        ALT: (): ExportTarget => {
          this.CONSUME(At);
          const name = this.SUBRULE(this.bindName, { ARGS: ["an agent name", "agent"] });
          return this.RECORDING_PHASE ? RECORDING : ({ kind: "agent" as const, name: name.name, nameSpan: name.span });
        },
      },
      {
        ALT: (): ExportTarget => {
          const expr = this.SUBRULE(this.expr);
          if (this.RECORDING_PHASE) return RECORDING;
          if (expr.kind !== "Name") return { kind: "expr" as const, expr };
          this.reservedOperand(expr, "an exported name");
          return { kind: "name" as const, name: expr.name, nameSpan: expr.span };
        },
      },
    ]);
    this.CONSUME(Newline);
    return this.ACTION(() => {
      const end = target.kind === "expr" ? target.expr.span : target.nameSpan;
      return { kind: "Export", target, span: join(tokenSpan(kw), end) };
    });
  });

  ifStmt = this.RULE("ifStmt", (): Stmt => {
    const branches: IfBranch[] = [];
    const kw = this.CONSUME(KW.if);
    const cond = this.SUBRULE(this.expr);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    if (!this.RECORDING_PHASE) branches.push({ cond, body: block.body, span: join(tokenSpan(kw), block.span) });
    this.MANY(() => branches.push(this.SUBRULE(this.elifClause)));
    const orelse = this.OPTION(() => this.SUBRULE(this.elseClause));
    return this.ACTION(() => {
      const end = orelse ? orelse.span : branches[branches.length - 1]!.span;
      return { kind: "If", branches, orelse: orelse ? orelse.body : null, span: join(tokenSpan(kw), end) };
    });
  });

  elifClause = this.RULE("elifClause", (): IfBranch => {
    const kw = this.CONSUME(KW.elif);
    const cond = this.SUBRULE(this.expr);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({ cond, body: block.body, span: join(tokenSpan(kw), block.span) });
  });

  elseClause = this.RULE("elseClause", (): Block => {
    const kw = this.CONSUME(KW.else);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({ body: block.body, span: join(tokenSpan(kw), block.span) });
  });

  whileStmt = this.RULE("whileStmt", (): Stmt => {
    const kw = this.CONSUME(KW.while);
    const cond = this.SUBRULE(this.expr);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({ kind: "While", cond, body: block.body, span: join(tokenSpan(kw), block.span) });
  });

  forStmt = this.RULE("forStmt", (): Stmt => {
    const kw = this.CONSUME(KW.for);
    const target = this.SUBRULE(this.bindName, { ARGS: ["a loop variable"] });
    this.CONSUME(KW.in);
    const iter = this.SUBRULE(this.expr);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "For",
      target: target.name,
      targetSpan: target.span,
      iter,
      body: block.body,
      span: join(tokenSpan(kw), block.span),
    });
  });

  matchStmt = this.RULE("matchStmt", (): Stmt => {
    const cases: MatchCase[] = [];
    const kw = this.CONSUME(KW.match);
    const subject = this.SUBRULE(this.expr);
    this.CONSUME(Colon);
    this.CONSUME(Newline);
    this.CONSUME(Indent);
    this.AT_LEAST_ONE(() => cases.push(this.SUBRULE(this.caseClause)));
    this.CONSUME(Dedent);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Match",
      subject,
      cases,
      span: join(tokenSpan(kw), cases[cases.length - 1]!.span),
    });
  });

  caseClause = this.RULE("caseClause", (): MatchCase => {
    const kw = this.CONSUME(KW.case);
    const pattern = this.SUBRULE(this.pattern);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({ pattern, body: block.body, span: join(tokenSpan(kw), block.span) });
  });

  /** Parsed loosely (any expression, or `error(args)`) and then classified, so a wrong pattern is E050, not E001. */
  pattern = this.RULE("pattern", (): Pattern =>
    this.OR([
      {
        ALT: () => {
          const kw = this.CONSUME(KW.error);
          this.CONSUME(LParen);
          const args = this.SUBRULE(this.argList);
          const close = this.CONSUME(RParen);
          return this.RECORDING_PHASE ? RECORDING : this.errorPattern(args, join(tokenSpan(kw), tokenSpan(close)));
        },
      },
      {
        // after the `error(…)` form, which `error` starts as well (as an expression it is E010)
        IGNORE_AMBIGUITIES: true,
        ALT: () => {
          const expr = this.SUBRULE(this.expr);
          return this.RECORDING_PHASE ? RECORDING : this.exprPattern(expr);
        },
      },
    ]),
  );

  private errorPattern(a: Args, span: Span): Pattern {
    if (a.kwargs.length === 0 && a.args.length === 1) {
      const only = a.args[0]!;
      if (only.kind === "It") {
        // `it` parses as an expression, not a name: the E010 every other reserved word gets here (language.md §5)
        const message = reservedWordMessage("it", "the name bound by case error(…)");
        this.diags.push(diagnostic("E010", message, this.path, only.span));
        return { kind: "ErrorAny", span };
      }
      if (only.kind === "Name") {
        this.reservedOperand(only, "the name bound by case error(…)");
        return only.name === "_" ? { kind: "ErrorAny", span } : { kind: "ErrorBind", name: only.name, nameSpan: only.span, span };
      }
    }
    if (a.args.length === 0 && a.kwargs.length === 1) {
      const kw = a.kwargs[0]!;
      if (kw.name === "kind" && kw.value.kind === "String") return { kind: "ErrorKind", errorKind: kw.value.value, span };
    }
    this.report("E050", 'invalid error pattern: use error(_), error(kind="...") or error(name)', span);
    return { kind: "ErrorAny", span };
  }

  private exprPattern(e: Expr): Pattern {
    if (e.kind === "Name" && e.name === "_") return { kind: "Wildcard", span: e.span };
    if (this.reservedOperands.has(e)) return { kind: "Wildcard", span: e.span }; // its E010 is the one report
    if (e.kind === "Predicate") {
      if (e.input === null) return { kind: "Semantic", criterion: e.criterion, span: e.span };
      this.report(
        "E050",
        "a case predicate takes no input: it is judged against the match subject; write ?`criterion`",
        e.span,
      );
      return { kind: "Semantic", criterion: e.criterion, span: e.span };
    }
    this.report("E050", "invalid case pattern: expected _, error(_), error(kind=\"...\"), error(name) or ?`criterion`", e.span);
    return { kind: "Wildcard", span: e.span };
  }

  chooseStmt = this.RULE("chooseStmt", (): Stmt => {
    const options: ChooseOption[] = [];
    const kw = this.CONSUME(KW.choose);
    const subject = this.SUBRULE(this.expr);
    this.CONSUME(KW.by);
    this.CONSUME(Question);
    const crit = this.CONSUME(TemplateTok);
    this.CONSUME(KW.as);
    const binding = this.SUBRULE(this.bindName, { ARGS: ["the name bound by choose"] });
    this.CONSUME(Colon);
    this.CONSUME(Newline);
    this.CONSUME(Indent);
    this.AT_LEAST_ONE(() => options.push(this.SUBRULE(this.optionClause)));
    this.CONSUME(Dedent);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Choose",
      subject,
      criterion: this.template(crit),
      binding: binding.name,
      bindingSpan: binding.span,
      options,
      span: join(tokenSpan(kw), options[options.length - 1]!.span),
    });
  });

  optionClause = this.RULE("optionClause", (): ChooseOption => {
    const kw = this.CONSUME(KW.option);
    const label = this.CONSUME(StringTok);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({
      label: this.stringLit(label).value,
      labelSpan: tokenSpan(label),
      body: block.body,
      span: join(tokenSpan(kw), block.span),
    });
  });

  constrainStmt = this.RULE("constrainStmt", (): Stmt => {
    const requires: Requirement[] = [];
    const kw = this.CONSUME(KW.constrain);
    const target = this.SUBRULE(this.bindName, { ARGS: ["a constrain target"] });
    const kwargs = this.OPTION(() => {
      this.CONSUME(LParen);
      const list = this.SUBRULE(this.kwargList, { ARGS: [KEYWORD_NAME] });
      this.CONSUME(RParen);
      return list;
    });
    this.CONSUME(Colon);
    this.CONSUME(Newline);
    this.CONSUME(Indent);
    this.AT_LEAST_ONE(() => {
      const req = this.CONSUME(KW.require);
      this.CONSUME(Question);
      const crit = this.CONSUME(TemplateTok);
      this.CONSUME2(Newline);
      if (!this.RECORDING_PHASE) requires.push({ criterion: this.template(crit), span: join(tokenSpan(req), tokenSpan(crit)) });
    });
    this.CONSUME(Dedent);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Constrain",
      target: target.name,
      targetSpan: target.span,
      kwargs: kwargs ?? [],
      requires,
      span: join(tokenSpan(kw), requires[requires.length - 1]!.span),
    });
  });

  withInputStmt = this.RULE("withInputStmt", (): Stmt => {
    const kw = this.CONSUME(KW.with);
    this.CONSUME(KW.input);
    const expr = this.SUBRULE(this.expr);
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({ kind: "WithInput", expr, body: block.body, span: join(tokenSpan(kw), block.span) });
  });

  tryStmt = this.RULE("tryStmt", (): Stmt => {
    const kw = this.CONSUME(KW.try);
    this.CONSUME(Colon);
    const body = this.SUBRULE(this.block);
    const handler = this.OPTION(() => this.SUBRULE(this.exceptClause));
    const fin = this.OPTION2(() => {
      const f = this.CONSUME(KW.finally);
      this.CONSUME2(Colon);
      const block = this.SUBRULE2(this.block);
      return this.RECORDING_PHASE ? RECORDING : ({ body: block.body, span: join(tokenSpan(f), block.span) });
    });
    return this.ACTION(() => {
      const end = fin ? fin.span : handler ? handler.span : body.span;
      return {
        kind: "Try",
        body: body.body,
        handler: handler ?? null,
        finalBody: fin ? fin.body : null,
        span: join(tokenSpan(kw), end),
      };
    });
  });

  exceptClause = this.RULE("exceptClause", (): ExceptClause => {
    const kw = this.CONSUME(KW.except);
    this.CONSUME(KW.as);
    const name = this.SUBRULE(this.bindName, { ARGS: ["the name bound by except"] });
    this.CONSUME(Colon);
    const block = this.SUBRULE(this.block);
    return this.RECORDING_PHASE ? RECORDING : ({ name: name.name, nameSpan: name.span, body: block.body, span: join(tokenSpan(kw), block.span) });
  });

  raiseStmt = this.RULE("raiseStmt", (): Stmt => {
    const kw = this.CONSUME(KW.raise);
    const value = this.OPTION(() => this.SUBRULE(this.expr));
    this.CONSUME(Newline);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Raise",
      value: value ?? null,
      span: value ? join(tokenSpan(kw), value.span) : tokenSpan(kw),
    });
  });

  returnStmt = this.RULE("returnStmt", (): Stmt => {
    const kw = this.CONSUME(KW.return);
    const value = this.OPTION(() => this.SUBRULE(this.expr));
    this.CONSUME(Newline);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Return",
      value: value ?? null,
      span: value ? join(tokenSpan(kw), value.span) : tokenSpan(kw),
    });
  });

  simpleKeywordStmt = this.RULE("simpleKeywordStmt", (): Stmt => {
    const tok = this.OR([
      { ALT: () => this.CONSUME(KW.pass) },
      { ALT: () => this.CONSUME(KW.break) },
      { ALT: () => this.CONSUME(KW.continue) },
    ]);
    this.CONSUME(Newline);
    return this.ACTION((): Stmt => {
      const span = tokenSpan(tok);
      if (tok.tokenType === KW.pass) return { kind: "Pass", span };
      if (tok.tokenType === KW.break) return { kind: "Break", span };
      return { kind: "Continue", span };
    });
  });

  /** `expr` or `name = expr`: parsed as an expression first, the target is checked afterwards. */
  exprStmt = this.RULE("exprStmt", (): Stmt => {
    const first = this.SUBRULE(this.expr);
    const value = this.OPTION(() => {
      this.CONSUME(Equals);
      return this.SUBRULE2(this.expr);
    });
    this.CONSUME(Newline);
    return this.ACTION((): Stmt => {
      if (value === undefined) return { kind: "ExprStmt", expr: first, span: first.span };
      const span = join(first.span, value.span);
      if (first.kind === "Name") {
        this.reservedOperand(first, ASSIGNED);
        return { kind: "Assign", target: first.name, targetSpan: first.span, value, span };
      }
      if (first.kind === "It") return { kind: "Assign", target: "it", targetSpan: first.span, value, span };
      if (first.kind === "Bool") {
        this.report("E010", reservedWordMessage(String(first.value), ASSIGNED), first.span);
      } else if (!this.startsReserved(first)) {
        this.report("E001", "only a plain name can be assigned (not a member, index or call)", first.span);
      }
      return { kind: "ExprStmt", expr: value, span };
    });
  });

  // ---------- argument lists ----------

  /** `k=v, ...` with an optional trailing comma; stops before `)` or `}`. `what`: the keys, for E010. */
  kwargList = this.RULE("kwargList", (what: string): KwArg[] => {
    const list: KwArg[] = [];
    this.OPTION(() => {
      list.push(this.SUBRULE(this.kwarg, { ARGS: [what] }));
      this.MANY({
        GATE: () => !CLOSERS.has(this.LA(2).tokenType),
        DEF: () => {
          this.CONSUME(Comma);
          list.push(this.SUBRULE2(this.kwarg, { ARGS: [what] }));
        },
      });
      this.OPTION2(() => this.CONSUME2(Comma));
    });
    return list;
  });

  kwarg = this.RULE("kwarg", (what: string): KwArg => {
    const name = this.SUBRULE(this.bindName, { ARGS: [what, "key"] });
    this.CONSUME(Equals);
    const value = this.SUBRULE(this.expr);
    return this.RECORDING_PHASE ? RECORDING : ({ name: name.name, nameSpan: name.span, value });
  });

  /** Positional then keyword arguments, optional trailing comma; stops before `)`. */
  argList = this.RULE("argList", (): Args => {
    const items: ArgItem[] = [];
    this.OPTION(() => {
      items.push(this.SUBRULE(this.arg));
      this.MANY({
        GATE: () => this.LA(2).tokenType !== RParen,
        DEF: () => {
          this.CONSUME(Comma);
          items.push(this.SUBRULE2(this.arg));
        },
      });
      this.OPTION2(() => this.CONSUME2(Comma));
    });
    return this.ACTION(() => {
      const out: Args = { args: [], kwargs: [] };
      for (const item of items) {
        if (item.kind === "kw") {
          this.reservedOperand(item.kw.value, "an argument");
          out.kwargs.push(item.kw);
        } else {
          if (this.reservedOperand(item.expr, "an argument")) {
            // its E010 is the one report for this argument
          } else if (out.kwargs.length > 0) {
            this.report("E001", "positional argument after a keyword argument", item.expr.span);
          }
          out.args.push(item.expr);
        }
      }
      return out;
    });
  });

  arg = this.RULE("arg", (): ArgItem =>
    // `name=` (a keyword argument) or an expression that starts with a name: the only place needing two tokens.
    this.OR({
      MAX_LOOKAHEAD: 2,
      DEF: [
      {
        ALT: () => {
          const kw = this.SUBRULE(this.kwarg, { ARGS: [KEYWORD_NAME] });
          return { kind: "kw" as const, kw };
        },
      },
      {
        ALT: () => {
          const expr = this.SUBRULE(this.expr);
          return { kind: "pos" as const, expr };
        },
      },
    ]}),
  );

  // ---------- expressions ----------

  /**
   * All binary levels in one rule: a flat list of operands and operators, combined by precedence
   * climbing in the action (or < and < not < comparison < + -). One rule frame instead of five per operand
   * keeps the parser fast, and the climbing recurses only per precedence level, so long chains cannot
   * overflow the stack.
   */
  expr = this.RULE("expr", (): Expr => {
    const operands: Expr[] = [];
    const ops: IToken[] = [];
    const nots: (IToken[] | null)[] = [];
    let pending: IToken[] | null = null;
    this.MANY(() => {
      const t = this.CONSUME(KW.not);
      (pending ??= []).push(t);
    });
    operands.push(this.SUBRULE(this.postfixExpr));
    nots.push(pending);
    pending = null;
    this.MANY2(() => {
      ops.push(this.CONSUME(BinaryOpTok));
      this.MANY3(() => {
        const t = this.CONSUME2(KW.not);
        (pending ??= []).push(t);
      });
      operands.push(this.SUBRULE2(this.postfixExpr));
      nots.push(pending);
      pending = null;
    });
    return this.RECORDING_PHASE ? RECORDING : (ops.length === 0 && nots[0] === null ? operands[0]! : this.climb(operands, ops, nots));
  });

  private climb(operands: Expr[], ops: IToken[], nots: (IToken[] | null)[]): Expr {
    let pos = 0;
    const unary = (): Expr => {
      const ns = nots[pos];
      if (!ns) return operands[pos]!;
      if (pos > 0 && precedence(ops[pos - 1]!) > NOT_PRECEDENCE) {
        this.report(
          "E001",
          `'not' cannot follow '${ops[pos - 1]!.image}'; put the negated part in parentheses`,
          tokenSpan(ns[0]!),
        );
      }
      nots[pos] = null;
      let e = level(NOT_PRECEDENCE + 1);
      for (let k = ns.length - 1; k >= 0; k--) e = { kind: "Not", operand: e, span: join(tokenSpan(ns[k]!), e.span) };
      return e;
    };
    const level = (min: number): Expr => {
      let left = unary();
      let compares = 0;
      while (pos < ops.length) {
        const op = ops[pos]!;
        const p = precedence(op);
        if (p < min) break;
        pos++;
        // Binary, not chained: `a < b < c` is refused rather than silently meaning something else.
        if (p === COMPARE_PRECEDENCE && ++compares === 2) {
          this.report("E001", "comparisons cannot be chained; combine them with 'and'", tokenSpan(op));
        }
        const right = level(p + 1);
        const span = join(left.span, right.span);
        const text = op.image;
        if (text === "or" || text === "and") left = { kind: "Logical", op: text, left, right, span };
        else left = { kind: "Binary", op: text as BinaryOp, left, right, span };
      }
      return left;
    };
    return level(0);
  }

  /** A primary expression (inlined here: one rule frame less per operand) followed by `.name`, `[i]`, `(args)`. */
  postfixExpr = this.RULE("postfixExpr", (): Expr => {
    let e = this.OR2((this.primaryAlts ??= this.primaryAlternatives()));
    this.MANY(() => {
      this.OR([
        {
          ALT: () => {
            this.CONSUME(Dot);
            const name = this.CONSUME(NameLike);
            e = this.ACTION(() => {
              const nameSpan = tokenSpan(name);
              return { kind: "Member", object: e, name: name.image, nameSpan, span: join(e.span, nameSpan) };
            });
          },
        },
        {
          ALT: () => {
            this.CONSUME(LBracket);
            const index = this.SUBRULE(this.expr);
            const close = this.CONSUME(RBracket);
            e = this.RECORDING_PHASE ? RECORDING : ({ kind: "Index", object: e, index, span: join(e.span, tokenSpan(close)) });
          },
        },
        {
          ALT: () => {
            this.CONSUME(LParen);
            const a = this.SUBRULE(this.argList);
            const close = this.CONSUME(RParen);
            e = this.RECORDING_PHASE ? RECORDING : ({
              kind: "Call",
              callee: e,
              args: a.args,
              kwargs: a.kwargs,
              span: join(e.span, tokenSpan(close)),
            });
          },
        },
      ]);
    });
    return e;
  });

  private primaryAlternatives(): IOrAlt<Expr>[] {
    return [
      { ALT: () => this.SUBRULE(this.parenExpr) },
      {
        ALT: () => {
          const t = this.CONSUME(KW.true);
          return this.RECORDING_PHASE ? RECORDING : ({ kind: "Bool" as const, value: true, span: tokenSpan(t) });
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(KW.false);
          return this.RECORDING_PHASE ? RECORDING : ({ kind: "Bool" as const, value: false, span: tokenSpan(t) });
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(NumberTok);
          if (this.RECORDING_PHASE) return RECORDING;
          const value = Number(t.image);
          // nothing else in the language makes a non-finite number (arithmetic that overflows raises)
          if (!Number.isFinite(value)) this.report("E001", "number literal too large (the largest is about 1.8e308)", tokenSpan(t));
          // an id such as 12345678901234567890 would silently become 12345678901234567000, as json() and --arg
          // refuse to let it; an integer a number holds exactly (2^60 = 1152921504606846976), or as vvm prints
          // one (2^64 is printed 18446744073709552000), is read as it is, as json() and --arg read it
          else if (!t.image.includes(".") && !Number.isSafeInteger(value) && String(value) !== t.image && BigInt(t.image) !== BigInt(value)) {
            const shown = t.image.length > 40 ? t.image.slice(0, 40) + "…" : t.image;
            this.report("E001", `the integer ${shown} cannot be held exactly (a number holds every integer up to 9007199254740991, and only some beyond); write it as a string`, tokenSpan(t));
          }
          return { kind: "Number" as const, value, span: tokenSpan(t) };
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(StringTok);
          return this.RECORDING_PHASE ? RECORDING : this.stringLit(t);
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(TripleString);
          return this.RECORDING_PHASE ? RECORDING : this.stringLit(t);
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(TemplateTok);
          return this.ACTION(() => {
            const template = this.template(t);
            return { kind: "TemplateExpr" as const, template, span: template.span };
          });
        },
      },
      {
        // `lambda` is not reserved: it only starts a lambda when a parameter name follows.
        GATE: () => this.LA(1).image === "lambda" && this.lambdaParamAhead() && this.lambdaGate(),
        IGNORE_AMBIGUITIES: true,
        ALT: () => this.SUBRULE(this.lambdaExpr),
      },
      {
        ALT: () => {
          const t = this.CONSUME(Identifier);
          return this.RECORDING_PHASE ? RECORDING : ({ kind: "Name" as const, name: t.image, span: tokenSpan(t) });
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(KW.it);
          return this.RECORDING_PHASE ? RECORDING : ({ kind: "It" as const, span: tokenSpan(t) });
        },
      },
      { ALT: () => this.SUBRULE(this.listExpr) },
      { ALT: () => this.SUBRULE(this.objectExpr) },
      { ALT: () => this.SUBRULE(this.agentCall) },
      { ALT: () => this.SUBRULE(this.predicate) },
      {
        // `f(input)`, `y = agent`: a reserved word where an operand belongs is E010, read as a name so the
        // statement parses on and nothing else is reported for it (the rule holding it may re-word the position)
        ALT: () => {
          const t = this.CONSUME(ReservedName);
          return this.ACTION(() => {
            const e: Expr = { kind: "Name", name: t.image, span: tokenSpan(t) };
            this.reservedOperands.set(e, this.reserved(t, "a name"));
            return e;
          });
        },
      },
    ];
  }

  /**
   * Dialect: `lambda a, b: expr` (upstream examples 20 and 22). Desugared to a nested
   * `def <lambda:L:C>(a, b): return expr` placed before the enclosing statement; the expression is a
   * reference to it. Closures over the enclosing function work exactly as for a nested `def`.
   */
  /** `lambda x`, or `lambda input:` / `lambda input,` (a reserved parameter, E010); `lambda and b` is a name. */
  private lambdaParamAhead(): boolean {
    const next = this.LA(2).tokenType;
    if (next === Identifier) return true;
    const after = this.LA(3).tokenType;
    return next.CATEGORIES?.includes(Keyword) === true && (after === Colon || after === Comma);
  }

  private lambdaGate(): boolean {
    if (this.lambdaDepth < MAX_LAMBDA_NESTING) return true;
    if (!this.lambdaLimitReported) {
      this.lambdaLimitReported = true;
      this.report("E001", `lambdas nested deeper than ${MAX_LAMBDA_NESTING} levels are not supported`, tokenSpan(this.LA(1)));
    }
    return false;
  }

  lambdaLimitReported = false;

  lambdaExpr = this.RULE("lambdaExpr", (): Expr => {
    const kw = this.CONSUME(Identifier);
    if (!this.RECORDING_PHASE) this.lambdaDepth++;
    const params: Param[] = [];
    const first = this.SUBRULE(this.bindName, { ARGS: ["a parameter name"] });
    if (!this.RECORDING_PHASE) params.push({ name: first.name, span: first.span });
    this.MANY(() => {
      this.CONSUME(Comma);
      const p = this.SUBRULE2(this.bindName, { ARGS: ["a parameter name"] });
      if (!this.RECORDING_PHASE) params.push({ name: p.name, span: p.span });
    });
    this.CONSUME(Colon);
    const mark = this.RECORDING_PHASE ? RECORDING : this.pendingLambdas.length;
    const body = this.SUBRULE(this.expr);
    return this.ACTION((): Expr => {
      this.lambdaDepth--;
      const kwSpan = tokenSpan(kw);
      const span = join(kwSpan, body.span);
      const name = `<lambda:${kwSpan.line}:${kwSpan.col}>`;
      // lambdas inside this one's body are defined in its body, so they close over its parameters
      const defBody: Stmt[] = [];
      this.pushStmt(defBody, mark, { kind: "Return", value: body, span: body.span });
      this.pendingLambdas.push({ kind: "Def", name, nameSpan: kwSpan, params, body: defBody, span });
      return { kind: "Name", name, span };
    });
  });

  /** `()` is unit; `(e)` groups. */
  parenExpr = this.RULE("parenExpr", (): Expr => {
    const open = this.CONSUME(LParen);
    return this.OR([
      {
        ALT: () => {
          const close = this.CONSUME(RParen);
          return this.RECORDING_PHASE ? RECORDING : ({ kind: "Unit" as const, span: join(tokenSpan(open), tokenSpan(close)) });
        },
      },
      {
        ALT: () => {
          const inner = this.SUBRULE(this.expr);
          this.CONSUME2(RParen);
          return inner;
        },
      },
    ]);
  });

  listExpr = this.RULE("listExpr", (): Expr => {
    const items: Expr[] = [];
    const open = this.CONSUME(LBracket);
    this.OPTION(() => {
      items.push(this.SUBRULE(this.expr));
      this.MANY({
        GATE: () => this.LA(2).tokenType !== RBracket,
        DEF: () => {
          this.CONSUME(Comma);
          items.push(this.SUBRULE2(this.expr));
        },
      });
      this.OPTION2(() => this.CONSUME2(Comma));
    });
    const close = this.CONSUME(RBracket);
    return this.RECORDING_PHASE ? RECORDING : ({ kind: "List" as const, items, span: join(tokenSpan(open), tokenSpan(close)) });
  });

  objectExpr = this.RULE("objectExpr", (): Expr => {
    const entries: { key: string; keySpan: Span; value: Expr }[] = [];
    const open = this.CONSUME(LBrace);
    this.OPTION(() => {
      entries.push(this.SUBRULE(this.objectEntry));
      this.MANY({
        GATE: () => this.LA(2).tokenType !== RBrace,
        DEF: () => {
          this.CONSUME(Comma);
          entries.push(this.SUBRULE2(this.objectEntry));
        },
      });
      this.OPTION2(() => this.CONSUME2(Comma));
    });
    const close = this.CONSUME(RBrace);
    return this.RECORDING_PHASE ? RECORDING : ({ kind: "Object" as const, entries, span: join(tokenSpan(open), tokenSpan(close)) });
  });

  objectEntry = this.RULE("objectEntry", () => {
    const key = this.OR([{ ALT: () => this.CONSUME(NameLike) }, { ALT: () => this.CONSUME(StringTok) }]);
    this.CONSUME(Colon);
    const value = this.SUBRULE(this.expr);
    return this.ACTION(() => {
      const keySpan = tokenSpan(key);
      const name = key.tokenType === StringTok ? this.stringLit(key).value : key.image;
      return { key: name, keySpan, value };
    });
  });

  /** `@name`, `@name.with(k=v)` or `@{k=v}`, then a template and a mandatory argument list. */
  agentCall = this.RULE("agentCall", (): AgentCall => {
    const at = this.CONSUME(At);
    const agent = this.OR([
      {
        ALT: (): AgentRef => {
          const name = this.SUBRULE(this.bindName, { ARGS: ["an agent name", "agent"] });
          const withArgs = this.OPTION(() => {
            this.CONSUME(Dot);
            this.CONSUME(KW.with);
            this.CONSUME(LParen);
            const list = this.SUBRULE(this.kwargList, { ARGS: [CONFIG_KEY] });
            const close = this.CONSUME(RParen);
            return { list, close };
          });
          return this.RECORDING_PHASE ? RECORDING : ({
            kind: "NamedAgent" as const,
            name: name.name,
            nameSpan: name.span,
            with: withArgs ? withArgs.list : null,
            span: join(tokenSpan(at), withArgs ? tokenSpan(withArgs.close) : name.span),
          });
        },
      },
      {
        ALT: (): AgentRef => {
          this.CONSUME(LBrace);
          const list = this.SUBRULE2(this.kwargList, { ARGS: [CONFIG_KEY] });
          const close = this.CONSUME(RBrace);
          return this.RECORDING_PHASE ? RECORDING : ({
            kind: "InlineAgent" as const,
            kwargs: list,
            span: join(tokenSpan(at), tokenSpan(close)),
          });
        },
      },
    ]);
    const tpl = this.CONSUME(TemplateTok);
    this.CONSUME2(LParen);
    const a = this.SUBRULE(this.argList);
    const close = this.CONSUME2(RParen);
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "AgentCall" as const,
      agent,
      template: this.template(tpl),
      args: a.args,
      kwargs: a.kwargs,
      span: join(tokenSpan(at), tokenSpan(close)),
    });
  });

  /** `?`criterion`` or `?`criterion`(value)`; `?`c`()` is the same as no input. */
  predicate = this.RULE("predicate", (): Predicate => {
    const q = this.CONSUME(Question);
    const tpl = this.CONSUME(TemplateTok);
    const input = this.OPTION(() => {
      this.CONSUME(LParen);
      const value = this.OPTION2(() => this.SUBRULE(this.expr));
      const close = this.CONSUME(RParen);
      return { value, close };
    });
    return this.RECORDING_PHASE ? RECORDING : ({
      kind: "Predicate" as const,
      criterion: this.template(tpl),
      input: input?.value ?? null,
      span: join(tokenSpan(q), input ? tokenSpan(input.close) : tokenSpan(tpl)),
    });
  });
}
