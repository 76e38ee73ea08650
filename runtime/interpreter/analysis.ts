// Reading the checker's scope layout (every name's scope and slot) and the "can this suspend?" analysis
// that lets most code run synchronously.
import type { DefStmt, Expr, Stmt } from "../../grammar/ast.ts";
import type { Scope } from "../../src/resolve/scopes.ts";
import { childExprs } from "../../grammar/walk.ts";
import { functionParams } from "../../stdlib/index.ts";

type Resolution =
  | { kind: "slot"; depth: number; index: number; scope: Scope }
  | { kind: "agent" }
  | { kind: "builtin" }
  | { kind: "none" };

/** Module-wide facts the analysis needs. */
export interface ModuleNames {
  /** declared and imported agents (the `@` namespace) */
  agents: ReadonlySet<string>;
  builtins: ReadonlySet<string>;
}

/** Where a read of `name` in `scope` finds it: a frame slot (how many scopes out), else the agent namespace or the standard library. */
export function resolve(scope: Scope, name: string, names: ModuleNames): Resolution {
  let depth = 0;
  for (let s: Scope | null = scope; s; s = s.parent, depth++) {
    const index = s.slots.get(name);
    if (index !== undefined) return { kind: "slot", depth, index, scope: s };
  }
  if (names.agents.has(name)) return { kind: "agent" };
  if (names.builtins.has(name)) return { kind: "builtin" };
  return { kind: "none" };
}

/**
 * Which defs may suspend (reach an agent call, a judge, a loop, or a call whose target is not known statically).
 * Least fixpoint: start with none, add a def when its body suspends given the current set. A def found not to
 * suspend is judged again only when a def its judgement asked about is added: passes over every def until
 * nothing changed took time quadratic in a chain of calls (5,000 defs each calling the next: 4 s before a run).
 */
export function asyncDefs(functions: Map<DefStmt, Scope>, names: ModuleNames): Set<DefStmt> {
  const out = new AskedSet();
  const a = new Analysis(names, out);
  /** defs judged not to suspend, by a def they asked about */
  const waiting = new Map<DefStmt, DefStmt[]>();
  const todo = [...functions.keys()].reverse();
  while (todo.length > 0) {
    const def = todo.pop()!;
    if (out.holds(def)) continue;
    out.asked = new Set();
    const suspends = a.block(def.body, functions.get(def)!);
    const asked = out.asked;
    out.asked = null;
    if (suspends) {
      out.add(def);
      todo.push(...(waiting.get(def) ?? []));
      waiting.delete(def);
    } else {
      for (const d of asked) {
        if (out.holds(d)) continue;
        const list = waiting.get(d);
        if (list === undefined) waiting.set(d, [def]);
        else list.push(def);
      }
    }
  }
  return new Set(out);
}

/** The set being built, noting which members a judgement asked about. */
class AskedSet extends Set<DefStmt> {
  asked: Set<DefStmt> | null = null;
  override has(def: DefStmt): boolean {
    this.asked?.add(def);
    return super.has(def);
  }
  /** membership without noting it */
  holds(def: DefStmt): boolean {
    return super.has(def);
  }
}

export class Analysis {
  constructor(
    private readonly names: ModuleNames,
    readonly asyncSet: ReadonlySet<DefStmt>,
  ) {}

  block(body: Stmt[], scope: Scope): boolean {
    return body.some((s) => this.stmt(s, scope));
  }

  stmt(s: Stmt, scope: Scope): boolean {
    switch (s.kind) {
      case "AgentDecl":
      case "InputDecl":
      case "Def":
      case "SkillImport":
      case "FromImport":
      case "Export":
      case "Pass":
      case "Break":
      case "Continue":
        return false;
      case "Choose":
      case "Constrain":
      case "While":
      case "For":
        // Loops yield to the event loop now and then so Ctrl-C is noticed (see compile.ts `yieldSlice`).
        return true;
      case "If":
        return s.branches.some((b) => this.expr(b.cond, scope) || this.block(b.body, scope)) || (s.orelse !== null && this.block(s.orelse, scope));
      case "Match":
        return this.expr(s.subject, scope) || s.cases.some((c) => c.pattern.kind === "Semantic" || this.block(c.body, scope));
      case "WithInput":
        return this.expr(s.expr, scope) || this.block(s.body, scope);
      case "Try":
        return this.block(s.body, scope) || (s.handler !== null && this.block(s.handler.body, scope)) || (s.finalBody !== null && this.block(s.finalBody, scope));
      case "Raise":
      case "Return":
        return s.value !== null && this.expr(s.value, scope);
      case "Assign":
        return this.expr(s.value, scope);
      case "ExprStmt":
        return this.expr(s.expr, scope);
      default: {
        const never: never = s;
        return never;
      }
    }
  }

  expr(e: Expr, scope: Scope): boolean {
    switch (e.kind) {
      case "AgentCall":
      case "Predicate":
        return true;
      case "Call":
        return childExprs(e).some((x) => this.expr(x, scope)) || !this.callIsSync(e, scope);
      default:
        // every other expression suspends only if one of its parts does
        return childExprs(e).some((x) => this.expr(x, scope));
    }
  }

  /** The def a name certainly refers to, if any. */
  staticDef(name: string, scope: Scope): DefStmt | null {
    const r = resolve(scope, name, this.names);
    return r.kind === "slot" ? (r.scope.defOnly.get(name) ?? null) : null;
  }

  /** True when the callee is known and cannot suspend given these arguments (arguments themselves aside). */
  callIsSync(e: Extract<Expr, { kind: "Call" }>, scope: Scope): boolean {
    if (e.callee.kind !== "Name") return false;
    const name = e.callee.name;
    const r = resolve(scope, name, this.names);
    if (r.kind === "slot") {
      const def = r.scope.defOnly.get(name);
      return def !== undefined && !this.asyncSet.has(def);
    }
    if (r.kind !== "builtin") return false;
    const fp = functionParams(name);
    if (!fp) return false;
    const fnArgs: Expr[] = [];
    for (const i of fp.positions) if (e.args[i]) fnArgs.push(e.args[i] as Expr);
    for (const k of e.kwargs) if (fp.names.includes(k.name)) fnArgs.push(k.value);
    return fnArgs.every((a) => {
      if (a.kind !== "Name") return false;
      const def = this.staticDef(a.name, scope);
      return def !== null && !this.asyncSet.has(def);
    });
  }
}
