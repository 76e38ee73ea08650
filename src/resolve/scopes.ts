// Name bindings and local-name sets (LANGUAGE.md §6): which names a `def` or a module binds.
import type { DefStmt, Program, Span, Stmt } from "../ast.ts";

export type BindingKind = "assign" | "for" | "except" | "choose" | "case" | "def" | "import" | "param";

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
export function ownBindings(s: Stmt): readonly Binding[] {
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
export function scopeBindings(body: readonly Stmt[]): readonly Binding[] {
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

/** A function's local names: its parameters and every name bound anywhere in its body (`it` is never a name). */
export function defLocals(def: DefStmt): Set<string> {
  const names = new Set<string>(def.params.map((p) => p.name));
  for (const b of scopeBindings(def.body)) names.add(b.name);
  names.delete("it");
  return names;
}

/** Names bound at module level: assignments and other binding targets outside functions, defs, value imports. */
export function moduleNames(program: Program): Set<string> {
  const names = new Set<string>();
  for (const b of scopeBindings(program.body)) names.add(b.name);
  names.delete("it");
  return names;
}

/** The `def`s one scope defines, in source order: in a statement list and its nested blocks, not inside other defs. */
export function scopeDefs(body: readonly Stmt[]): DefStmt[] {
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

/** Every `def` in a statement list, nested ones included, with its local-name set. */
export function allDefLocals(body: readonly Stmt[]): Map<DefStmt, ReadonlySet<string>> {
  const out = new Map<DefStmt, ReadonlySet<string>>();
  const visit = (stmts: readonly Stmt[]): void => {
    for (const d of scopeDefs(stmts)) {
      out.set(d, defLocals(d));
      visit(d.body);
    }
  };
  visit(body);
  return out;
}

/** The parser turns `lambda x: ...` into a def named `<lambda:line:col>`, a name no identifier can spell. */
export function isLambda(name: string): boolean {
  return name.startsWith("<lambda:");
}
