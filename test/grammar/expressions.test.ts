import { describe, expect, it } from "vitest";
import type { Expr } from "../../grammar/ast.ts";
import { parse } from "../../grammar/index.ts";
import { at, brief, firstStmt, ok, shape } from "./helpers.ts";

/** The expression of `x = <src>`. */
function expr(src: string): Expr {
  const s = firstStmt(`x = ${src}\n`);
  if (s.kind !== "Assign") throw new Error(`expected an assignment, got ${s.kind}`);
  return s.value;
}

const n = (name: string) => ({ kind: "Name", name });
const num = (value: number) => ({ kind: "Number", value });

describe("literals", () => {
  it("unit, booleans, numbers, strings, it", () => {
    expect(shape([expr("()"), expr("true"), expr("false"), expr("3"), expr("99.99"), expr('"s"'), expr("it")])).toEqual([
      { kind: "Unit" },
      { kind: "Bool", value: true },
      { kind: "Bool", value: false },
      num(3),
      num(99.99),
      { kind: "String", value: "s" },
      { kind: "It" },
    ]);
    expect(at(expr("()").span)).toBe("1:5-1:7");
  });

  it("triple-quoted strings keep their text verbatim, newlines included", () => {
    expect(shape(expr('"""\nline "quoted" # not a comment\n"""'))).toEqual({
      kind: "String",
      value: '\nline "quoted" # not a comment\n',
    });
  });

  it("lists and objects with trailing commas, identifier, keyword and string keys", () => {
    expect(shape(expr('[1, [2],]'))).toEqual({ kind: "List", items: [num(1), { kind: "List", items: [num(2)] }] });
    const o = expr('{ a: 1, "b c": 2, error: { kind: "x" }, }');
    expect(shape(o)).toEqual({
      kind: "Object",
      entries: [
        { key: "a", value: num(1) },
        { key: "b c", value: num(2) },
        { key: "error", value: { kind: "Object", entries: [{ key: "kind", value: { kind: "String", value: "x" } }] } },
      ],
    });
    expect(o.kind === "Object" && o.entries.map((e) => at(e.keySpan))).toEqual(["1:7-1:8", "1:13-1:18", "1:23-1:28"]);
    expect(shape(expr("[]"))).toEqual({ kind: "List", items: [] });
    expect(shape(expr("{}"))).toEqual({ kind: "Object", entries: [] });
  });
});

describe("operators", () => {
  it("precedence: or < and < not < comparison < + -", () => {
    expect(shape(expr("not a == b + 1 and c or d"))).toEqual({
      kind: "Logical",
      op: "or",
      left: {
        kind: "Logical",
        op: "and",
        left: {
          kind: "Not",
          operand: { kind: "Binary", op: "==", left: n("a"), right: { kind: "Binary", op: "+", left: n("b"), right: num(1) } },
        },
        right: n("c"),
      },
      right: n("d"),
    });
  });

  it("+ and - associate to the left; parentheses group", () => {
    expect(shape(expr("a - b + c"))).toEqual({
      kind: "Binary",
      op: "+",
      left: { kind: "Binary", op: "-", left: n("a"), right: n("b") },
      right: n("c"),
    });
    expect(shape(expr("a - (b + c)"))).toEqual({
      kind: "Binary",
      op: "-",
      left: n("a"),
      right: { kind: "Binary", op: "+", left: n("b"), right: n("c") },
    });
  });

  it("every comparison operator", () => {
    for (const op of ["==", "!=", "<", "<=", ">", ">="]) {
      expect(shape(expr(`a ${op} b`))).toEqual({ kind: "Binary", op, left: n("a"), right: n("b") });
    }
  });

  it("not not x nests, and spans cover the operators", () => {
    const e = expr("not not a");
    expect(shape(e)).toEqual({ kind: "Not", operand: { kind: "Not", operand: n("a") } });
    expect(at(e.span)).toBe("1:5-1:14");
    expect(at(expr("a + b * 0 == c".replace(" * 0", "")).span)).toBe("1:5-1:15");
  });

  it("refuses chained comparisons and 'not' after a comparison (E001)", () => {
    expect(parse("x = a < b < c\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E001 1:11 comparisons cannot be chained; combine them with 'and'",
    ]);
    expect(parse("x = a == not b\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E001 1:10 'not' cannot follow '=='; put the negated part in parentheses",
    ]);
    expect(parse("x = (a < b) == c\n", "t.vvm").diagnostics).toEqual([]);
  });

  it("there is no unary minus", () => {
    expect(parse("x = -1\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:5 expected an expression, found '-'"]);
  });
});

describe("postfix: member, index, call on any expression", () => {
  it("chains left to right with spans", () => {
    const e = expr("a.error.data[0](1, k=2).b");
    expect(shape(e)).toEqual({
      kind: "Member",
      name: "b",
      object: {
        kind: "Call",
        callee: { kind: "Index", object: { kind: "Member", name: "data", object: { kind: "Member", name: "error", object: n("a") } }, index: num(0) },
        args: [num(1)],
        kwargs: [{ name: "k", value: num(2) }],
      },
    });
    expect(at(e.span)).toBe("1:5-1:30");
    expect(e.kind === "Member" && at(e.nameSpan)).toBe("1:29-1:30");
  });

  it("f() has no arguments while f(()) passes unit", () => {
    expect(shape(expr("f()"))).toEqual({ kind: "Call", callee: n("f"), args: [], kwargs: [] });
    expect(shape(expr("f(())"))).toEqual({ kind: "Call", callee: n("f"), args: [{ kind: "Unit" }], kwargs: [] });
  });

  it("agent derivation as a value is a call of the member `with`", () => {
    expect(shape(expr('base.with(prompt="p")'))).toEqual({
      kind: "Call",
      callee: { kind: "Member", name: "with", object: n("base") },
      args: [],
      kwargs: [{ name: "prompt", value: { kind: "String", value: "p" } }],
    });
  });

  it("arguments over several lines with a trailing comma", () => {
    expect(shape(expr("f(\n  a,\n  k=1,\n)"))).toEqual({ kind: "Call", callee: n("f"), args: [n("a")], kwargs: [{ name: "k", value: num(1) }] });
  });
});

describe("agent calls and predicates", () => {
  it("named agent, explicit unit input, implicit it, options", () => {
    const e = expr('@w `task {x.y} {}`(\n  d,\n  retry=2,\n)');
    expect(shape(e)).toEqual({
      kind: "AgentCall",
      agent: { kind: "NamedAgent", name: "w", with: null },
      template: {
        kind: "Template",
        parts: [{ kind: "text", value: "task " }, { kind: "path", names: ["x", "y"] }, { kind: "text", value: " " }, { kind: "input" }],
      },
      args: [n("d")],
      kwargs: [{ name: "retry", value: num(2) }],
    });
    expect(at(e.span)).toBe("1:5-4:2");
    expect(e.kind === "AgentCall" && e.template.parts.filter((p) => p.kind !== "text").map((p) => ("span" in p ? at(p.span) : ""))).toEqual([
      "1:14-1:19",
      "1:20-1:22",
    ]);
    expect(shape(expr("@w `t`()"))).toMatchObject({ kind: "AgentCall", args: [] });
    expect(shape(expr("@w `t`(())"))).toMatchObject({ kind: "AgentCall", args: [{ kind: "Unit" }] });
  });

  it("`.with` at the call site and inline agents", () => {
    expect(shape(expr('@w.with(model="m") `t`(x)'))).toMatchObject({
      agent: { kind: "NamedAgent", name: "w", with: [{ name: "model", value: { kind: "String", value: "m" } }] },
    });
    const inline = expr('@{model="haiku", prompt="p"} `t`(x)');
    expect(shape(inline)).toMatchObject({
      agent: {
        kind: "InlineAgent",
        kwargs: [
          { name: "model", value: { kind: "String", value: "haiku" } },
          { name: "prompt", value: { kind: "String", value: "p" } },
        ],
      },
    });
    expect(inline.kind === "AgentCall" && at(inline.agent.span)).toBe("1:5-1:33");
  });

  it("predicates with and without input", () => {
    expect(shape(expr("?`about money`"))).toEqual({
      kind: "Predicate",
      criterion: { kind: "Template", parts: [{ kind: "text", value: "about money" }] },
      input: null,
    });
    expect(shape(expr("?`c`(t) and ?`d`(t)"))).toMatchObject({
      kind: "Logical",
      left: { kind: "Predicate", input: n("t") },
      right: { kind: "Predicate", input: n("t") },
    });
  });

  it("a bare template is an expression", () => {
    expect(shape(expr("`hi {name}`"))).toEqual({
      kind: "TemplateExpr",
      template: { kind: "Template", parts: [{ kind: "text", value: "hi " }, { kind: "path", names: ["name"] }] },
    });
  });
});

describe("templates", () => {
  const parts = (src: string) => {
    const e = expr(src);
    return e.kind === "TemplateExpr" ? shape(e.template.parts) : null;
  };

  it("decodes \\`, \\\", \\\\ and doubled braces; keeps other backslashes", () => {
    expect(parts('`a \\` b \\" c \\\\ d {{e}} \\n`')).toEqual([{ kind: "text", value: 'a ` b " c \\ d {e} \\n' }]);
  });

  it("reports malformed placeholders (E052) with their position", () => {
    const cases: [string, string][] = [
      ["`a { b`", "E052 1:8 lone '{' in template: write '{{' for a literal brace, or close the placeholder"],
      ["`a } b`", "E052 1:8 lone '}' in template: write '}}' for a literal brace"],
      ["`{ x }`", "E052 1:6 malformed placeholder { x }: expected {}, {name} or {name.field} (no spaces); write '{{' for a literal brace"],
      ["`{1}`", "E052 1:6 malformed placeholder {1}: expected {}, {name} or {name.field} (no spaces); write '{{' for a literal brace"],
      ["`{a..b}`", "E052 1:6 malformed placeholder {a..b}: expected {}, {name} or {name.field} (no spaces); write '{{' for a literal brace"],
      ["`line\n  {a-b}`", "E052 2:3 malformed placeholder {a-b}: expected {}, {name} or {name.field} (no spaces); write '{{' for a literal brace"],
    ];
    for (const [src, want] of cases) {
      const r = parse(`x = ${src}\n`, "t.vvm");
      expect(r.diagnostics.map(brief)).toEqual([want]);
      expect(r.program).not.toBeNull();
    }
  });
});

describe("lambda (dialect)", () => {
  it("becomes a nested def placed before its statement, referenced by name", () => {
    const p = ok("def f(r):\n  v = pmap(xs, lambda a, b: g(a, r))\n  return v\n");
    const def = p.body[0]!;
    expect(def.kind).toBe("Def");
    if (def.kind !== "Def") return;
    expect(shape(def.body)).toEqual([
      {
        kind: "Def",
        name: "<lambda:2:16>",
        params: [{ name: "a" }, { name: "b" }],
        body: [{ kind: "Return", value: { kind: "Call", callee: n("g"), args: [n("a"), n("r")], kwargs: [] } }],
      },
      {
        kind: "Assign",
        target: "v",
        value: { kind: "Call", callee: n("pmap"), args: [n("xs"), n("<lambda:2:16>")], kwargs: [] },
      },
      { kind: "Return", value: n("v") },
    ]);
  });

  it("`lambda` alone is an ordinary name", () => {
    expect(shape(expr("lambda"))).toEqual(n("lambda"));
  });
});

describe("limits", () => {
  it("refuses a statement whose tree is deeper than the limit, without overflowing", () => {
    const r = parse("x = " + Array(3000).fill("a").join(" + ") + "\ny = 1\n", "t.vvm");
    expect(r.diagnostics.map(brief)).toEqual(["E001 1:1 statement nested deeper than 1000 levels is not supported (a chain of 1000 operators, calls or member accesses counts as that deep: split it up)"]);
    expect(shape(r.program!.body)).toEqual([{ kind: "Assign", target: "y", value: num(1) }]);
  });

  it("checks the depth of lambda bodies too", () => {
    const r = parse("f = lambda x: " + Array(3000).fill("x").join(" + ") + "\n", "t.vvm");
    expect(r.diagnostics.map(brief)).toEqual(["E001 1:1 statement nested deeper than 1000 levels is not supported (a chain of 1000 operators, calls or member accesses counts as that deep: split it up)"]);
    expect(r.program === null || r.program.body.length === 0).toBe(true);
  });

  it("accepts long but shallow statements", () => {
    const list = "x = [" + Array(5000).fill("1").join(", ") + "]\n";
    expect(parse(list, "t.vvm").diagnostics).toEqual([]);
  });
});
