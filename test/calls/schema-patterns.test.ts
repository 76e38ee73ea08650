// A schema's `pattern` runs against the model's reply, which is untrusted: it runs in linear time (RE2),
// so a pattern that would backtrack exponentially cannot stall a run (spec/typed-results.md §2.1).
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { linearRegExp } from "../../runtime/calls/re2-pattern.ts";
import { validatorFor, type Validator } from "../../runtime/calls/schema-validator.ts";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const dir = useTempDir("vvm-patterns-");

function validator(schema: Record<string, unknown>): Validator {
  const v = validatorFor(schema);
  if (typeof v !== "function") throw new Error(v.problem);
  return v;
}

// forty `a`s and a `!`: about 2^40 steps for a backtracking engine, which never finishes in the test's time
const EVIL = "a".repeat(40) + "!";

describe("schema patterns", () => {
  it("test a backtracking pattern against a hostile string in linear time", () => {
    const v = validator({ type: "object", properties: { code: { type: "string", pattern: "^(a+)+$" } }, required: ["code"] });
    const t0 = performance.now();
    expect(v({ code: EVIL })).toEqual(['code: must match pattern "^(a+)+$"']);
    expect(v({ code: "a".repeat(100_000) + "!" })).toHaveLength(1);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(v({ code: "aaaa" })).toEqual([]);
  });

  it("search the text, as JSON Schema says, and keep each pattern apart", () => {
    const v = validator({ type: "object", properties: { a: { type: "string", pattern: "b+" }, z: { type: "string", pattern: "^\\d{4}-\\d{2}$" } } });
    expect(v({ a: "abba", z: "2026-11" })).toEqual([]);
    expect(v({ a: "xyz", z: "2026-1" })).toEqual(['a: must match pattern "b+"', 'z: must match pattern "^\\d{4}-\\d{2}$"']);
  });

  it("run patternProperties the same way", () => {
    const v = validator({ type: "object", patternProperties: { "^(x+)+$": { type: "number" } } });
    expect(v({ xxx: 1 })).toEqual([]);
    expect(v({ xxx: "one" })).toHaveLength(1);
    expect(v({ ["x".repeat(40) + "!"]: "ignored: the name does not match" })).toEqual([]);
  });

  it("read JavaScript's \\u escapes, and a backslash before a u as a backslash", () => {
    const v = validator({ type: "string", pattern: "^\\u00e9+\\u{1F600}?$" });
    expect(v("éé😀")).toEqual([]);
    expect(v("e")).toHaveLength(1);
    expect(validator({ type: "string", pattern: "^\\\\u00e9$" })("\\u00e9")).toEqual([]);
  });

  it("mean what ECMA-262 means where RE2's own reading differs (white space, the dot, empty and full classes)", () => {
    const pairs: [string, string][] = [
      ["^a.b$", "a\rb"],
      ["^a.b$", "a\u2028b"],
      ["^a.b$", "axb"],
      ["^\\s$", "\u00a0"],
      ["^\\s$", "\ufeff"],
      ["^\\s$", "\u0085"],
      ["^[\\s]$", "\u3000"],
      ["^\\S$", "\u00a0"],
      ["^\\S$", "x"],
      ["a[]", "a"],
      ["^[^]$", "\n"],
      ["^x$", "x\n"],
      ["^[.]$", "x"],
      ["\\bfoo\\b", "é foo"],
      ["^\\w+$", "héllo"],
      ["^\\d+$", "١٢"],
      ["^\\uD83D\\uDE00$", "😀"],
      ["^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$", "😃"],
      ["^\\uD83D$", "\uD83D"],
      ["^\\cJ$", "\n"],
      ["^[\\b]$", "\b"],
    ];
    for (const [pattern, text] of pairs) expect([pattern, text, linearRegExp(pattern).test(text)]).toEqual([pattern, text, new RegExp(pattern, "u").test(text)]);
  });

  it("refuse lookaround, backreferences and long counts when the schema is compiled, saying why", () => {
    for (const pattern of ["(?=a)b", "(a)\\1", "^.{1,5000}$"]) {
      const v = validatorFor({ type: "string", pattern });
      expect(typeof v).toBe("object");
      expect((v as { problem: string }).problem).toContain(`pattern ${JSON.stringify(pattern)} cannot be run in time linear in the reply (RE2: `);
      expect((v as { problem: string }).problem).toContain("no lookaround, no backreferences, no repetition count over 1000");
    }
  });

  it("refuse RE2's own syntax, which is not ECMA-262's, wherever the pattern stands", () => {
    for (const schema of [{ type: "string", pattern: "(?i)x" }, { type: "object", properties: { a: true }, patternProperties: { "(?i)^x": true } }]) {
      const v = validatorFor(schema);
      expect((v as { problem: string }).problem).toMatch(/^pattern "\(\?i\)\^?x" is not a regular expression \(Invalid regular expression: /);
    }
  });

  it("compile a schema whose property names a backtracking patternProperties pattern would try for hours", () => {
    const t0 = performance.now();
    const v = validator({ type: "object", properties: { [EVIL]: { type: "number" } }, patternProperties: { "^(a+)+$": { type: "string" } } });
    expect(v({ [EVIL]: 1, aaa: "x" })).toEqual([]);
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it("check a url in bounded time: ajv-formats' expression is quadratic in a run of colons", () => {
    const v = validator({ type: "string", format: "url" });
    const t0 = performance.now();
    expect(v("http://" + ":".repeat(200_000))).toEqual(['the reply: must match format "url"']);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(v("https://example.com/a?b=1")).toEqual([]);
    expect(v("http://10.0.0.1/")).toHaveLength(1);
    expect(v("https://example.com/" + "a".repeat(9000))).toHaveLength(1);
  });

  it("reject a hostile reply to a typed call instead of stalling the run", async () => {
    const file = path.join(dir, "code.vvm");
    await writeFile(
      file,
      ['agent a(model="haiku", prompt="You answer.")', 'x = @a `Give the code.`("", returns={code: {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string", "pattern": "^(a+)+$"}})', "export x"].join("\n"),
    );
    const script = path.join(dir, "code.yaml");
    await writeFile(script, `- { kind: agent, reply: ${JSON.stringify(JSON.stringify({ code: EVIL }))} }\n`);
    const res = await runCli(["run", file, "--script", script], { cwd: dir });
    expect(res.code).toBe(1);
    expect(res.stdout).toContain('code: must match pattern \\"^(a+)+$\\"');
    expect(res.stderr).toContain("1 rejected");
  });
});
