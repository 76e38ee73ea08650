// A test runs in a copy of the program's folder and must never write outside it. Project and user memories
// are inside the copy (its `.vvm`, its HOME); a `path` memory is only when its path is written relative to
// the program and stays inside its folder. The bindings are read from the source before the run: a memory
// binding is only ever given as a `memory=` argument (agent declarations, `.with(...)`, inline agents).
import path from "node:path";
import type { Expr, KwArg, Span, Stmt } from "../../grammar/ast.ts";
import { childExprs, stmtExprs } from "../../grammar/walk.ts";
import { literalString } from "../resolve/agent-config.ts";
import { innerBlocks } from "../resolve/scopes.ts";
import type { CheckResult } from "../program.ts";

/** The first memory binding that could be written outside the copy, as `file:line:col: why`; null when none. */
export function memoryOutsideCopy(checked: CheckResult, programDir: string, show: (file: string) => string): string | null {
  for (const m of checked.modules.values()) {
    for (const kw of memoryArgs(m.program.body)) {
      const why = outside(kw.value, programDir);
      if (why !== null) return `${show(m.path)}:${at(why.span)}: ${why.message}`;
    }
  }
  return null;
}

const at = (s: Span) => `${s.line}:${s.col}`;
const ONLY = "a test writes only inside its copy of the program's folder";
const RELATIVE = "give a path relative to the program, inside its folder";
const NEVER_AN_OBJECT: ReadonlySet<Expr["kind"]> = new Set(["Unit", "Bool", "Number", "String", "TemplateExpr", "List"]);

function outside(v: Expr, programDir: string): { span: Span; message: string } | null {
  if (v.kind !== "Object") {
    // a value that is never an object is refused by the call itself, before any memory is touched
    return NEVER_AN_OBJECT.has(v.kind) ? null : { span: v.span, message: `memory is computed, so a test cannot tell where it is written (${ONLY}): write it as { scope, key }` };
  }
  for (const e of v.entries) {
    const text = literalString(e.value);
    if (e.key === "scope" && text === null) return { span: e.value.span, message: `memory scope is computed, so a test cannot tell where it is written (${ONLY}): write it as a string` };
    if (e.key !== "path") continue;
    if (text === null) return { span: e.value.span, message: `memory path is computed, so a test cannot tell where it is written (${ONLY}): ${RELATIVE}` };
    const rel = path.relative(programDir, path.resolve(programDir, text));
    if (path.isAbsolute(text) || rel.split(path.sep)[0] === ".." || path.isAbsolute(rel)) {
      return { span: e.value.span, message: `memory path ${JSON.stringify(text)} would be written outside the test's copy (${ONLY}): ${RELATIVE}` };
    }
  }
  return null;
}

/** Every `memory=` argument of a block, nested blocks and function bodies included. */
function memoryArgs(body: Stmt[]): KwArg[] {
  const out: KwArg[] = [];
  const exprs: Expr[] = [];
  const stmts = [...body];
  for (let s = stmts.pop(); s !== undefined; s = stmts.pop()) {
    if (s.kind === "AgentDecl") out.push(...s.kwargs);
    if (s.kind === "Def") stmts.push(...s.body);
    for (const b of innerBlocks(s)) stmts.push(...b);
    exprs.push(...stmtExprs(s));
  }
  for (let e = exprs.pop(); e !== undefined; e = exprs.pop()) {
    if (e.kind === "Call") out.push(...e.kwargs);
    if (e.kind === "AgentCall") out.push(...(e.agent.kind === "NamedAgent" ? (e.agent.with ?? []) : e.agent.kwargs));
    exprs.push(...childExprs(e));
  }
  return out.filter((k) => k.name === "memory");
}
