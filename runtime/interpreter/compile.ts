// Compiles one module's AST into JS closures, once. Everything that cannot suspend becomes a plain
// synchronous closure; only nodes that may reach an agent call, a judge or an unknown callee get an
// async closure (spec/semantics.md, "How the evaluator stays fast"). The two kinds compose: async nodes call sync children directly.
import type { AgentRef, DefStmt, Expr, KwArg, Span, Stmt, Template } from "../../grammar/ast.ts";
import type { ModuleInfo } from "../../src/program.ts";
import type { RunContext } from "../context.ts";
import { interpolate, renderWhole } from "../render.ts";
import {
  errorKind,
  isErrorValue,
  isFunction,
  makeError,
  obj,
  thrown,
  typeName,
  VAgent,
  VvmRaise,
  type CallEnv,
  type Site,
  type Value,
  type VFunction,
} from "../values.ts";
import { siteText } from "../trace.ts";
import { deriveAgent, inlineAgent } from "./agents.ts";
import {
  asRaise,
  BREAK,
  CONTINUE,
  Frame,
  NORMAL,
  RECURSION_LIMIT,
  RETURN,
  type Completion,
} from "./frame.ts";
import { Interrupted, POLL_MASK, ROOT_ENV } from "../abort.ts";
import { checkHeap } from "../heap.ts";
import { add, binaryOp, compare, index, member, needBool } from "./ops.ts";
import type { Scope } from "../../src/resolve/scopes.ts";
import { Analysis, asyncDefs, resolve, type ModuleNames } from "./analysis.ts";
import type { SyncWatch } from "./sync-watch.ts";

type SyncE = (f: Frame) => Value;
type AsyncE = (f: Frame) => Promise<Value>;
type CE = { async: false; run: SyncE } | { async: true; run: AsyncE };
type SyncS = (f: Frame) => Completion;
type AsyncS = (f: Frame) => Promise<Completion>;
type CS = { async: false; run: SyncS } | { async: true; run: AsyncS };
type Render = (f: Frame, input: Value) => string;

const S = (run: SyncE): CE => ({ async: false, run });
const A = (run: AsyncE): CE => ({ async: true, run });
const SS = (run: SyncS): CS => ({ async: false, run });
const AS = (run: AsyncS): CS => ({ async: true, run });
const NOOP: CS = SS(() => NORMAL);
/** Post-process an expression's value, keeping it synchronous when it was. */
const mapCE = (e: CE, g: (v: Value) => Value): CE => {
  if (!e.async) {
    const r = e.run;
    return S((f) => g(r(f)));
  }
  const r = e.run;
  return A(async (f) => g(await r(f)));
};

/** Statement-level compile context: the function scope, and whether a bare `raise` re-raises. */
interface Ctx {
  scope: Scope;
  inExcept: boolean;
}

interface CompiledDef {
  def: DefStmt;
  params: string[];
  paramIndex: Map<string, number>;
  nslots: number;
  body: CS;
  nested: { slot: number; def: DefStmt }[];
  isAsync: boolean;
}

/** How big a bound value is, for its trace event: a string's characters, a list's items, an object's fields. */
function valueSize(v: Value): { chars: number } | { items: number } | { fields: number } | Record<string, never> {
  if (typeof v === "string") return { chars: v.length };
  if (Array.isArray(v)) return { items: v.length };
  if (v instanceof Map) return { fields: v.size };
  return {};
}

export class ModuleCompiler {
  readonly moduleScope: Scope;
  /** the `@` namespace, filled while the module loads (imports, then declarations) */
  readonly agents = new Map<string, VAgent>();
  private readonly names: ModuleNames;
  private readonly functions: Map<DefStmt, Scope>;
  private readonly analysis: Analysis;
  private readonly compiled = new Map<DefStmt, CompiledDef>();

  constructor(
    readonly info: ModuleInfo,
    private readonly ctx: RunContext,
    private readonly builtins: Map<string, VFunction>,
    /** counts the run's function calls (a long stretch without an await cannot notice Ctrl-C) */
    readonly watch: SyncWatch,
  ) {
    this.names = { agents: info.layout.agents, builtins: new Set(builtins.keys()) };
    this.moduleScope = info.layout.module;
    this.functions = info.layout.functions;
    this.analysis = new Analysis(this.names, asyncDefs(this.functions, this.names));
  }

  site(span: Span): Site {
    return { path: this.info.path, span };
  }

  /** A fresh frame for the module's top level. */
  moduleFrame(): Frame {
    return new Frame(new Array(this.moduleScope.slots.size), null, null, 0, this.ctx.signal);
  }

  /** Top-level statements (declarations are no-ops here: the loader hoists them). */
  compileModuleBody(): CS {
    return this.block(this.info.program.body, { scope: this.moduleScope, inExcept: false }, true);
  }

  /** Bind the module's hoisted `def`s into its frame. */
  hoistDefs(f: Frame): void {
    for (const d of this.moduleScope.defs) f.s[this.slotOf(this.moduleScope, d.name)] = this.makeFunction(d, f);
  }

  slotOf(scope: Scope, name: string): number {
    const i = scope.slots.get(name);
    if (i === undefined) throw new Error(`internal: no slot for '${name}'`);
    return i;
  }

  // ---------------- functions ----------------

  private compileDef(def: DefStmt): CompiledDef {
    let c = this.compiled.get(def);
    if (c) return c;
    const scope = this.functions.get(def);
    if (!scope) throw new Error(`internal: no scope for def ${def.name}`);
    const params = def.params.map((p) => p.name);
    const paramIndex = new Map(params.map((p, i) => [p, i] as [string, number]));
    c = {
      def,
      params,
      paramIndex,
      nslots: scope.slots.size,
      body: NOOP,
      nested: scope.defs.map((d) => ({ slot: this.slotOf(scope, d.name), def: d })),
      isAsync: this.analysis.asyncSet.has(def),
    };
    this.compiled.set(def, c);
    c.body = this.block(def.body, { scope, inExcept: false });
    if (c.body.async && !c.isAsync) throw new Error(`internal: def ${def.name} compiled async but analysed sync`);
    return c;
  }

  makeFunction(def: DefStmt, closure: Frame): VFunction {
    return new UserFunction(this.compileDef(def), closure, this);
  }

  // ---------------- expressions ----------------

  expr(e: Expr, scope: Scope): CE {
    switch (e.kind) {
      case "Unit":
        return S(() => null);
      case "Bool":
      case "Number":
      case "String": {
        const v = e.value;
        return S(() => v);
      }
      case "TemplateExpr": {
        const render = this.template(e.template, scope, (v) => renderWhole(v));
        const site = this.site(e.span);
        // a text too long for a string (or a value whose JSON is) is `thrown` here, where it is made
        return S((f) => {
          try {
            return render(f, f.it);
          } catch (err) {
            throw (err instanceof RangeError && asRaise(err, site)) || err;
          }
        });
      }
      case "Name":
        return S(this.name(e.name, scope, e.span));
      case "It":
        return S((f) => f.it);
      case "List":
        return this.list(e.items.map((x) => this.expr(x, scope)));
      case "Object":
        return this.object(
          e.entries.map((x) => x.key),
          e.entries.map((x) => this.expr(x.value, scope)),
        );
      case "Binary":
        return this.binary(e.op, this.expr(e.left, scope), this.expr(e.right, scope), this.site(e.span));
      case "Logical":
        return this.logical(e.op, this.expr(e.left, scope), this.expr(e.right, scope), this.site(e.span));
      case "Not": {
        const o = this.expr(e.operand, scope);
        const site = this.site(e.span);
        if (!o.async) return S((f) => !needBool(o.run(f), "the operand of 'not'", site));
        return A(async (f) => !needBool(await o.run(f), "the operand of 'not'", site));
      }
      case "Member": {
        const o = this.expr(e.object, scope);
        const name = e.name;
        const site = this.site(e.nameSpan);
        if (!o.async) return S((f) => member(o.run(f), name, site));
        return A(async (f) => member(await o.run(f), name, site));
      }
      case "Index": {
        const o = this.expr(e.object, scope);
        const i = this.expr(e.index, scope);
        const site = this.site(e.span);
        if (!o.async && !i.async) return S((f) => index(o.run(f), i.run(f), site));
        return A(async (f) => {
          const ov = o.async ? await o.run(f) : o.run(f);
          return index(ov, i.async ? await i.run(f) : i.run(f), site);
        });
      }
      case "Call":
        return this.call(e, scope);
      case "AgentCall":
        return this.agentCall(e, scope);
      case "Predicate":
        return this.predicate(e.criterion, e.input ? this.expr(e.input, scope) : null, scope, this.site(e.span));
      default: {
        const never: never = e;
        return never;
      }
    }
  }

  /** Reads a name (spec/language.md §6): local, enclosing function, module, agent namespace, standard library. */
  name(name: string, scope: Scope, span: Span): SyncE {
    const r = resolve(scope, name, this.names);
    const site = this.site(span);
    switch (r.kind) {
      case "slot": {
        const i = r.index;
        if (r.scope.parent === null) {
          // Module level: a module variable that has no value yet falls back to an agent or builtin of that name.
          // (`undefined` marks an empty slot; unit `()` is `null`, a value like any other: no `??` here.)
          const fallback = this.fallback(name, site);
          if (r.depth === 0) return (f) => orElse(f.s[i], fallback);
          const d = r.depth;
          return (f) => orElse(up(f, d).s[i], fallback);
        }
        const fn = r.scope.def?.name ?? "?";
        const unbound = () => {
          throw thrown(`unbound local '${name}': it is assigned in ${fn}() but has no value yet`, site);
        };
        if (r.depth === 0) return (f) => orElse(f.s[i], unbound);
        if (r.depth === 1) return (f) => orElse((f.p as Frame).s[i], unbound);
        const d = r.depth;
        return (f) => orElse(up(f, d).s[i], unbound);
      }
      case "agent":
      case "builtin":
      case "none": {
        const get = this.fallback(name, site);
        return () => get();
      }
      default: {
        const never: never = r;
        return never;
      }
    }
  }

  private fallback(name: string, site: Site): () => Value {
    const builtin = this.builtins.get(name);
    const agents = this.agents;
    const isAgent = this.names.agents.has(name);
    return () => {
      const a = isAgent ? agents.get(name) : undefined;
      if (a) return a;
      if (builtin) return builtin;
      throw thrown(`unbound name '${name}'`, site);
    };
  }

  /** A writer for `name` where it resolves (constrain rebinds in place). */
  private writer(name: string, scope: Scope, site: Site): (f: Frame, v: Value) => void {
    const r = resolve(scope, name, this.names);
    if (r.kind !== "slot") {
      return () => {
        throw thrown(`cannot constrain '${name}': it is not a variable`, site);
      };
    }
    const d = r.depth;
    const i = r.index;
    return (f, v) => {
      up(f, d).s[i] = v;
    };
  }

  private list(items: CE[]): CE {
    const n = items.length;
    if (items.every((x) => !x.async)) {
      const runs = items.map((x) => x.run as SyncE);
      return S((f) => {
        const out: Value[] = new Array(n);
        for (let i = 0; i < n; i++) out[i] = (runs[i] as SyncE)(f);
        return out;
      });
    }
    return A(async (f) => {
      const out: Value[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const c = items[i] as CE;
        out[i] = c.async ? await c.run(f) : c.run(f);
      }
      return out;
    });
  }

  private object(keys: string[], values: CE[]): CE {
    const n = keys.length;
    if (values.every((x) => !x.async)) {
      const runs = values.map((x) => x.run as SyncE);
      return S((f) => {
        const out = new Map<string, Value>();
        for (let i = 0; i < n; i++) out.set(keys[i] as string, (runs[i] as SyncE)(f));
        return out;
      });
    }
    return A(async (f) => {
      const out = new Map<string, Value>();
      for (let i = 0; i < n; i++) {
        const c = values[i] as CE;
        out.set(keys[i] as string, c.async ? await c.run(f) : c.run(f));
      }
      return out;
    });
  }

  private binary(op: Expr & { kind: "Binary" } extends { op: infer O } ? O : never, l: CE, r: CE, site: Site): CE {
    if (!l.async && !r.async) {
      const lr = l.run;
      const rr = r.run;
      switch (op) {
        case "+":
          return S((f) => {
            const a = lr(f);
            const b = rr(f);
            if (typeof a === "number" && typeof b === "number") {
              const x = a + b;
              if (x - x === 0) return x; // finite
            }
            return add(a, b, site);
          });
        case "-":
          return S((f) => {
            const a = lr(f);
            const b = rr(f);
            if (typeof a === "number" && typeof b === "number") {
              const x = a - b;
              if (x - x === 0) return x;
            }
            return binaryOp("-", a, b, site);
          });
        case "<":
        case "<=":
        case ">":
        case ">=":
          return S((f) => {
            const a = lr(f);
            const b = rr(f);
            if (typeof a === "number" && typeof b === "number") {
              return op === "<" ? a < b : op === "<=" ? a <= b : op === ">" ? a > b : a >= b;
            }
            return compare(op, a, b, site);
          });
        case "==":
        case "!=":
          return S((f) => binaryOp(op, lr(f), rr(f), site));
        default: {
          const never: never = op;
          return never;
        }
      }
    }
    return A(async (f) => {
      const a = l.async ? await l.run(f) : l.run(f);
      const b = r.async ? await r.run(f) : r.run(f);
      return binaryOp(op, a, b, site);
    });
  }

  private logical(op: "and" | "or", l: CE, r: CE, site: Site): CE {
    const what = `the operands of '${op}'`;
    const stopOn = op === "or"; // `or` stops at true, `and` at false
    if (!l.async && !r.async) {
      const lr = l.run;
      const rr = r.run;
      return S((f) => {
        const a = needBool(lr(f), what, site);
        if (a === stopOn) return a;
        return needBool(rr(f), what, site);
      });
    }
    return A(async (f) => {
      const a = needBool(l.async ? await l.run(f) : l.run(f), what, site);
      if (a === stopOn) return a;
      return needBool(r.async ? await r.run(f) : r.run(f), what, site);
    });
  }

  private call(e: Expr & { kind: "Call" }, scope: Scope): CE {
    const site = this.site(e.span);
    if (e.callee.kind === "Name" && e.callee.name === "pack" && resolve(scope, "pack", this.names).kind === "builtin") {
      return this.pack(e, scope, site);
    }
    const callee = this.expr(e.callee, scope);
    const args = e.args.map((a) => this.expr(a, scope));
    const kwNames = e.kwargs.map((k) => k.name);
    const kws = e.kwargs.map((k) => this.expr(k.value, scope));
    const nargs = args.length;
    const nkw = kws.length;
    const allSync = !callee.async && args.every((a) => !a.async) && kws.every((k) => !k.async);

    if (allSync && this.analysis.callIsSync(e, scope)) {
      const cr = callee.run as SyncE;
      const ar = args.map((a) => a.run as SyncE);
      const kr = kws.map((k) => k.run as SyncE);
      const a0 = ar[0];
      const a1 = ar[1];
      return S((f) => {
        const fn = cr(f);
        let argv: Value[];
        if (nargs === 2) argv = [(a0 as SyncE)(f), (a1 as SyncE)(f)];
        else if (nargs === 1) argv = [(a0 as SyncE)(f)];
        else {
          argv = new Array(nargs);
          for (let i = 0; i < nargs; i++) argv[i] = (ar[i] as SyncE)(f);
        }
        let kw: Map<string, Value> | null = null;
        if (nkw > 0) {
          kw = new Map();
          for (let i = 0; i < nkw; i++) setKw(kw, kwNames[i] as string, (kr[i] as SyncE)(f), site);
        }
        if (fn instanceof UserFunction) return fn.callSync(argv, kw, f.it, site, f);
        if (!isFunction(fn)) throw notCallable(fn, site);
        const r = fn.callSync ? fn.callSync(argv, kw, f.it, site, f) : fn.call(argv, kw, f.it, site, f);
        if (r instanceof Promise) throw new Error(`internal: call to ${fn.name} suspended where the analysis said it could not`);
        return r;
      });
    }
    return A(async (f) => {
      const fn = callee.async ? await callee.run(f) : callee.run(f);
      const argv: Value[] = new Array(nargs);
      for (let i = 0; i < nargs; i++) {
        const c = args[i] as CE;
        argv[i] = c.async ? await c.run(f) : c.run(f);
      }
      let kw: Map<string, Value> | null = null;
      if (nkw > 0) {
        kw = new Map();
        for (let i = 0; i < nkw; i++) {
          const c = kws[i] as CE;
          setKw(kw, kwNames[i] as string, c.async ? await c.run(f) : c.run(f), site);
        }
      }
      if (!isFunction(fn)) throw notCallable(fn, site);
      const r = !fn.isAsync && fn.callSync ? fn.callSync(argv, kw, f.it, site, f) : fn.call(argv, kw, f.it, site, f);
      if (!(r instanceof Promise)) return r;
      const v = await r;
      if (f.signal.aborted) throw new Interrupted();
      return v;
    });
  }

  /** `pack(a, b, k=v)`: positional arguments are keyed by the names written at the call. */
  private pack(e: Expr & { kind: "Call" }, scope: Scope, site: Site): CE {
    const keys: string[] = [];
    const values: CE[] = [];
    for (const a of e.args) {
      if (a.kind !== "Name") {
        const s = this.site(a.span);
        return S(() => {
          throw thrown("pack()'s positional arguments must be plain names, such as pack(draft, notes); use pack(key=value) for anything else", s);
        });
      }
      keys.push(a.name);
      values.push(this.expr(a, scope));
    }
    for (const k of e.kwargs) {
      keys.push(k.name);
      values.push(this.expr(k.value, scope));
    }
    const dup = keys.find((k, i) => keys.indexOf(k) !== i);
    if (dup !== undefined) {
      return S(() => {
        throw thrown(`pack() got '${dup}' twice`, site);
      });
    }
    return this.object(keys, values);
  }

  // ---------------- templates, agents, judges ----------------

  /** `show` renders one placeholder's value, given the template's input: `interpolate` in calls and judges. */
  template(t: Template, scope: Scope, show: (v: Value, input: Value) => string = interpolate): Render {
    const pieces: (string | Render)[] = [];
    for (const p of t.parts) {
      switch (p.kind) {
        case "text":
          pieces.push(p.value);
          break;
        case "input":
          pieces.push((_f, input) => show(input, input));
          break;
        case "path": {
          const [first, ...rest] = p.names;
          // `{it}` / `{it.field}` (dialect): the current `it`, as the expression `it` would read it
          const head: SyncE = first === "it" ? (f) => f.it : this.name(first as string, scope, p.span);
          const site = this.site(p.span);
          pieces.push((f, input) => {
            let v = head(f);
            for (const n of rest) v = member(v, n, site);
            return show(v, input);
          });
          break;
        }
        default: {
          const never: never = p;
          return never;
        }
      }
    }
    if (pieces.every((p) => typeof p === "string")) {
      const text = pieces.join("");
      return () => text;
    }
    return (f, input) => {
      let out = "";
      for (const p of pieces) out += typeof p === "string" ? p : p(f, input);
      return out;
    };
  }

  private kwargs(kwargs: KwArg[], scope: Scope, site: Site): CE {
    const names = kwargs.map((k) => k.name);
    const values = kwargs.map((k) => this.expr(k.value, scope));
    const build = async (f: Frame): Promise<Value> => {
      const m = new Map<string, Value>();
      for (let i = 0; i < names.length; i++) {
        const c = values[i] as CE;
        setKw(m, names[i] as string, c.async ? await c.run(f) : c.run(f), site);
      }
      return m;
    };
    if (values.some((v) => v.async)) return A(build);
    return S((f) => {
      const m = new Map<string, Value>();
      for (let i = 0; i < names.length; i++) setKw(m, names[i] as string, (values[i] as CE & { async: false }).run(f), site);
      return m;
    });
  }

  /** Evaluates to the VAgent an `@...` reference denotes (spec/language.md §3). */
  agentRef(ref: AgentRef, scope: Scope): CE {
    const site = this.site(ref.span);
    if (ref.kind === "InlineAgent") {
      const kw = this.kwargs(ref.kwargs, scope, site);
      if (!kw.async) return S((f) => inlineAgent(kw.run(f) as Map<string, Value>, site));
      return A(async (f) => inlineAgent((await kw.run(f)) as Map<string, Value>, site));
    }
    const name = ref.name;
    let base: SyncE;
    if (this.names.agents.has(name)) {
      const agents = this.agents;
      base = () => {
        const a = agents.get(name);
        if (!a) throw thrown(`agent @${name} is not loaded yet`, site);
        return a;
      };
    } else {
      const read = this.name(name, scope, ref.nameSpan);
      base = (f) => {
        const v = read(f);
        if (v instanceof VAgent) return v;
        throw thrown(`@${name}: '${name}' holds ${typeName(v)}, not an agent`, site);
      };
    }
    if (ref.with === null) return S(base);
    const kw = this.kwargs(ref.with, scope, site);
    if (!kw.async) return S((f) => deriveAgent(base(f) as VAgent, kw.run(f) as Map<string, Value>, site));
    return A(async (f) => {
      const a = base(f) as VAgent;
      return deriveAgent(a, (await kw.run(f)) as Map<string, Value>, site);
    });
  }

  /** `target`: the variable an assignment binds the call's result to (filesystem state names the binding after it) */
  private agentCall(e: Expr & { kind: "AgentCall" }, scope: Scope, target?: string): CE {
    const site = this.site(e.span);
    const agent = this.agentRef(e.agent, scope);
    const extra = e.args.length > 1 ? this.site((e.args[1] as Expr).span) : null;
    const input = e.args.length > 0 ? this.expr(e.args[0] as Expr, scope) : null;
    const options = this.kwargs(e.kwargs, scope, site);
    const render = this.template(e.template, scope);
    const agents = this.ctx.agents;
    return A(async (f) => {
      if (extra) throw thrown("an agent call takes one input; pass a list or pack(...) to send several values", extra);
      const a = (agent.async ? await agent.run(f) : agent.run(f)) as VAgent;
      const inp = input === null ? f.it : input.async ? await input.run(f) : input.run(f);
      const opts = (options.async ? await options.run(f) : options.run(f)) as Map<string, Value>;
      const task = render(f, inp);
      const reply = await agents.call({ agent: a, task, input: inp, options: opts, site, target, signal: f.signal });
      if (f.signal.aborted) throw new Interrupted();
      return reply;
    });
  }

  private predicate(criterion: Template, input: CE | null, scope: Scope, site: Site): CE {
    const render = this.template(criterion, scope);
    const agents = this.ctx.agents;
    return A(async (f) => {
      const inp = input === null ? f.it : input.async ? await input.run(f) : input.run(f);
      const text = render(f, inp);
      const verdict = await agents.judge({ kind: "predicate", criterion: text, input: inp, site, signal: f.signal });
      if (f.signal.aborted) throw new Interrupted();
      return verdict;
    });
  }

  // ---------------- statements ----------------

  /** A block's statements in order; `top`: the module's own, each of which names itself in a RangeError it ends with. */
  block(stmts: Stmt[], c: Ctx, top = false): CS {
    const parts = stmts.map((s) => this.traced(s, top ? this.sited(s, this.stmt(s, c)) : this.stmt(s, c))).filter((s) => s !== NOOP);
    if (parts.length === 0) return NOOP;
    if (parts.length === 1) return parts[0] as CS;
    const n = parts.length;
    if (parts.every((p) => !p.async)) {
      const runs = parts.map((p) => p.run as SyncS);
      return SS((f) => {
        for (let i = 0; i < n; i++) {
          const code = (runs[i] as SyncS)(f);
          if (code !== NORMAL) return code;
        }
        return NORMAL;
      });
    }
    return AS(async (f) => {
      for (let i = 0; i < n; i++) {
        const p = parts[i] as CS;
        const code = p.async ? await p.run(f) : p.run(f);
        if (code !== NORMAL) return code;
      }
      return NORMAL;
    });
  }

  /**
   * What is told when `name` is bound at `span` (an assignment, a `for` target, an `except` name): the
   * narrator (`--narrate`, a preview of the value on the terminal) and a `binding` trace event (the
   * value's type and size: a trace file carries no reply text). Null when neither is on, decided
   * statically, so a run without them pays nothing.
   */
  private bindingHook(name: string, span: Span): ((v: Value) => void) | null {
    const { narrator, trace } = this.ctx;
    if (!narrator && !trace.enabled) return null;
    const site = this.site(span);
    const where = siteText(site.path, site.span);
    return (v) => {
      narrator?.binding(name, v, site);
      if (trace.enabled) trace.emit({ type: "binding", name, value_type: typeName(v), ...valueSize(v), site: where });
    };
  }

  /** `body`, first telling `hook` the value slot `slot` holds as it starts (a loop's item, a caught error). */
  private toldOnEntry(body: CS, slot: number, hook: ((v: Value) => void) | null): CS {
    if (hook === null) return body;
    if (!body.async) {
      const r = body.run;
      return SS((f) => {
        hook(f.s[slot] as Value);
        return r(f);
      });
    }
    const r = body.run;
    return AS((f) => {
      hook(f.s[slot] as Value);
      return r(f);
    });
  }

  /**
   * A module-level statement that ends in a RangeError (a string or list too large, a value too deep to walk)
   * raises `thrown` at the statement. Inside a function the call does this at its call site (callSync); here
   * nothing else would, and the error would have no position.
   */
  private sited(s: Stmt, cs: CS): CS {
    if (cs === NOOP) return cs;
    const site = this.site(s.span);
    const r = cs.run;
    if (!cs.async) {
      return SS((f) => {
        try {
          return (r as SyncS)(f);
        } catch (err) {
          throw (err instanceof RangeError && asRaise(err, site)) || err;
        }
      });
    }
    return AS(async (f) => {
      try {
        return await r(f);
      } catch (err) {
        throw (err instanceof RangeError && asRaise(err, site)) || err;
      }
    });
  }

  /** With `--trace`, each statement emits a `statement` event (kind and `path:line:col`) as it starts. */
  private traced(s: Stmt, cs: CS): CS {
    const trace = this.ctx.trace;
    if (!trace.enabled || cs === NOOP) return cs;
    const site = siteText(this.info.path, s.span);
    const kind = s.kind;
    if (!cs.async) {
      const r = cs.run;
      return SS((f) => {
        trace.emit({ type: "statement", kind, site });
        return r(f);
      });
    }
    const r = cs.run;
    return AS((f) => {
      trace.emit({ type: "statement", kind, site });
      return r(f);
    });
  }

  stmt(s: Stmt, c: Ctx): CS {
    switch (s.kind) {
      case "AgentDecl":
      case "InputDecl":
      case "Def":
      case "SkillImport":
      case "FromImport":
      case "Export":
      case "Pass":
        return NOOP; // declarations are hoisted by the loader (inputs too); exports are materialised at the end
      case "Break":
        return SS(() => BREAK);
      case "Continue":
        return SS(() => CONTINUE);
      case "Assign": {
        let v = s.value.kind === "AgentCall" ? this.agentCall(s.value, c.scope, s.target) : this.expr(s.value, c.scope);
        if (s.target === "it") throw new Error("internal: assignment to it reached the interpreter (E060)");
        const i = this.slotOf(c.scope, s.target);
        // `security = base.with(...)`: the derived agent takes the variable's name, so sim replies, script
        // rules, traces and memory provenance say `security`. Decided statically: other assignments pay nothing.
        if (s.value.kind === "Call" && s.value.callee.kind === "Member" && s.value.callee.name === "with") {
          v = mapCE(v, (x) => (x instanceof VAgent ? new VAgent(s.target, x.config, x.site, x.bases) : x));
        }
        // --narrate and --trace: the binding is told as it is made
        const told = this.bindingHook(s.target, s.span);
        if (told) {
          v = mapCE(v, (x) => {
            told(x);
            return x;
          });
        }
        if (!v.async) {
          const vr = v.run;
          return SS((f) => {
            f.s[i] = vr(f);
            return NORMAL;
          });
        }
        return AS(async (f) => {
          f.s[i] = await v.run(f);
          return NORMAL;
        });
      }
      case "ExprStmt": {
        const v = this.expr(s.expr, c.scope);
        if (!v.async) {
          const vr = v.run;
          return SS((f) => {
            vr(f);
            return NORMAL;
          });
        }
        return AS(async (f) => {
          await v.run(f);
          return NORMAL;
        });
      }
      case "Return": {
        if (s.value === null) {
          return SS((f) => {
            f.ret = null;
            return RETURN;
          });
        }
        const v = this.expr(s.value, c.scope);
        if (!v.async) {
          const vr = v.run;
          return SS((f) => {
            f.ret = vr(f);
            return RETURN;
          });
        }
        return AS(async (f) => {
          f.ret = await v.run(f);
          return RETURN;
        });
      }
      case "Raise":
        return this.raise(s, c);
      case "If":
        return this.ifStmt(s, c);
      case "While":
        return this.whileStmt(s, c);
      case "For":
        return this.forStmt(s, c);
      case "Match":
        return this.match(s, c);
      case "Choose":
        return this.choose(s, c);
      case "Constrain":
        return this.constrain(s, c);
      case "WithInput":
        return this.withInput(s, c);
      case "Try":
        return this.tryStmt(s, c);
      default: {
        const never: never = s;
        return never;
      }
    }
  }

  private raise(s: Stmt & { kind: "Raise" }, c: Ctx): CS {
    const site = this.site(s.span);
    if (s.value === null) {
      // Bare raise: the value the enclosing `except` caught, or an empty `thrown` outside any handler.
      if (c.inExcept) {
        return SS((f) => {
          throw new VvmRaise(f.caught ?? null, site);
        });
      }
      return SS(() => {
        throw thrown("", site);
      });
    }
    const v = this.expr(s.value, c.scope);
    if (!v.async) {
      const vr = v.run;
      return SS((f) => {
        throw raiseOf(vr(f), site);
      });
    }
    return AS(async (f) => {
      throw raiseOf(await v.run(f), site);
    });
  }

  private ifStmt(s: Stmt & { kind: "If" }, c: Ctx): CS {
    const conds = s.branches.map((b) => this.expr(b.cond, c.scope));
    const sites = s.branches.map((b) => this.site(b.cond.span));
    const bodies = s.branches.map((b) => this.block(b.body, c));
    const orelse = s.orelse ? this.block(s.orelse, c) : NOOP;
    const n = conds.length;
    if (conds.every((x) => !x.async) && bodies.every((x) => !x.async) && !orelse.async) {
      const cr = conds.map((x) => x.run as SyncE);
      const br = bodies.map((x) => x.run as SyncS);
      const er = orelse.run as SyncS;
      if (n === 1) {
        const c0 = cr[0] as SyncE;
        const b0 = br[0] as SyncS;
        const site = sites[0] as Site;
        return SS((f) => {
          const v = c0(f);
          if (v === true) return b0(f);
          if (v === false) return er(f);
          throw thrown(`an if condition must be true or false, got ${typeName(v)}`, site);
        });
      }
      return SS((f) => {
        for (let i = 0; i < n; i++) {
          if (needBool((cr[i] as SyncE)(f), "an if condition", sites[i] as Site)) return (br[i] as SyncS)(f);
        }
        return er(f);
      });
    }
    return AS(async (f) => {
      for (let i = 0; i < n; i++) {
        const cond = conds[i] as CE;
        if (needBool(cond.async ? await cond.run(f) : cond.run(f), "an if condition", sites[i] as Site)) {
          const b = bodies[i] as CS;
          return b.async ? b.run(f) : b.run(f);
        }
      }
      return orelse.async ? orelse.run(f) : orelse.run(f);
    });
  }

  /**
   * Loops are always async statements: their iterations run synchronously when the condition and body
   * cannot suspend, but every POLL_MASK+1 iterations they check the abort signal and, once a time slice
   * has passed, yield to the event loop so a Ctrl-C (delivered through it) can be noticed at all.
   */
  private whileStmt(s: Stmt & { kind: "While" }, c: Ctx): CS {
    const cond = this.expr(s.cond, c.scope);
    const body = this.block(s.body, c);
    const site = this.site(s.cond.span);
    if (!cond.async && !body.async) {
      const cr = cond.run;
      const br = body.run;
      return AS(async (f) => {
        let slice = sliceEnd();
        for (let n = 1; ; n++) {
          if ((n & POLL_MASK) === 0) slice = await poll(f, slice, site);
          const v = cr(f);
          if (v !== true) {
            if (v === false) return NORMAL;
            needBool(v, "a while condition", site);
          }
          const code = br(f);
          if (code === BREAK) return NORMAL;
          if (code === RETURN) return code;
        }
      });
    }
    return AS(async (f) => {
      let slice = sliceEnd();
      for (let n = 1; ; n++) {
        if ((n & POLL_MASK) === 0) slice = await poll(f, slice, site);
        if (!needBool(cond.async ? await cond.run(f) : cond.run(f), "a while condition", site)) return NORMAL;
        const code = body.async ? await body.run(f) : body.run(f);
        if (code === BREAK) return NORMAL;
        if (code === RETURN) return code;
      }
    });
  }

  private forStmt(s: Stmt & { kind: "For" }, c: Ctx): CS {
    const iter = this.expr(s.iter, c.scope);
    const slot = this.slotOf(c.scope, s.target);
    const body = this.toldOnEntry(this.block(s.body, c), slot, this.bindingHook(s.target, s.targetSpan));
    const site = this.site(s.iter.span);
    const items = (v: Value): Value[] => {
      if (Array.isArray(v)) return v;
      throw thrown(`for needs a list to iterate, got ${typeName(v)}`, site);
    };
    if (!body.async) {
      const br = body.run;
      return AS(async (f) => {
        const xs = items(iter.async ? await iter.run(f) : iter.run(f));
        let slice = sliceEnd();
        for (let n = 0; n < xs.length; n++) {
          if ((n & POLL_MASK) === POLL_MASK) slice = await poll(f, slice, site);
          f.s[slot] = xs[n] as Value;
          const code = br(f);
          if (code === BREAK) return NORMAL;
          if (code === RETURN) return code;
        }
        return NORMAL;
      });
    }
    return AS(async (f) => {
      const xs = items(iter.async ? await iter.run(f) : iter.run(f));
      let slice = sliceEnd();
      for (let n = 0; n < xs.length; n++) {
        if ((n & POLL_MASK) === POLL_MASK) slice = await poll(f, slice, site);
        f.s[slot] = xs[n] as Value;
        const code = await body.run(f);
        if (code === BREAK) return NORMAL;
        if (code === RETURN) return code;
      }
      return NORMAL;
    });
  }

  private match(s: Stmt & { kind: "Match" }, c: Ctx): CS {
    const subject = this.expr(s.subject, c.scope);
    const agents = this.ctx.agents;
    type Arm = { test: ((v: Value) => boolean) | null; judge: Render | null; site: Site; bind: number; body: CS };
    const arms: Arm[] = s.cases.map((k) => {
      const p = k.pattern;
      const site = this.site(p.span);
      const body = this.block(k.body, c);
      switch (p.kind) {
        case "Wildcard":
          return { test: () => true, judge: null, site, bind: -1, body };
        case "ErrorAny":
          return { test: isErrorValue, judge: null, site, bind: -1, body };
        case "ErrorKind": {
          const want = p.errorKind;
          return { test: (v: Value) => isErrorValue(v) && errorKind(v) === want, judge: null, site, bind: -1, body };
        }
        case "ErrorBind":
          return { test: isErrorValue, judge: null, site, bind: this.slotOf(c.scope, p.name), body };
        case "Semantic":
          return { test: null, judge: this.template(p.criterion, c.scope), site, bind: -1, body };
        default: {
          const never: never = p;
          return never;
        }
      }
    });
    const n = arms.length;
    if (!subject.async && arms.every((a) => a.test && !a.body.async)) {
      const sr = subject.run;
      return SS((f) => {
        const v = sr(f);
        const old = f.it;
        f.it = v;
        try {
          for (let i = 0; i < n; i++) {
            const arm = arms[i] as Arm;
            if ((arm.test as (v: Value) => boolean)(v)) {
              if (arm.bind >= 0) f.s[arm.bind] = v;
              return (arm.body.run as SyncS)(f);
            }
          }
          return NORMAL;
        } finally {
          f.it = old;
        }
      });
    }
    return AS(async (f) => {
      const v = subject.async ? await subject.run(f) : subject.run(f);
      const old = f.it;
      f.it = v;
      try {
        for (let i = 0; i < n; i++) {
          const arm = arms[i] as Arm;
          let hit: boolean;
          if (arm.test) hit = arm.test(v);
          else {
            const criterion = (arm.judge as Render)(f, v);
            hit = await agents.judge({ kind: "case", criterion, input: v, site: arm.site, signal: f.signal });
            if (f.signal.aborted) throw new Interrupted();
          }
          if (hit) {
            if (arm.bind >= 0) f.s[arm.bind] = v;
            return arm.body.async ? await arm.body.run(f) : arm.body.run(f);
          }
        }
        return NORMAL;
      } finally {
        f.it = old;
      }
    });
  }

  private choose(s: Stmt & { kind: "Choose" }, c: Ctx): CS {
    const subject = this.expr(s.subject, c.scope);
    const render = this.template(s.criterion, c.scope);
    const labels = s.options.map((o) => o.label);
    const bodies = s.options.map((o) => this.block(o.body, c));
    const slot = this.slotOf(c.scope, s.binding);
    const site = this.site(s.span);
    const agents = this.ctx.agents;
    return AS(async (f) => {
      const v = subject.async ? await subject.run(f) : subject.run(f);
      const old = f.it;
      f.it = v;
      try {
        const criterion = render(f, v);
        const label = await agents.choose({ criterion, input: v, labels: [...labels], site, signal: f.signal });
        if (f.signal.aborted) throw new Interrupted();
        const i = labels.indexOf(label);
        if (i < 0) throw thrown(`choose: the judge answered "${label}", which is not one of the options (${labels.join(", ")})`, site);
        f.s[slot] = label;
        const b = bodies[i] as CS;
        return b.async ? await b.run(f) : b.run(f);
      } finally {
        f.it = old;
      }
    });
  }

  private constrain(s: Stmt & { kind: "Constrain" }, c: Ctx): CS {
    const site = this.site(s.span);
    const read = this.name(s.target, c.scope, s.targetSpan);
    const write = this.writer(s.target, c.scope, site);
    const hints = this.kwargs(s.kwargs, c.scope, site);
    const reqs = s.requires.map((r) => ({ render: this.template(r.criterion, c.scope), site: this.site(r.span) }));
    const agents = this.ctx.agents;
    return AS(async (f) => {
      const v = read(f);
      // attempts/time/budget are hints for refinement loops (spec/language.md §8.3): evaluated, never acted on.
      if (hints.async) await hints.run(f);
      else hints.run(f);
      const requirements: Value[] = [];
      const violations: Value[] = [];
      const old = f.it;
      f.it = v;
      try {
        for (const r of reqs) {
          const criterion = r.render(f, v);
          requirements.push(criterion);
          const ok = await agents.judge({ kind: "require", criterion, input: v, site: r.site, signal: f.signal });
          if (f.signal.aborted) throw new Interrupted();
          if (!ok) violations.push(criterion);
        }
      } finally {
        f.it = old;
      }
      if (violations.length > 0) {
        write(f, makeError("constraint_violation", "Constraints not satisfied", obj({ value: v, violations, requirements })));
      }
      return NORMAL;
    });
  }

  private withInput(s: Stmt & { kind: "WithInput" }, c: Ctx): CS {
    const e = this.expr(s.expr, c.scope);
    const body = this.block(s.body, c);
    if (!e.async && !body.async) {
      const er = e.run;
      const br = body.run;
      return SS((f) => {
        const v = er(f);
        const old = f.it;
        f.it = v;
        try {
          return br(f);
        } finally {
          f.it = old;
        }
      });
    }
    return AS(async (f) => {
      const v = e.async ? await e.run(f) : e.run(f);
      const old = f.it;
      f.it = v;
      try {
        return body.async ? await body.run(f) : body.run(f);
      } finally {
        f.it = old;
      }
    });
  }

  /**
   * try/except/finally (spec/language.md §10): `except` sees raises only; `finally` always runs (not on Ctrl-C);
   * a raise in `finally` replaces what was propagating, and a return/break/continue there wins over both.
   * dropReturn: while `finally` runs, the function's return value is what it was when the `try` began, so a
   * `return` in flight that a raise, `break` or `continue` there cancels is never the function's result
   * (falling off the end later returns `()`); only a `finally` that completes normally puts it back.
   */
  private tryStmt(s: Stmt & { kind: "Try" }, c: Ctx): CS {
    const site = this.site(s.span);
    const body = this.block(s.body, c);
    const errSlot = s.handler ? this.slotOf(c.scope, s.handler.name) : -1;
    const handler = s.handler ? this.toldOnEntry(this.block(s.handler.body, { scope: c.scope, inExcept: true }), errSlot, this.bindingHook(s.handler.name, s.handler.nameSpan)) : null;
    const final = s.finalBody ? this.block(s.finalBody, c) : null;
    const parts = [body, handler, final].filter((x): x is CS => x !== null);
    const hasFinal = final !== null;

    if (parts.every((p) => !p.async)) {
      const br = body.run as SyncS;
      const hr = handler ? (handler.run as SyncS) : null;
      const fr = final ? (final.run as SyncS) : null;
      return SS((f) => {
        const entered = f.ret;
        let code: Completion = NORMAL;
        let pending: VvmRaise | null = null;
        try {
          code = br(f);
        } catch (err) {
          const r = asRaise(err, site);
          if (r === null) throw err;
          if (hr) {
            f.s[errSlot] = r.value;
            const saved = f.caught;
            f.caught = r.value;
            try {
              code = hr(f);
            } catch (err2) {
              const r2 = hasFinal ? asRaise(err2, site) : null;
              if (r2 === null) throw err2;
              pending = r2;
            } finally {
              f.caught = saved;
            }
          } else pending = r;
        }
        if (fr) {
          const ret = f.ret;
          f.ret = entered; // see dropReturn
          const fc = fr(f);
          if (fc !== NORMAL) return fc;
          f.ret = ret;
        }
        if (pending) throw pending;
        return code;
      });
    }
    return AS(async (f) => {
      const entered = f.ret;
      let code: Completion = NORMAL;
      let pending: VvmRaise | null = null;
      try {
        code = body.async ? await body.run(f) : body.run(f);
      } catch (err) {
        const r = asRaise(err, site);
        if (r === null) throw err;
        if (handler) {
          f.s[errSlot] = r.value;
          const saved = f.caught;
          f.caught = r.value;
          try {
            code = handler.async ? await handler.run(f) : handler.run(f);
          } catch (err2) {
            const r2 = hasFinal ? asRaise(err2, site) : null;
            if (r2 === null) throw err2;
            pending = r2;
          } finally {
            f.caught = saved;
          }
        } else pending = r;
      }
      if (final) {
        const ret = f.ret;
        f.ret = entered; // see dropReturn
        const fc = final.async ? await final.run(f) : final.run(f);
        if (fc !== NORMAL) return fc;
        f.ret = ret;
      }
      if (pending) throw pending;
      return code;
    });
  }
}

/** A user `def` closed over the frame it was defined in. */
class UserFunction implements VFunction {
  readonly type = "function";
  readonly name: string;
  readonly params: readonly string[];
  readonly isAsync: boolean;

  constructor(
    private readonly c: CompiledDef,
    private readonly closure: Frame,
    private readonly owner: ModuleCompiler,
  ) {
    this.name = c.def.name;
    this.params = c.params;
    this.isAsync = c.isAsync;
  }

  private enter(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env: CallEnv): Frame {
    const c = this.c;
    this.owner.watch.call(site);
    const depth = env.depth + 1;
    if (depth > RECURSION_LIMIT) {
      throw thrown(`recursion limit reached: more than ${RECURSION_LIMIT} nested calls (calling ${this.name})`, site);
    }
    const n = c.params.length;
    if (args.length > n) {
      throw thrown(`${this.name}() takes ${n} argument${n === 1 ? "" : "s"} but ${args.length} were given`, site);
    }
    let s: (Value | undefined)[];
    if (kwargs === null && args.length === n) {
      // The common case: the caller's fresh argument array becomes the frame (callers never reuse it).
      s = args;
      for (let i = n; i < c.nslots; i++) s.push(undefined);
      const f = new Frame(s, this.closure, it, depth, env.signal);
      for (const h of c.nested) s[h.slot] = this.owner.makeFunction(h.def, f);
      return f;
    }
    s = new Array(c.nslots);
    for (let i = 0; i < args.length; i++) s[i] = args[i];
    if (kwargs !== null) {
      for (const [k, v] of kwargs) {
        const i = c.paramIndex.get(k);
        if (i === undefined) throw thrown(`${this.name}() got an unknown keyword argument '${k}' (parameters: ${c.params.join(", ") || "none"})`, site);
        if (s[i] !== undefined) throw thrown(`${this.name}() got '${k}' twice`, site);
        s[i] = v;
      }
    }
    for (let i = args.length; i < n; i++) {
      if (s[i] === undefined) throw thrown(`${this.name}() is missing the argument '${c.params[i]}'`, site);
    }
    const f = new Frame(s, this.closure, it, depth, env.signal);
    for (const h of c.nested) s[h.slot] = this.owner.makeFunction(h.def, f);
    return f;
  }

  callSync(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env: CallEnv = ROOT_ENV): Value {
    if (this.isAsync) throw new Error(`internal: synchronous call of async function ${this.name}`);
    const f = this.enter(args, kwargs, it, site, env);
    try {
      (this.c.body.run as SyncS)(f);
    } catch (err) {
      // A JS stack overflow becomes `thrown` at the innermost call site that still has room to build it,
      // so an uncaught one says where the recursion was.
      throw this.leaving((err instanceof RangeError && asRaise(err, site)) || err, site);
    }
    return f.ret;
  }

  /** A raise leaving this function notes it, with the call site, for the traceback. */
  private leaving(err: unknown, site: Site): unknown {
    if (err instanceof VvmRaise) err.step({ kind: "call", fn: this.name, site });
    return err;
  }

  call(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env: CallEnv = ROOT_ENV): Value | Promise<Value> {
    if (!this.isAsync) return this.callSync(args, kwargs, it, site, env);
    const f = this.enter(args, kwargs, it, site, env);
    let done: ReturnType<typeof this.c.body.run>;
    // as in callSync: a RangeError (stack or value too large) becomes `thrown` here, so the traceback names this call
    const leave = (err: unknown) => this.leaving((err instanceof RangeError && asRaise(err, site)) || err, site);
    try {
      done = this.c.body.run(f);
    } catch (err) {
      throw leave(err);
    }
    return done instanceof Promise
      ? done.then(
          () => f.ret,
          (err: unknown) => {
            throw leave(err);
          },
        )
      : f.ret;
  }
}

/** How long a loop runs before it lets the event loop in (signals, timers, other pmap items). */
const SLICE_MS = 25;
const sliceEnd = () => performance.now() + SLICE_MS;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Called every POLL_MASK+1 iterations of the loop at `site`: stop on abort or a full heap, yield when the slice is used up; returns the new slice end. */
async function poll(f: Frame, slice: number, site: Site): Promise<number> {
  if (f.signal.aborted) throw new Interrupted();
  checkHeap(site);
  if (performance.now() < slice) return slice;
  await nextTurn();
  if (f.signal.aborted) throw new Interrupted();
  return sliceEnd();
}

/** A slot's value, or `missing()` when the slot is empty (`undefined`); unit is `null` and is a value. */
function orElse(v: Value | undefined, missing: () => Value): Value {
  return v !== undefined ? v : missing();
}

function up(f: Frame, depth: number): Frame {
  let g = f;
  for (let d = 0; d < depth; d++) g = g.p as Frame;
  return g;
}

function setKw(m: Map<string, Value>, k: string, v: Value, site: Site): void {
  if (m.has(k)) throw thrown(`the keyword argument '${k}' is given twice`, site);
  m.set(k, v);
}

function notCallable(v: Value, site: Site): VvmRaise {
  // an agent is called with @name `task`(input); say so, with its name when it has one that @ can take
  if (v instanceof VAgent) {
    return /^[A-Za-z_][A-Za-z0-9_]*$/.test(v.name)
      ? thrown(`cannot call agent '${v.name}' like a function: write @${v.name} \`task\`(input)`, site)
      : thrown("cannot call an agent like a function: write @name `task`(input) with an agent's name", site);
  }
  return thrown(`cannot call ${typeName(v)}: only functions can be called`, site);
}

/** `raise <expr>`: a string raises `thrown` with that message, an error value raises itself. */
function raiseOf(v: Value, site: Site): VvmRaise {
  if (typeof v === "string") return thrown(v, site);
  if (isErrorValue(v)) return new VvmRaise(v, site);
  return thrown(`raise needs a message string or an error value, got ${typeName(v)}`, site);
}
