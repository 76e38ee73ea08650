// Generic traversal helpers over expressions and templates.
import type { Expr, Span, Stmt, Template } from "./ast.ts";

const LEAF: readonly Expr[] = Object.freeze([]) as readonly Expr[];

/** Direct sub-expressions of `e`, in evaluation order (agent `.with`/inline arguments included). */
export function childExprs(e: Expr): readonly Expr[] {
  switch (e.kind) {
    case "Unit":
    case "Bool":
    case "Number":
    case "String":
    case "TemplateExpr":
    case "Name":
    case "It":
      return LEAF;
    case "List":
      return e.items;
    case "Object":
      return e.entries.map((en) => en.value);
    case "Binary":
    case "Logical":
      return [e.left, e.right];
    case "Not":
      return [e.operand];
    case "Member":
      return [e.object];
    case "Index":
      return [e.object, e.index];
    case "Call":
      return [e.callee, ...e.args, ...e.kwargs.map((k) => k.value)];
    case "AgentCall": {
      const ref = e.agent.kind === "NamedAgent" ? (e.agent.with ?? []) : e.agent.kwargs;
      return [...ref.map((k) => k.value), ...e.args, ...e.kwargs.map((k) => k.value)];
    }
    case "Predicate":
      return e.input ? [e.input] : LEAF;
    default: {
      const never: never = e;
      return never;
    }
  }
}

/** Templates directly held by `e` (not by its sub-expressions). */
function ownTemplates(e: Expr): Template[] {
  switch (e.kind) {
    case "TemplateExpr":
      return [e.template];
    case "AgentCall":
      return [e.template];
    case "Predicate":
      return [e.criterion];
    default:
      return [];
  }
}

/** The first name of every `{name}` / `{a.b}` placeholder in a template, with the placeholder's span. */
export function placeholderRoots(t: Template): { name: string; span: Span }[] {
  const out: { name: string; span: Span }[] = [];
  for (const p of t.parts) if (p.kind === "path" && p.names.length > 0) out.push({ name: p.names[0]!, span: p.span });
  return out;
}

/** Every name `e` (or any template inside it) mentions: names, agents called by name, placeholders' first names. */
export function mentionedNames(e: Expr): Set<string> {
  const out = new Set<string>();
  const stack: Expr[] = [e];
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (x.kind === "Name") out.add(x.name);
    if (x.kind === "AgentCall" && x.agent.kind === "NamedAgent") out.add(x.agent.name);
    for (const t of ownTemplates(x)) for (const p of placeholderRoots(t)) out.add(p.name);
    for (const c of childExprs(x)) stack.push(c);
  }
  return out;
}

/** Expressions a statement evaluates itself (not those of nested blocks or `def` bodies). */
export function stmtExprs(s: Stmt): Expr[] {
  switch (s.kind) {
    case "Assign":
      return [s.value];
    case "ExprStmt":
      return [s.expr];
    case "If":
      return s.branches.map((b) => b.cond);
    case "While":
      return [s.cond];
    case "For":
      return [s.iter];
    case "Match":
    case "Choose":
      return [s.subject];
    case "WithInput":
      return [s.expr];
    case "Constrain":
      return s.kwargs.map((k) => k.value);
    case "Raise":
    case "Return":
      return s.value ? [s.value] : [];
    case "Export":
      return s.target.kind === "expr" ? [s.target.expr] : [];
    case "AgentDecl":
      return s.kwargs.map((k) => k.value);
    case "InputDecl":
      return s.default ? [s.default] : [];
    case "Def":
    case "SkillImport":
    case "FromImport":
    case "Try":
    case "Pass":
    case "Break":
    case "Continue":
      return [];
    default: {
      const never: never = s;
      return never;
    }
  }
}
