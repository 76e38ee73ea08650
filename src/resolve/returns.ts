// W070/W071: a literal `returns=` shape (call option, or agent key in a declaration, `.with(...)` or `@{...}`)
// judged by the run's own reader (runtime/shapes.ts), each problem at the part of the literal that causes it.
import type { Expr, KwArg, Span } from "../../grammar/ast.ts";
import { parseShape, type ShapePath, type ShapeProblem } from "../../runtime/shapes.ts";
import { literalValue } from "./agent-config.ts";

interface ReturnsProblem {
  code: ShapeProblem["code"];
  message: string;
  span: Span;
}

/** Nothing unless `kw` is `returns=` with a fully literal value (a computed shape is judged when the call runs). */
export function returnsProblems(kw: KwArg): ReturnsProblem[] {
  if (kw.name !== "returns") return [];
  const v = literalValue(kw.value);
  if (v === undefined || v === null) return [];
  const r = parseShape(v);
  if (r.ok) return [];
  return r.problems.map((p) => ({ code: p.code, message: `returns=: ${p.message}`, span: spanAt(kw.value, p.path) }));
}

/** The part of the literal a path leads to; as far as the literal's own structure goes. */
function spanAt(e: Expr, path: ShapePath): Span {
  let at = e;
  for (const step of path) {
    let next: Expr | undefined;
    if (typeof step === "number" && at.kind === "List") next = at.items[step];
    // (a key written twice keeps its last value, as in the run)
    else if (typeof step === "string" && at.kind === "Object") next = [...at.entries].reverse().find((en) => en.key === step)?.value;
    if (next === undefined) break;
    at = next;
  }
  return at.span;
}
