import { describe, expect, it } from "vitest";
import { layout, MAX_NESTING } from "../../grammar/layout.ts";
import { lexer } from "../../grammar/tokens.ts";
import { parse } from "../../grammar/index.ts";
import { brief, codes } from "./helpers.ts";

/** Layout tokens with positions, other tokens by image. */
function laid(source: string): string[] {
  const r = layout(lexer.tokenize(source).tokens, source, "t.vvm");
  expect(r.diagnostics).toEqual([]);
  return r.tokens.map((t) => {
    const name = t.tokenType.name;
    if (name === "NEWLINE" || name === "INDENT" || name === "DEDENT") return `${name}@${t.startLine}:${t.startColumn}`;
    return t.image;
  });
}

describe("layout", () => {
  it("emits NEWLINE at the end of each logical line and INDENT/DEDENT at the first token", () => {
    expect(laid("if a:\n  b = 1\n  if c:\n    d\ne\n")).toEqual([
      "if", "a", ":", "NEWLINE@1:6",
      "INDENT@2:3", "b", "=", "1", "NEWLINE@2:8",
      "if", "c", ":", "NEWLINE@3:8",
      "INDENT@4:5", "d", "NEWLINE@4:6",
      "DEDENT@5:1", "DEDENT@5:1", "e", "NEWLINE@5:2",
    ]);
  });

  it("closes every open block at end of file, positioned after the last token", () => {
    expect(laid("def f():\n  if x:\n    pass")).toEqual([
      "def", "f", "(", ")", ":", "NEWLINE@1:9",
      "INDENT@2:3", "if", "x", ":", "NEWLINE@2:8",
      "INDENT@3:5", "pass", "NEWLINE@3:9", "DEDENT@3:9", "DEDENT@3:9",
    ]);
  });

  it("ignores line structure inside brackets", () => {
    expect(laid("x = f(\n    a,\n  b,\n)\ny = [\n1]\n")).toEqual([
      "x", "=", "f", "(", "a", ",", "b", ",", ")", "NEWLINE@4:2",
      "y", "=", "[", "1", "]", "NEWLINE@6:3",
    ]);
  });

  it("skips blank lines and comment-only lines at any indentation", () => {
    expect(laid("if a:\n\n      # deep comment\n  b\n   \n# top comment\n  c\n")).toEqual([
      "if", "a", ":", "NEWLINE@1:6", "INDENT@4:3", "b", "NEWLINE@4:4", "c", "NEWLINE@7:4", "DEDENT@7:4",
    ]);
  });

  it("treats a multi-line template or string as part of its line", () => {
    expect(laid("x = `a\nb` + \"\"\"c\n  d\"\"\"\ny = 1\n")).toEqual([
      "x", "=", "`a\nb`", "+", '"""c\n  d"""', "NEWLINE@3:7", "y", "=", "1", "NEWLINE@4:6",
    ]);
  });

  it("produces nothing for an empty or comment-only file", () => {
    expect(laid("")).toEqual([]);
    expect(laid("# only\n\n  # comments\n")).toEqual([]);
  });

  it("refuses a tab in indentation (E002 at the tab)", () => {
    expect(codes("if a:\n\tb = 1\n")).toEqual(["E002 2:1"]);
    expect(codes("if a:\n  \tb = 1\n")).toEqual(["E002 2:3"]);
    // A tab after the first token is plain whitespace.
    expect(codes("x =\t1\n")).toEqual([]);
  });

  it("reports at most 50 indentation errors for a wholly tab-indented file", () => {
    const r = parse("def f():\n" + "\tx = 1\n".repeat(200), "t.vvm");
    expect(r.diagnostics.length).toBe(50);
    expect(new Set(r.diagnostics.map((d) => d.code))).toEqual(new Set(["E002"]));
  });

  it("refuses a dedent to a level that was never opened (E002)", () => {
    const r = parse("if a:\n    b = 1\n  c = 2\n", "t.vvm");
    expect(r.diagnostics.map(brief)).toEqual([
      "E002 3:3 dedent to column 3 does not match any enclosing block (expected column 1)",
    ]);
    expect(r.program).toBeNull();
  });

  it("refuses indentation that no ':' opened (E002)", () => {
    expect(parse("x = 1\n  y = 2\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E002 2:3 unexpected indentation: only a line ending in ':' opens a block",
    ]);
  });

  it("reports unclosed, unmatched and mismatched brackets at the bracket (E001)", () => {
    expect(parse("x = (1,\ny = 2\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:5 '(' was never closed"]);
    expect(parse("x = [1, 2)\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E001 1:10 closing ')' does not match '[' opened at 1:5",
    ]);
    expect(parse("x = 1)\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:6 unmatched ')'"]);
    expect(parse("x = {\n  a: (1,\n}\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E001 3:1 closing '}' does not match '(' opened at 2:6",
    ]);
  });

  it("limits block and bracket nesting with a clear E001", () => {
    const deepBlocks =
      Array.from({ length: MAX_NESTING + 5 }, (_, i) => " ".repeat(i) + "if x:\n").join("") +
      " ".repeat(MAX_NESTING + 5) +
      "pass\n";
    expect(parse(deepBlocks, "t.vvm").diagnostics.map(brief)).toEqual([
      `E001 ${MAX_NESTING + 2}:${MAX_NESTING + 2} blocks nested deeper than ${MAX_NESTING} levels are not supported`,
    ]);
    const deepBrackets = "x = " + "[".repeat(MAX_NESTING + 1) + "]".repeat(MAX_NESTING + 1) + "\n";
    expect(parse(deepBrackets, "t.vvm").diagnostics.map(brief)).toEqual([
      `E001 1:${4 + MAX_NESTING + 1} brackets nested deeper than ${MAX_NESTING} levels are not supported`,
    ]);
    // Exactly at the limit is fine.
    const atLimit = "x = " + "(".repeat(MAX_NESTING) + "1" + ")".repeat(MAX_NESTING) + "\n";
    expect(parse(atLimit, "t.vvm").diagnostics).toEqual([]);
  });
});
