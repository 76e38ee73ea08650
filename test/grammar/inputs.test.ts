// `input name: "description" = default` declarations (spec/inputs.md): the shapes the parser builds and the
// mistakes it reports.
import { describe, expect, it } from "vitest";
import { parse } from "../../grammar/index.ts";
import { at, brief, firstStmt, ok, shape } from "./helpers.ts";

describe("input declarations", () => {
  it("name, description and default, each optional after the name", () => {
    const p = ok('input topic: "The topic"\ninput depth: "How deep" = "medium"\ninput n = 3\ninput flag\n');
    expect(shape(p.body)).toEqual([
      { kind: "InputDecl", name: "topic", description: { kind: "String", value: "The topic" }, default: null },
      { kind: "InputDecl", name: "depth", description: { kind: "String", value: "How deep" }, default: { kind: "String", value: "medium" } },
      { kind: "InputDecl", name: "n", description: null, default: { kind: "Number", value: 3 } },
      { kind: "InputDecl", name: "flag", description: null, default: null },
    ]);
  });

  it("spans: the statement runs from 'input' to its last part; the name has its own span", () => {
    const s = firstStmt('input depth: "How deep" = { a: [1,\n  2] }\n');
    expect(at(s.span)).toBe("1:1-2:7");
    expect(s.kind === "InputDecl" && at(s.nameSpan)).toBe("1:7-1:12");
    expect(at(firstStmt('input t: "x"\n').span)).toBe("1:1-1:13");
    expect(at(firstStmt("input t\n").span)).toBe("1:1-1:8");
  });

  it("`input` as a misused name is still E010, and `with input` is untouched", () => {
    expect(parse("input = 1\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E010 1:1 'input' is a reserved word and cannot be assigned",
    ]);
    expect(shape(firstStmt("with input x:\n  pass\n"))).toMatchObject({ kind: "WithInput" });
  });

  it("a reserved word as the input's name is one E010", () => {
    expect(parse('input if: "x"\ninput for = 1\ninput in\n', "t.vvm").diagnostics.map(brief)).toEqual([
      "E010 1:7 'if' is a reserved word and cannot be used as an input name",
      "E010 2:7 'for' is a reserved word and cannot be used as an input name",
      "E010 3:7 'in' is a reserved word and cannot be used as an input name",
    ]);
  });

  it.each([
    ['input topic "The topic"\n', "E001 1:13"], // expected ':' between the input's name and its description
    ["input topic: description\n", "E001 1:14"],
    ['input topic: "a" "b"\n', "E001 1:18"],
    ["input topic =\n", "E001 1:14"],
    ['input topic = "x": "y"\n', "E001 1:18"],
  ])("%j is a syntax error", (source, where) => {
    const d = parse(source, "t.vvm").diagnostics;
    expect(d.map((x) => `${x.code} ${x.span.line}:${x.span.col}`)).toEqual([where]);
  });
});
