// Property tests: whatever the input (random text, bytes, or a reference program with deletions, duplications,
// insertions and truncation), parse() returns an AST or diagnostics, never throws, and is quick about it.
import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Diagnostic } from "../../grammar/diagnostics.ts";
import { parse } from "../../grammar/index.ts";
import { ROOT } from "../support/cli.ts";
import { REFERENCE_EXAMPLES } from "../support/examples.ts";
import { vvmFilesUnder } from "../support/programs.ts";

const TIME_BOUND_MS = 2000;

function corpus(): string[] {
  // the reference examples too when they are beside the repository
  const files = [path.join(ROOT, "examples"), ...(REFERENCE_EXAMPLES === null ? [] : [REFERENCE_EXAMPLES])].flatMap(vvmFilesUnder);
  // A built-in program adds forms the examples do not use.
  const builtin = [
    'agent w(model="haiku", prompt="p")\n',
    "def f(a, b):\n  if a == b and not ?`same`(a):\n    return [a, {k: b}]\n  return @w `t {a.b} {{x}}`(a, retry=1)\n",
    "match f(1, 2):\n  case error(e):\n    raise e\n  case _:\n    pass\n",
    'try:\n  x = """multi\nline"""\nexcept as err:\n  x = err.error\nfinally:\n  pass\nexport x\n',
  ].join("");
  return [builtin, ...files.map((f) => readFileSync(f, "utf8"))];
}

const programs = corpus();

function wellFormed(source: string): void {
  const t0 = performance.now();
  const r = parse(source, "fuzz.vvm");
  const ms = performance.now() - t0;
  expect(ms).toBeLessThan(TIME_BOUND_MS);
  expect(r.program !== null || r.diagnostics.length > 0).toBe(true);
  // CR and CRLF are line breaks too (the parser reads them as LF)
  const lines = source.replace(/\r\n?/g, "\n").split("\n").length + 1;
  for (const d of r.diagnostics as Diagnostic[]) {
    expect(d.code).toMatch(/^E0\d\d$/);
    expect(d.span.line).toBeGreaterThanOrEqual(1);
    expect(d.span.col).toBeGreaterThanOrEqual(1);
    expect(d.span.line).toBeLessThanOrEqual(lines);
    expect(d.message).not.toMatch(/internal error/);
  }
}

/** One edit applied to a program. */
const edit = fc.oneof(
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), len: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant("duplicate" as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), text: fc.string({ maxLength: 6 }) }),
  fc.record({
    kind: fc.constant("insertToken" as const),
    at: fc.nat(),
    text: fc.constantFrom(":", "(", ")", "[", "]", "{", "}", "`", '"', '"""', "\n", "\t", "  ", "@", "?", "#", "\\", "lambda x:", "not ", "=="),
  }),
  fc.record({ kind: fc.constant("byte" as const), at: fc.nat(), code: fc.integer({ min: 0, max: 0xffff }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
);

type Edit = typeof edit extends fc.Arbitrary<infer T> ? T : never;

function apply(src: string, e: Edit): string {
  const at = src.length === 0 ? 0 : e.at % (src.length + 1);
  switch (e.kind) {
    case "delete":
      return src.slice(0, at) + src.slice(at + e.len);
    case "duplicate":
      return src.slice(0, at + e.len) + src.slice(at, at + e.len) + src.slice(at + e.len);
    case "insert":
    case "insertToken":
      return src.slice(0, at) + e.text + src.slice(at);
    case "byte":
      return src.slice(0, at) + String.fromCharCode(e.code) + src.slice(at);
    case "truncate":
      return src.slice(0, at);
    default: {
      const never: never = e;
      return never;
    }
  }
}

describe("parse() on hostile input", () => {
  it("random text", () => {
    fc.assert(fc.property(fc.string({ maxLength: 400 }), wellFormed), { numRuns: 300 });
  });

  it("random code-like text", () => {
    const piece = fc.constantFrom(
      "x", "if", "def", "match", "case", "error", "(", ")", "[", "]", "{", "}", ":", ",", "=", "==", "+", "-",
      "@a", "?", "`t {x}`", '"s"', '"""', "1", "\n", "\n  ", "\n    ", " ", "#c", "not", "and", "lambda", "it", "()",
    );
    fc.assert(fc.property(fc.array(piece, { maxLength: 200 }), (ps) => wellFormed(ps.join(""))), { numRuns: 500 });
  });

  it("random bytes decoded as latin-1 and as UTF-8", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        wellFormed(Buffer.from(bytes).toString("latin1"));
        wellFormed(Buffer.from(bytes).toString("utf8"));
      }),
      { numRuns: 200 },
    );
  });

  it("mutated reference programs", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: programs.length - 1 }), fc.array(edit, { minLength: 1, maxLength: 6 }), (i, edits) => {
        wellFormed(edits.reduce(apply, programs[i]!));
      }),
      { numRuns: 400 },
    );
  });

  it("every prefix of a program", () => {
    const src = programs[0]!;
    for (let i = 0; i <= src.length; i += 3) wellFormed(src.slice(0, i));
  });
});

describe("parse() on absurd input", () => {
  const cases: [string, () => string, RegExp][] = [
    [
      "10,000 nested blocks",
      () => Array.from({ length: 10_000 }, (_, i) => " ".repeat(i) + "if x:\n").join("") + " ".repeat(10_000) + "pass\n",
      /blocks nested deeper than 100 levels/,
    ],
    ["10,000 nested brackets", () => "x = " + "(".repeat(10_000) + "1" + ")".repeat(10_000) + "\n", /brackets nested deeper/],
    ["10,000 nested lists", () => "x = " + "[".repeat(10_000) + "]".repeat(10_000) + "\n", /brackets nested deeper/],
    ["10,000 nested lambdas", () => "f = " + "lambda x: ".repeat(10_000) + "x\n", /lambdas nested deeper/],
    ["a 100,000-term sum", () => "x = " + Array(100_000).fill("a").join(" + ") + "\n", /nested deeper than 1000/],
    ["100,000 nots", () => "x = " + "not ".repeat(100_000) + "a\n", /nested deeper than 1000/],
    ["a 100,000-link member chain", () => "x = a" + ".b".repeat(100_000) + "\n", /nested deeper than 1000/],
    ["an unclosed bracket before 50,000 lines", () => "x = (\n" + "y = 1\n".repeat(50_000), /was never closed/],
    ["binary garbage", () => Array.from({ length: 200_000 }, (_, i) => String.fromCharCode((i * 7919) % 256)).join(""), /unexpected character/],
  ];
  for (const [name, make, message] of cases) {
    it(name, () => {
      const src = make();
      const t0 = performance.now();
      const r = parse(src, "absurd.vvm");
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(r.diagnostics.some((d) => d.code === "E001" && message.test(d.message))).toBe(true);
      expect(r.diagnostics.length).toBeLessThanOrEqual(101);
    });
  }

  it("a 2 MB program of ordinary statements", () => {
    const src = 'x = [1, 2, "three", {k: 4}]\n'.repeat(75_000);
    const r = parse(src, "big.vvm");
    expect(r.diagnostics).toEqual([]);
    expect(r.program!.body.length).toBe(75_000);
  });
});

describe("literals stay linear", () => {
  it("a template with 100,000 placeholders, positions right to the end", () => {
    const r = parse("x = `" + "{a}\n".repeat(100_000) + "`\n", "t.vvm");
    expect(r.diagnostics).toEqual([]);
    const s = r.program!.body[0]!;
    const parts = s.kind === "Assign" && s.value.kind === "TemplateExpr" ? s.value.template.parts : [];
    const last = parts.filter((p) => p.kind === "path").pop();
    expect(last && "span" in last && [last.span.line, last.span.col]).toEqual([100_000, 1]);
  });

  it("200,000 bad escapes yield 50 diagnostics", () => {
    const r = parse('x = """' + "\\q\n".repeat(200_000) + '"""\n', "t.vvm");
    expect(r.diagnostics.length).toBe(50);
    expect(r.diagnostics.every((d) => d.code === "E005")).toBe(true);
  });
});
