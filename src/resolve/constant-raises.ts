// W061: an operator whose operands are all literals and that raises every time it runs (`1 + "a"`, `not 3`,
// `"b" < "a"`), in a program's body as in an agent declaration or an input default, where E041 allows operators
// over literals; and the number such operators make (`0 - 1`), which W021, W051 and W070 judge as a literal.
// The operators' rules are the run's (runtime/interpreter/ops.ts, spec/language.md §2).
import type { Expr } from "../../grammar/ast.ts";
import { childExprs } from "../../grammar/walk.ts";

/** What is known of a value made of literals: its type (the run's words for it), and a number's or boolean's value. */
type Known =
  | { type: "number"; value: number }
  | { type: "boolean"; value: boolean | null }
  | { type: "string" | "list" | "object" | "unit" };

export interface ConstantRaise {
  at: Expr;
  message: string;
}

/** Every operator in `root` that always raises, each once, innermost first (an outer operator over it is not known). */
export function constantRaises(root: Expr): ConstantRaise[] {
  const out: ConstantRaise[] = [];
  known(root, out);
  return out;
}

/**
 * The number operators make of literals, as the run computes it (`0 - 1`: VVM has no negative literal), or
 * undefined (an operand that is not known, not a number, or a result the run refuses).
 */
export function constantNumber(e: Expr): number | undefined {
  const k = known(e, []);
  return k?.type === "number" ? k.value : undefined;
}

/** Notes that `e` always raises; the operator's value is then not known, so no operator over it is reported. */
function raises(out: ConstantRaise[], e: Expr, message: string): undefined {
  out.push({ at: e, message: `${message} (raises thrown whenever this runs)` });
  return undefined;
}

/** The value `e` has when its operands are literals, or undefined; an operator that raises goes to `out`. */
function known(e: Expr, out: ConstantRaise[]): Known | undefined {
  switch (e.kind) {
    case "Unit":
      return { type: "unit" };
    case "Bool":
      return { type: "boolean", value: e.value };
    case "Number":
      return { type: "number", value: e.value };
    case "String":
      return { type: "string" };
    case "TemplateExpr":
      return e.template.parts.every((p) => p.kind === "text") ? { type: "string" } : undefined;
    case "List":
    case "Object": {
      const parts = childExprs(e).map((c) => known(c, out));
      return parts.includes(undefined) ? undefined : { type: e.kind === "List" ? "list" : "object" };
    }
    case "Binary": {
      // explicit operands first: the run evaluates both before the operator
      const l = known(e.left, out);
      const r = known(e.right, out);
      if (l === undefined || r === undefined) return undefined;
      const raise = (message: string) => raises(out, e, message);
      const got = `got ${l.type} and ${r.type}`;
      const op = e.op;
      switch (op) {
        case "+":
        case "-": {
          if (l.type === "number" && r.type === "number") {
            const x = op === "+" ? l.value + r.value : l.value - r.value;
            return Number.isFinite(x) ? { type: "number", value: x } : raise(`'${op}' makes a number too large`);
          }
          if (op === "-") return raise(`'-' needs two numbers, ${got}`);
          if (l.type === r.type && (l.type === "string" || l.type === "list")) return { type: l.type };
          return raise(`'+' needs two numbers, two strings or two lists, ${got}`);
        }
        case "<":
        case "<=":
        case ">":
        case ">=":
          if (l.type !== "number" || r.type !== "number") return raise(`'${op}' compares numbers only, ${got}`);
          return { type: "boolean", value: op === "<" ? l.value < r.value : op === "<=" ? l.value <= r.value : op === ">" ? l.value > r.value : l.value >= r.value };
        case "==":
        case "!=":
          // literals are never functions or agents, the only values equality raises on
          return { type: "boolean", value: null };
        default: {
          const never: never = op;
          return never;
        }
      }
    }
    case "Logical": {
      const l = known(e.left, out);
      const raise = (v: Known) => raises(out, e, `the operands of '${e.op}' must be true or false, got ${v.type}`);
      // the right operand is evaluated only after a left one that is true or false, and does not stop the
      // operator (`or` stops at true, `and` at false): nothing in it runs otherwise
      if (l?.type === "boolean" && l.value === (e.op === "or")) return l;
      if (l !== undefined && l.type !== "boolean") return raise(l);
      const r = known(e.right, out);
      if (l === undefined || r === undefined) return undefined;
      // (when the left's value is not known, neither is whether the right is evaluated)
      if (r.type !== "boolean") return l.value === null ? undefined : raise(r);
      return l.value === null ? l : r;
    }
    case "Not": {
      const o = known(e.operand, out);
      if (o === undefined) return undefined;
      if (o.type !== "boolean") return raises(out, e, `the operand of 'not' must be true or false, got ${o.type}`);
      return { type: "boolean", value: o.value === null ? null : !o.value };
    }
    default:
      for (const c of childExprs(e)) known(c, out);
      return undefined;
  }
}
