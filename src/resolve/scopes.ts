// Name bindings and scopes (spec/language.md §6): which names a `def` or a module binds, and their frame slots.
import type { DefStmt, Program, Span, Stmt } from "../../grammar/ast.ts";

type BindingKind = "assign" | "for" | "except" | "choose" | "case" | "def" | "import" | "param" | "input";

export interface Binding {
  name: string;
  span: Span;
  kind: BindingKind;
}

const NONE: readonly Stmt[][] = Object.freeze([]) as readonly Stmt[][];
const NO_BINDINGS: readonly Binding[] = Object.freeze([]) as readonly Binding[];

/** The statement lists nested inside `s` that share its scope (a `def` body is its own scope, so it is not one). */
export function innerBlocks(s: Stmt): readonly Stmt[][] {
  switch (s.kind) {
    case "If":
      return s.orelse ? [...s.branches.map((b) => b.body), s.orelse] : s.branches.map((b) => b.body);
    case "While":
    case "For":
    case "WithInput":
      return [s.body];
    case "Match":
      return s.cases.map((c) => c.body);
    case "Choose":
      return s.options.map((o) => o.body);
    case "Try": {
      const blocks = [s.body];
      if (s.handler) blocks.push(s.handler.body);
      if (s.finalBody) blocks.push(s.finalBody);
      return blocks;
    }
    case "Def":
    case "AgentDecl":
    case "InputDecl":
    case "SkillImport":
    case "FromImport":
    case "Export":
    case "Constrain":
    case "Raise":
    case "Return":
    case "Pass":
    case "Break":
    case "Continue":
    case "Assign":
    case "ExprStmt":
      return NONE;
    default: {
      const never: never = s;
      return never;
    }
  }
}

/** Names one statement binds in its own scope (not those bound inside nested blocks or `def` bodies). */
function ownBindings(s: Stmt): readonly Binding[] {
  switch (s.kind) {
    case "Assign":
      return [{ name: s.target, span: s.targetSpan, kind: "assign" }];
    case "For":
      return [{ name: s.target, span: s.targetSpan, kind: "for" }];
    case "Try":
      return s.handler ? [{ name: s.handler.name, span: s.handler.nameSpan, kind: "except" }] : NO_BINDINGS;
    case "Choose":
      return [{ name: s.binding, span: s.bindingSpan, kind: "choose" }];
    case "Match": {
      const out: Binding[] = [];
      for (const c of s.cases) {
        if (c.pattern.kind === "ErrorBind") out.push({ name: c.pattern.name, span: c.pattern.nameSpan, kind: "case" });
      }
      return out;
    }
    case "Def":
      return [{ name: s.name, span: s.nameSpan, kind: "def" }];
    case "InputDecl":
      return [{ name: s.name, span: s.nameSpan, kind: "input" }];
    case "FromImport":
      return s.isAgent ? NO_BINDINGS : [{ name: s.alias ?? s.name, span: s.aliasSpan ?? s.nameSpan, kind: "import" }];
    default:
      return NO_BINDINGS;
  }
}

const bindingCache = new WeakMap<readonly Stmt[], readonly Binding[]>();

/**
 * Every binding in a statement list and its nested blocks, in source order, without entering `def` bodies.
 * Cached per body: the local-name sets and the resolver's scopes both need it.
 */
function scopeBindings(body: readonly Stmt[]): readonly Binding[] {
  const cached = bindingCache.get(body);
  if (cached) return cached;
  const out: Binding[] = [];
  const visit = (stmts: readonly Stmt[]): void => {
    for (const s of stmts) {
      for (const b of ownBindings(s)) out.push(b);
      for (const b of innerBlocks(s)) visit(b);
    }
  };
  visit(body);
  bindingCache.set(body, out);
  return out;
}

/**
 * One function body or a module's top level: the names it binds and the frame slot of each, written once
 * by the checker and only read by the interpreter (spec/language.md §6: a name bound anywhere in a body is
 * local to all of it).
 */
export class Scope {
  /** every name bound here → its frame slot: parameters first, then bindings in source order (`it` is never a name) */
  readonly slots = new Map<string, number>();
  /** the bindings themselves (parameters included), in the same order */
  readonly bindings: readonly Binding[];
  readonly bindingsByName = new Map<string, Binding[]>();
  /** `def`s directly in this body, in source order (bound on entry) */
  readonly defs: readonly DefStmt[];
  /** names whose only binding here is one `def`: a call through them has a known target */
  readonly defOnly = new Map<string, DefStmt>();

  constructor(
    readonly parent: Scope | null,
    readonly def: DefStmt | null,
    body: readonly Stmt[],
  ) {
    const params = def ? def.params.map((p): Binding => ({ name: p.name, span: p.span, kind: "param" })) : [];
    this.bindings = params.length > 0 ? [...params, ...scopeBindings(body)] : scopeBindings(body);
    for (const b of this.bindings) {
      const list = this.bindingsByName.get(b.name);
      if (list) list.push(b);
      else this.bindingsByName.set(b.name, [b]);
      if (b.name !== "it" && !this.slots.has(b.name)) this.slots.set(b.name, this.slots.size);
    }
    this.defs = scopeDefs(body);
    for (const d of this.defs) {
      const all = this.bindingsByName.get(d.name) ?? [];
      if (all.length === 1) this.defOnly.set(d.name, d);
    }
  }

  has(name: string): boolean {
    return this.slots.has(name);
  }
}

/** Where every name of a module lives: its top-level scope, one scope per `def` (nested ones and lambdas included), and its agents. */
export interface Layout {
  module: Scope;
  functions: Map<DefStmt, Scope>;
  /** the `@` namespace: agents declared (anywhere, so misplaced ones do not cascade) or imported */
  agents: ReadonlySet<string>;
}

export function buildLayout(program: Program): Layout {
  const module = new Scope(null, null, program.body);
  const functions = new Map<DefStmt, Scope>();
  const fill = (scope: Scope): void => {
    for (const d of scope.defs) {
      const inner = new Scope(scope, d, d.body);
      functions.set(d, inner);
      fill(inner);
    }
  };
  fill(module);
  return { module, functions, agents: agentNames(program.body) };
}

function agentNames(body: readonly Stmt[]): Set<string> {
  const out = new Set<string>();
  const visit = (stmts: readonly Stmt[]): void => {
    for (const s of stmts) {
      if (s.kind === "AgentDecl") out.add(s.name);
      else if (s.kind === "FromImport" && s.isAgent) out.add(s.alias ?? s.name);
      else if (s.kind === "Def") visit(s.body);
      else for (const b of innerBlocks(s)) visit(b);
    }
  };
  visit(body);
  return out;
}

/** The `def`s one scope defines, in source order: in a statement list and its nested blocks, not inside other defs. */
function scopeDefs(body: readonly Stmt[]): DefStmt[] {
  const out: DefStmt[] = [];
  const visit = (stmts: readonly Stmt[]): void => {
    for (const s of stmts) {
      if (s.kind === "Def") out.push(s);
      else for (const b of innerBlocks(s)) visit(b);
    }
  };
  visit(body);
  return out;
}

/** The parser turns `lambda x: ...` into a def named `<lambda:line:col>`, a name no identifier can spell. */
export function isLambda(name: string): boolean {
  return name.startsWith("<lambda:");
}
