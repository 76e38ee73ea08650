// The resolver: one pass over a parsed module that checks names, agents, placeholders and control flow
// (spec/language.md §16) against the module's scope layout, which the interpreter then reads (spec/language.md §6).
// It collects every problem; it never stops at the first.
import path from "node:path";
import type { AgentCall, AgentDecl, AgentRef, Call, DefStmt, ExportTarget, Expr, InputDecl, KwArg, Program, Span, Stmt, Template } from "../../grammar/ast.ts";
import { diagnostic, type Code, type Diagnostic } from "../../grammar/diagnostics.ts";
import {
  AGENT_KEYS,
  FEATURE_KEYS,
  CALL_OPTIONS,
  computedParts,
  configValueProblems,
  ungrantedProblems,
  describeExpr,
  literalString,
  optionValueProblem,
  unknownKeyMessage,
} from "./agent-config.ts";
import { linkedGlobProblems } from "./glob-links.ts";
import { returnsProblems } from "./returns.ts";
import { checkPmapMemory, type PmapSite } from "./pmap-memory.ts";
import { innerBlocks, isLambda, type Layout, type Scope } from "./scopes.ts";
import { isStdlibName } from "../../stdlib/names.ts";
import { SIGNATURES } from "../../stdlib/signatures.ts";
import { childExprs, placeholderRoots, stmtExprs } from "../../grammar/walk.ts";
import { constantRaises } from "./constant-raises.ts";

/** What the resolver needs to know about a module's surroundings (computed by src/check.ts). */
interface ModuleEnv {
  /** agents imported into this module: alias → the declaration it refers to (null when unresolved) */
  importedAgents: Map<string, AgentDecl | null>;
  /** skill names imported by this module (`import "x" from "..."`) */
  skills: ReadonlySet<string>;
  /** module-level names other modules import from this one (they count as used for W030) */
  externallyUsed: ReadonlySet<string>;
  /** how the first module importing this one is shown, or null for the entry (only the entry takes inputs, E023) */
  importedBy: string | null;
  /** the entry program's folder, which relative permission globs are read from (W026) */
  programDir: string;
}


/** Python words a newcomer types, and what VVM spells instead (a Map: a plain object would find `constructor`). */
const PYTHON_SPELLINGS: ReadonlyMap<string, string> = new Map([
  ["True", "true"],
  ["False", "false"],
  ["None", "()"],
]);

interface Ctx {
  scope: Scope;
  /** directly in the module body (not in a block, not in a def) */
  atTop: boolean;
  inDef: boolean;
  inLoop: boolean;
}

export function resolveModule(path: string, program: Program, layout: Layout, env: ModuleEnv): Diagnostic[] {
  return new Resolver(path, program, layout, env).run();
}

class Resolver {
  private readonly diags: Diagnostic[] = [];
  private readonly agents = new Map<string, AgentDecl | null>();
  /** names read in each scope (W030) */
  private readonly reads = new Map<Scope, Set<string>>();
  private readonly pmapSites: PmapSite[] = [];

  constructor(
    private readonly path: string,
    private readonly program: Program,
    private readonly layout: Layout,
    private readonly env: ModuleEnv,
  ) {}

  run(): Diagnostic[] {
    this.collectAgents();
    this.enterScope(this.layout.module);
    this.checkInputNames();
    this.checkValueImports();
    this.walkBlock(this.program.body, { scope: this.layout.module, atTop: true, inDef: false, inLoop: false });
    const warned = new Set<AgentCall>();
    // A function's calls are judged once, at its first pmap: every later pmap of it would find the same calls
    // (already warned), and judging them again cost its pmaps times its calls (2,000 of each: 15 s).
    const judged = new Set<DefStmt>();
    for (const site of this.pmapSites) {
      if (judged.has(site.def)) continue;
      judged.add(site.def);
      for (const w of checkPmapMemory(site, (name) => this.agentDecl(name))) {
        if (warned.has(w.call)) continue;
        warned.add(w.call);
        this.report("W040", w.message, w.span);
      }
    }
    this.reportUnused();
    return this.diags;
  }

  private report(code: Code, message: string, span: Span): void {
    this.diags.push(diagnostic(code, message, this.path, span));
  }

  private enterScope(scope: Scope): void {
    this.reads.set(scope, new Set());
    // Duplicate functions among the defs this scope defines (E021).
    const first = new Map<string, DefStmt>();
    // A def is bound when its body's call starts, so one named like a parameter would replace the argument.
    const params = new Map((scope.def?.params ?? []).map((p) => [p.name, p.span] as const));
    for (const d of scope.defs) {
      const f = first.get(d.name);
      const param = params.get(d.name);
      if (f) this.report("E021", `function '${d.name}' is already defined at line ${f.nameSpan.line}`, d.nameSpan);
      else if (param) this.report("E021", `function '${d.name}' has the name of a parameter of '${scope.def!.name}' (line ${param.line}); rename one of them`, d.nameSpan);
      else first.set(d.name, d);
    }
  }

  // ---------- agents ----------

  /** The agent namespace: declarations (misplaced ones too, to avoid cascades) and agent imports (E020). */
  private collectAgents(): void {
    const firstSpan = new Map<string, Span>();
    const importKeys = new Map<string, string>();
    const add = (name: string, span: Span, decl: AgentDecl | null, importKey: string | null): void => {
      const first = firstSpan.get(name);
      if (first) {
        // The very same import written twice is harmless.
        if (importKey !== null && importKeys.get(name) === importKey) return;
        this.report("E020", `agent '${name}' is already defined at line ${first.line}`, span);
        return;
      }
      firstSpan.set(name, span);
      if (importKey !== null) importKeys.set(name, importKey);
      this.agents.set(name, decl);
    };
    const visit = (stmts: readonly Stmt[]): void => {
      for (const s of stmts) {
        if (s.kind === "AgentDecl") add(s.name, s.nameSpan, s, null);
        else if (s.kind === "FromImport" && s.isAgent) {
          const alias = s.alias ?? s.name;
          add(alias, s.aliasSpan ?? s.nameSpan, this.env.importedAgents.get(alias) ?? null, `${s.path.value}\0${s.name}`);
        } else if (s.kind === "Def") visit(s.body);
        else for (const b of innerBlocks(s)) visit(b);
      }
    };
    visit(this.program.body);
  }

  private agentDecl(name: string): AgentDecl | null {
    return this.agents.get(name) ?? null;
  }

  /** W022: a configuration key given twice in one declaration, `.with(...)` or inline agent. */
  private checkRepeatedKeys(kwargs: KwArg[], kind: "decl" | "with" | "inline"): void {
    for (const kw of repeated(kwargs, (k) => k.name)) {
      if (kind === "decl") this.report("W022", `agent configuration key '${kw.name}' is given twice; the last one is used`, kw.nameSpan);
      else this.report("W022", `agent configuration key '${kw.name}' is given twice; the call raises when it runs`, kw.nameSpan);
    }
  }

  private checkAgentDecl(s: AgentDecl, ctx: Ctx): void {
    this.checkRepeatedKeys(s.kwargs, "decl");
    for (const kw of s.kwargs) {
      if (!AGENT_KEYS.has(kw.name) && !FEATURE_KEYS.has(kw.name)) {
        this.report("W020", unknownKeyMessage(kw.name), kw.nameSpan);
      }
      const computed = computedParts(kw.value, (n) => !this.isUserName(n, ctx));
      for (const c of computed) {
        this.report(
          "E041",
          `agent configuration '${kw.name}' must be a literal, not ${describeExpr(c)}; derive the agent at the call site with .with(...) for run-time values`,
          c.span,
        );
        // Still count names as read so the variable is not also reported unused.
        this.walkExprReadsOnly(c, ctx);
      }
      if (computed.length === 0) this.checkConfigValue(kw, "decl");
      this.checkRepeatedInLiteral(kw.value);
    }
  }

  /** W022 in a declaration's value or an input's default, which are not walked as expressions: a key of an object or a keyword of perm(...) given twice. */
  private checkRepeatedInLiteral(e: Expr): void {
    if (e.kind === "Object") this.checkRepeatedObjectKeys(e);
    else if (e.kind === "Call") this.checkRepeatedArguments(e.kwargs);
    for (const c of childExprs(e)) this.checkRepeatedInLiteral(c);
  }

  /** `input name: "…" = default`: module level, in the program's entry module, with a literal default. */
  private checkInputDecl(s: InputDecl, ctx: Ctx): void {
    if (!ctx.atTop) this.misplaced("input declarations", s.span);
    else if (this.env.importedBy !== null) {
      this.report(
        "E023",
        `input '${s.name}' is declared in a module that ${this.env.importedBy} imports: only the program vvm run starts takes inputs; pass the value to a function of this module instead`,
        s.nameSpan,
      );
    }
    this.bindCheck(s.name, s.nameSpan);
    if (!s.default) return;
    this.checkRepeatedInLiteral(s.default);
    const computed = computedParts(s.default, (n) => !this.isUserName(n, ctx));
    for (const c of computed) {
      this.report("E041", `the default of input '${s.name}' must be a literal, not ${describeExpr(c)}; compute the value in the program from the input instead`, c.span);
      this.walkExprReadsOnly(c, ctx);
    }
  }

  /** E022: an input declared twice at module level, or sharing its name with a module-level function or value import. */
  private checkInputNames(): void {
    for (const [name, list] of this.layout.module.bindingsByName) {
      const inputs = list.filter((b) => b.kind === "input");
      if (inputs.length === 0) continue;
      const first = inputs[0]!;
      for (const again of inputs.slice(1)) this.report("E022", `input '${name}' is already declared at line ${first.span.line}`, again.span);
      const other = list.find((b) => b.kind === "def" || b.kind === "import");
      if (other) {
        const what = other.kind === "def" ? "function defined" : "value imported";
        this.report("E022", `input '${name}' has the name of the ${what} at line ${other.span.line}; rename one of them`, first.span);
      }
    }
  }

  /**
   * E021: a value import that a module-level def, or another value import, replaces. Both are bound before
   * the first statement runs, so the earlier one could never be used. The very same import twice is harmless.
   */
  private checkValueImports(): void {
    const imports = new Map<string, { key: string; span: Span }>();
    for (const s of this.program.body) {
      if (s.kind !== "FromImport" || s.isAgent) continue;
      const alias = s.alias ?? s.name;
      const span = s.aliasSpan ?? s.nameSpan;
      // one module however its path is spelled (`./m.vvm`, `./sub/../m.vvm`)
      const key = `${path.posix.normalize(s.path.value)}\0${s.name}`;
      const first = imports.get(alias);
      if (!first) imports.set(alias, { key, span });
      else if (first.key !== key) this.report("E021", `'${alias}' is already imported at line ${first.span.line}; import one of them under another name (as …)`, span);
    }
    for (const d of this.layout.module.defs) {
      const imported = imports.get(d.name);
      if (imported) this.report("E021", `function '${d.name}' has the name of the value imported at line ${imported.span.line}, which it would replace before the first statement runs; rename one of them`, d.nameSpan);
    }
  }

  /** W010, W011, W021 on one configuration entry whose value is (at least partly) literal. */
  private checkConfigValue(kw: KwArg, kind: "decl" | "with" | "inline"): void {
    for (const p of configValueProblems(kw, kind)) this.report("W021", p.message, p.at.span);
    for (const p of returnsProblems(kw)) this.report(p.code, p.message, p.span);
    for (const p of ungrantedProblems(kw)) this.report(p.code, p.message, p.at.span);
    for (const p of linkedGlobProblems(kw, this.env.programDir)) this.report("W026", p.message, p.at.span);
    if (kw.name !== "skills" || kw.value.kind !== "List") return;
    // `.with(skills=[])` deliberately removes skills; only a declaration's empty list is suspicious.
    if (kind === "decl" && kw.value.items.length === 0) this.report("W011", "empty skills list: remove it or name the skills", kw.value.span);
    for (const item of kw.value.items) {
      const name = literalString(item);
      if (name !== null) {
        if (!this.env.skills.has(name)) {
          this.report("W010", `skill '${name}' is not imported in this module (import "${name}" from "...")`, item.span);
        }
      } else if (item.kind !== "Name" && computedParts(item, () => true).length === 0) {
        this.report("W021", "skill names are strings", item.span);
      }
    }
  }

  private checkAgentRef(ref: AgentRef, ctx: Ctx): void {
    const cfg = ref.kind === "NamedAgent" ? ref.with : ref.kwargs;
    if (ref.kind === "NamedAgent" && !this.agents.has(ref.name)) {
      // Dialect: `x = base.with(...)` then `@x` — a variable may hold an agent value.
      if (!this.useName(ref.name, ctx)) this.report("E040", `unknown agent '@${ref.name}'`, ref.nameSpan);
    }
    if (cfg) this.checkCallSiteConfig(cfg, ref.kind === "NamedAgent" ? "with" : "inline", ctx);
  }

  /** `.with(...)` and inline `@{...}` configuration: any expression is allowed, keys and literals are checked. */
  private checkCallSiteConfig(kwargs: KwArg[], kind: "with" | "inline", ctx: Ctx): void {
    this.checkRepeatedKeys(kwargs, kind);
    for (const kw of kwargs) {
      if (!AGENT_KEYS.has(kw.name) && !FEATURE_KEYS.has(kw.name)) {
        this.report("W020", unknownKeyMessage(kw.name), kw.nameSpan);
      }
      this.walkExpr(kw.value, ctx);
      // a program's own perm is a function like any other: what it gives is known only when the call runs
      const v = kw.value;
      if (v.kind === "Call" && v.callee.kind === "Name" && v.callee.name === "perm" && this.isUserName("perm", ctx)) continue;
      this.checkConfigValue(kw, kind);
    }
  }

  // ---------- names ----------

  /** Resolve a read of `name` through the scope chain, marking it read. True when a user binding holds it. */
  private useName(name: string, ctx: Ctx): boolean {
    const s = this.findScope(name, ctx);
    if (s) this.reads.get(s)!.add(name);
    return s !== null;
  }

  private isUserName(name: string, ctx: Ctx): boolean {
    return this.findScope(name, ctx) !== null;
  }

  private findScope(name: string, ctx: Ctx): Scope | null {
    for (let s: Scope | null = ctx.scope; s; s = s.parent) if (s.has(name)) return s;
    return null;
  }

  private checkTemplate(t: Template, ctx: Ctx): void {
    for (const { name, span } of placeholderRoots(t)) {
      // `{it}` / `{it.field}` render the current `it` (spec/dialect.md), which always has a value.
      if (name === "it") continue;
      if (!this.useName(name, ctx) && !isStdlibName(name)) {
        const where = ctx.inDef ? "a parameter, local, enclosing function's local or module-level name" : "a name assigned in this module, an import or a function";
        this.report("E051", `unknown placeholder name '${name}' (not ${where})`, span);
      } else this.checkReadInTime(name, span, ctx);
    }
  }

  /**
   * W033: a read of a function's local on a line before every binding of it in the function (a parameter or a
   * nested def is bound on entry), outside any loop, where no earlier pass could have bound it: the run raises
   * 'unbound local' there whenever it gets there, even when an enclosing function or the module has the name.
   */
  private checkReadInTime(name: string, span: Span, ctx: Ctx): void {
    const s = ctx.scope;
    const bindings = s.bindingsByName.get(name);
    if (s.def === null || ctx.inLoop || bindings === undefined) return;
    if (bindings.some((b) => b.kind === "param" || b.kind === "def" || b.span.line < span.line)) return;
    const fn = `${s.def.name}()`;
    const first = bindings[0]!.span.line;
    const outside = s.parent !== null && this.findScope(name, { ...ctx, scope: s.parent }) !== null;
    this.report(
      "W033",
      outside
        ? `'${name}' is a local of ${fn}, which assigns it at line ${first}, so this read does not see the '${name}' outside it and raises whenever it runs: a function cannot change a variable outside it (return the new value instead)`
        : `'${name}' is read before ${fn} gives it a value (at line ${first}), so this read raises whenever it runs`,
      span,
    );
  }

  private bindCheck(name: string, span: Span): void {
    if (name === "it") this.report("E060", "'it' cannot be assigned; it is set by with input, match and choose", span);
  }

  // ---------- statements ----------

  private walkBlock(stmts: readonly Stmt[], ctx: Ctx): void {
    // The context for blocks nested in these statements, made once per block rather than per statement.
    const inner: Ctx = ctx.atTop ? { ...ctx, atTop: false } : ctx;
    for (const s of stmts) this.walkStmt(s, ctx, inner);
  }

  private walkStmt(s: Stmt, ctx: Ctx, inner: Ctx): void {
    for (const e of stmtExprs(s)) for (const r of constantRaises(e)) this.report("W061", r.message, r.at.span);
    switch (s.kind) {
      case "AgentDecl":
        if (!ctx.atTop) this.misplaced("agent declarations", s.span);
        this.checkAgentDecl(s, ctx);
        return;
      case "InputDecl":
        this.checkInputDecl(s, ctx);
        return;
      case "Def": {
        // A `lambda` arrives as a synthetic def placed before its statement (grammar/parser.ts): fine anywhere.
        if (!ctx.atTop && !ctx.inDef && !isLambda(s.name)) {
          this.report("E001", "def inside a module-level block: define functions at module level or inside another function", s.span);
        }
        this.bindCheck(s.name, s.nameSpan);
        const seen = new Set<string>();
        for (const p of s.params) {
          this.bindCheck(p.name, p.span);
          if (seen.has(p.name)) this.report("E001", `parameter '${p.name}' appears twice`, p.span);
          seen.add(p.name);
        }
        const scope = this.layout.functions.get(s)!;
        this.enterScope(scope);
        this.walkBlock(s.body, { scope, atTop: false, inDef: true, inLoop: false });
        return;
      }
      case "SkillImport":
        if (!ctx.atTop) this.misplaced("skill imports", s.span);
        return;
      case "FromImport":
        if (!ctx.atTop) this.misplaced("module imports", s.span);
        if (s.alias !== null && s.aliasSpan) this.bindCheck(s.alias, s.aliasSpan);
        return;
      case "Export":
        if (!ctx.atTop) this.misplaced("exports", s.span);
        this.checkExport(s.target, ctx);
        return;
      case "If":
        for (const b of s.branches) {
          this.walkExpr(b.cond, ctx);
          this.walkBlock(b.body, inner);
        }
        if (s.orelse) this.walkBlock(s.orelse, inner);
        return;
      case "While":
        // the condition runs before every pass, so an earlier pass may have bound what it reads (W033)
        this.walkExpr(s.cond, { ...ctx, inLoop: true });
        this.walkBlock(s.body, { ...inner, inLoop: true });
        return;
      case "For":
        this.walkExpr(s.iter, ctx);
        this.bindCheck(s.target, s.targetSpan);
        this.walkBlock(s.body, { ...inner, inLoop: true });
        return;
      case "Match":
        this.walkExpr(s.subject, ctx);
        for (const c of s.cases) {
          const p = c.pattern;
          if (p.kind === "Semantic") this.checkTemplate(p.criterion, ctx);
          else if (p.kind === "ErrorBind") this.bindCheck(p.name, p.nameSpan);
          this.walkBlock(c.body, inner);
        }
        return;
      case "Choose":
        this.walkExpr(s.subject, ctx);
        this.checkTemplate(s.criterion, ctx);
        this.bindCheck(s.binding, s.bindingSpan);
        // the judge picks a label, and a label picks its first option: a second one with that label never runs
        for (const o of repeated(s.options, (p) => p.label)) this.report("W022", `option '${o.label}' is given twice in this choose; only the first of them can run`, o.labelSpan);
        for (const o of s.options) this.walkBlock(o.body, inner);
        return;
      case "Constrain":
        this.checkConstrain(s.target, s.targetSpan, s.span, ctx);
        for (const kw of s.kwargs) this.walkExpr(kw.value, ctx);
        for (const r of s.requires) this.checkTemplate(r.criterion, ctx);
        return;
      case "WithInput":
        this.walkExpr(s.expr, ctx);
        this.walkBlock(s.body, inner);
        return;
      case "Try":
        if (!s.handler && !s.finalBody) this.report("E082", "try needs an except or a finally block", s.span);
        this.walkBlock(s.body, inner);
        if (s.handler) {
          this.bindCheck(s.handler.name, s.handler.nameSpan);
          this.walkBlock(s.handler.body, inner);
        }
        if (s.finalBody) this.walkBlock(s.finalBody, inner);
        return;
      case "Raise":
        if (s.value) this.walkExpr(s.value, ctx);
        return;
      case "Return":
        if (!ctx.inDef) this.report("E080", "return outside a function", s.span);
        if (s.value) this.walkExpr(s.value, ctx);
        return;
      case "Break":
      case "Continue":
        if (!ctx.inLoop) this.report("E081", `${s.kind === "Break" ? "break" : "continue"} outside a loop`, s.span);
        return;
      case "Pass":
        return;
      case "Assign":
        this.bindCheck(s.target, s.targetSpan);
        this.walkExpr(s.value, ctx);
        return;
      case "ExprStmt":
        this.walkExpr(s.expr, ctx);
        return;
      default: {
        const never: never = s;
        return never;
      }
    }
  }

  /** set while an `export <expression>` is walked: its unknown names are W031, as for `export name` */
  private exporting = false;

  /** W032 (W031 in an export): a name that is no binding, import, function, agent or standard function. */
  private unknownName(name: string, span: Span): void {
    if (this.exporting) {
      this.report("W031", `'${name}', used in the exported expression, is never assigned in this module`, span);
      return;
    }
    const python = PYTHON_SPELLINGS.get(name);
    const hint = python ? ` (VVM writes ${python})` : "";
    this.report("W032", `unknown name '${name}': nothing assigns, imports or defines it, and it is no standard function${hint}; reaching it raises thrown`, span);
  }

  private misplaced(what: string, span: Span): void {
    this.report("E001", `${what} are only allowed at module level`, span);
  }

  private checkExport(t: ExportTarget, ctx: Ctx): void {
    switch (t.kind) {
      case "agent":
        if (this.agents.has(t.name)) return;
        // A variable that may hold a derived agent is exported as a value; reading it spares a W030 on top.
        if (this.useName(t.name, ctx)) {
          this.report("E040", `'@${t.name}' in export is a variable, not a declared or imported agent: write export ${t.name} (importers write import ${t.name})`, t.nameSpan);
        } else this.report("E040", `unknown agent '@${t.name}' in export`, t.nameSpan);
        return;
      case "name":
        if (!this.useName(t.name, ctx)) {
          if (this.agents.has(t.name)) {
            this.report("W031", `'${t.name}' is an agent, not a value: write export @${t.name} (importers use import @${t.name} either way)`, t.nameSpan);
          } else this.report("W031", `exported value '${t.name}' is never assigned in this module`, t.nameSpan);
        }
        return;
      case "expr":
        this.exporting = true;
        this.walkExpr(t.expr, ctx);
        this.exporting = false;
        return;
      default: {
        const never: never = t;
        return never;
      }
    }
  }

  /** E070: the target must be bound before the statement — earlier in the same scope, a parameter, or outer. */
  private checkConstrain(name: string, nameSpan: Span, stmtSpan: Span, ctx: Ctx): void {
    const scope = this.findScope(name, ctx);
    if (scope) this.reads.get(scope)!.add(name);
    if (scope && scope !== ctx.scope) return; // a module name or an enclosing function's local
    if (scope) {
      const before = (scope.bindingsByName.get(name) ?? []).some(
        (b) => b.kind === "param" || b.kind === "def" || b.kind === "import" || b.kind === "input" || isBefore(b.span, stmtSpan),
      );
      if (before) return;
      this.report("E070", `constrain on '${name}', which is not bound before this statement`, nameSpan);
      return;
    }
    this.report("E070", `constrain on '${name}', which is never bound`, nameSpan);
  }

  // ---------- expressions ----------

  private walkExpr(e: Expr, ctx: Ctx): void {
    switch (e.kind) {
      case "Name":
        if (!this.useName(e.name, ctx) && !isStdlibName(e.name) && !this.agents.has(e.name)) this.unknownName(e.name, e.span);
        else this.checkReadInTime(e.name, e.span, ctx);
        return;
      case "TemplateExpr":
        this.checkTemplate(e.template, ctx);
        return;
      case "AgentCall":
        this.checkAgentRef(e.agent, ctx);
        for (const a of e.args) this.walkExpr(a, ctx);
        if (e.args.length > 1) this.report("W052", "an agent call takes one input, so this call raises whenever it runs; pass a list or pack(...) to send several values", e.args[1]!.span);
        this.checkRepeatedArguments(e.kwargs);
        for (const kw of e.kwargs) {
          this.walkExpr(kw.value, ctx);
          if (!CALL_OPTIONS.has(kw.name)) {
            this.report("W050", `unknown agent-call option '${kw.name}' is ignored (options: ${[...CALL_OPTIONS].join(", ")})`, kw.nameSpan);
          } else {
            const problem = optionValueProblem(kw);
            if (problem) this.report("W051", problem, kw.value.span);
            for (const p of returnsProblems(kw)) this.report(p.code, p.message, p.span);
          }
        }
        this.checkTemplate(e.template, ctx);
        return;
      case "Predicate":
        if (e.input) this.walkExpr(e.input, ctx);
        this.checkTemplate(e.criterion, ctx);
        return;
      case "Call":
        this.walkCall(e, ctx);
        return;
      case "Binary":
      case "Logical": {
        // Long `a + b + c ...` chains nest to the left without brackets: walk that spine without recursing.
        const rights: Expr[] = [];
        let cur: Expr = e;
        while (cur.kind === "Binary" || cur.kind === "Logical") {
          rights.push(cur.right);
          cur = cur.left;
        }
        this.walkExpr(cur, ctx);
        for (let i = rights.length - 1; i >= 0; i--) this.walkExpr(rights[i], ctx);
        return;
      }
      case "Object": {
        this.checkRepeatedObjectKeys(e);
        for (const entry of e.entries) this.walkExpr(entry.value, ctx);
        return;
      }
      case "Member":
      case "Index": {
        // `a.b.c[0].d ...` likewise nests to the left.
        const indexes: Expr[] = [];
        let cur: Expr = e;
        while (cur.kind === "Member" || cur.kind === "Index") {
          if (cur.kind === "Index") indexes.push(cur.index);
          cur = cur.object;
        }
        this.walkExpr(cur, ctx);
        for (let i = indexes.length - 1; i >= 0; i--) this.walkExpr(indexes[i], ctx);
        return;
      }
      default:
        for (const c of childExprs(e)) this.walkExpr(c, ctx);
    }
  }

  private walkCall(e: Call, ctx: Ctx): void {
    const callee = e.callee;
    // `base.with(...)` on a declared agent derives an agent value: check its keys like `@base.with(...)`.
    if (callee.kind === "Member" && callee.name === "with" && callee.object.kind === "Name") {
      const name = callee.object.name;
      if (!this.isUserName(name, ctx) && this.agents.has(name)) {
        for (const a of e.args) this.walkExpr(a, ctx);
        this.checkCallSiteConfig(e.kwargs, "with", ctx);
        return;
      }
    }
    if (callee.kind === "Name" && callee.name === "pmap" && !this.isUserName("pmap", ctx)) this.notePmap(e, ctx);
    if (callee.kind === "Name" && callee.name === "pack" && !this.isUserName("pack", ctx)) {
      // pack(x) takes the key from the name written at the call; anything else raises when it runs.
      for (const a of e.args) {
        if (a.kind !== "Name") this.report("W060", "pack(...) positional arguments must be plain names; write pack(key=value) for other values", a.span);
      }
    }
    this.checkRepeatedArguments(e.kwargs);
    if (callee.kind === "Name") {
      const def = this.findScope(callee.name, ctx)?.defOnly.get(callee.name);
      if (def) this.checkArgumentsFit(e, def);
      else if (Object.hasOwn(CALLBACK_ARGS, callee.name) && !this.isUserName(callee.name, ctx)) this.checkCallbacksFit(e, callee.name as keyof typeof CALLBACK_ARGS, ctx);
    }
    for (const c of childExprs(e)) this.walkExpr(c, ctx);
  }

  /**
   * W062: a call of a def by its name whose arguments do not fit its parameters. The first misfit, in the
   * order the run binds arguments and says so (runtime/interpreter/compile.ts): too many, a keyword that is
   * no parameter or names one given by position, a parameter missing.
   */
  private checkArgumentsFit(e: Call, def: DefStmt): void {
    const params = def.params.map((p) => p.name);
    const n = params.length;
    const report = (message: string, span: Span) => this.report("W062", `${def.name}() ${message}; the call raises whenever it runs`, span);
    if (e.args.length > n) return report(`takes ${n} argument${n === 1 ? "" : "s"} but ${e.args.length} were given`, e.args[n]!.span);
    for (const kw of e.kwargs) {
      const i = params.indexOf(kw.name);
      if (i < 0) return report(`has no parameter '${kw.name}' (parameters: ${params.join(", ") || "none"})`, kw.nameSpan);
      if (i < e.args.length) return report(`gets '${kw.name}' both by position and by keyword`, kw.nameSpan);
    }
    const missing = params.slice(e.args.length).filter((p) => !e.kwargs.some((k) => k.name === p));
    if (missing.length > 0) report(`is missing the argument${missing.length === 1 ? "" : "s"} ${missing.map((p) => `'${p}'`).join(", ")}`, e.span);
  }

  /** W062: a def given by name to a standard function that calls it with arguments its parameters do not fit (map over a def of two). */
  private checkCallbacksFit(e: Call, fn: keyof typeof CALLBACK_ARGS, ctx: Ctx): void {
    const { params, fnParams } = SIGNATURES[fn];
    const passes = CALLBACK_ARGS[fn];
    for (const i of fnParams) {
      const arg = e.args[i] ?? e.kwargs.find((k) => k.name === params[i])?.value;
      if (arg?.kind !== "Name") continue;
      const def = this.findScope(arg.name, ctx)?.defOnly.get(arg.name);
      if (def === undefined || def.params.length === passes) continue;
      const name = isLambda(def.name) ? "the lambda" : `${def.name}()`;
      const n = def.params.length;
      this.report("W062", `${fn}() calls its ${params[i]} with ${passes} argument${passes === 1 ? "" : "s"}, but ${name} takes ${n}; it raises as soon as ${fn}() calls it`, arg.span);
    }
  }

  /** W022: `{"a": 1, "a": 2}` keeps the last value without a word (pack raises for the same mistake). */
  private checkRepeatedObjectKeys(e: Expr & { kind: "Object" }): void {
    for (const entry of repeated(e.entries, (x) => x.key)) this.report("W022", `key '${entry.key}' is given twice in this object; the last one is kept`, entry.keySpan);
  }

  /** W022: a keyword argument or call option given twice, which makes the call raise whenever it runs. */
  private checkRepeatedArguments(kwargs: KwArg[]): void {
    for (const kw of repeated(kwargs, (k) => k.name)) this.report("W022", `the keyword argument '${kw.name}' is given twice; the call raises when it runs`, kw.nameSpan);
  }

  private notePmap(e: Call, ctx: Ctx): void {
    const f = e.args[1] ?? e.kwargs.find((k) => k.name === "f")?.value;
    if (!f || f.kind !== "Name") return;
    // Only when the name is that function and nothing else (not reassigned to another value).
    const def = this.findScope(f.name, ctx)?.defOnly.get(f.name);
    if (def) this.pmapSites.push({ call: e, def });
  }

  private walkExprReadsOnly(e: Expr, ctx: Ctx): void {
    for (const n of namesIn(e)) this.useName(n.name, ctx);
  }

  // ---------- W030 ----------

  private reportUnused(): void {
    for (const [scope, reads] of this.reads) {
      const reported = new Set<string>();
      for (const b of scope.bindings) {
        if (b.kind !== "assign" || reported.has(b.name)) continue;
        reported.add(b.name);
        if (b.name.startsWith("_") || b.name === "it" || reads.has(b.name)) continue;
        if (scope === this.layout.module && this.env.externallyUsed.has(b.name)) continue;
        const where = scope.def ? `in '${scope.def.name}'` : "at module level";
        this.report("W030", `variable '${b.name}' is assigned ${where} but never read`, b.span);
      }
    }
  }
}

function isBefore(a: Span, b: Span): boolean {
  return a.line < b.line || (a.line === b.line && a.col < b.col);
}

/** Every variable reference in an expression (names and placeholder roots), outermost first. */
function namesIn(e: Expr): { name: string; span: Span }[] {
  const out: { name: string; span: Span }[] = [];
  const stack: Expr[] = [e];
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (x.kind === "Name") out.push({ name: x.name, span: x.span });
    if (x.kind === "TemplateExpr") for (const r of placeholderRoots(x.template)) out.push(r);
    for (const c of childExprs(x)) stack.push(c);
  }
  return out;
}

/** How many arguments each standard function that takes functions calls them with (stdlib/collections.ts, pmap.ts, refine.ts). */
const CALLBACK_ARGS = { map: 1, pmap: 1, filter: 1, reduce: 2, refine: 2 } as const;

/** The items whose key an earlier item already had (W022: a key, label or option given twice), in order. */
function repeated<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = keyOf(item);
    if (seen.has(key)) return true;
    seen.add(key);
    return false;
  });
}
