// The simulator's answer to a typed call (spec/typed-results.md §8): a placeholder that fits the schema, or a
// failed call saying why none can be made — never a crash, a stall or a re-ask that gets the same reply.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { validatorFor } from "../../runtime/calls/schema-validator.ts";
import { MAX_SIZE, placeholder } from "../../runtime/providers/placeholder.ts";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const dir = useTempDir("vvm-placeholder-");

/** What a `--provider sim` run of one typed call exports (errors included). */
async function simulated(returns: string, config = ""): Promise<unknown> {
  const file = path.join(dir, "p.vvm");
  await writeFile(file, [`agent a(model="haiku", prompt="x"${config})`, `r = @a \`one\`("x", returns=${returns})`, "export r"].join("\n"));
  const res = await runCli(["run", file, "--provider", "sim", "--allow-error-exports"], { cwd: dir });
  if (res.code !== 0) throw new Error(`exit ${res.code}\n${res.stderr}`);
  return (JSON.parse(res.stdout) as { r: unknown }).r;
}

describe("the simulator's placeholder", () => {
  it("is bounded: a schema that needs more fails the call at once, saying the limit", async () => {
    const limit = `at most ${MAX_SIZE.toLocaleString("en")} items and characters`;
    const started = Date.now();
    expect(await simulated('{"$schema": "x", "type": "array", "minItems": 1000000000}')).toMatchObject({
      error: { kind: "rejected", message: expect.stringContaining(`the simulator cannot make a value for this returns= schema: the schema needs a larger value than the simulator makes (${limit}`) },
    });
    const nested = { type: "array", minItems: 1000, items: { type: "array", minItems: 1000, items: { type: "array", minItems: 100, items: { type: "string" } } } };
    expect(placeholder(nested, "s")).toEqual({ ok: false, problem: expect.stringContaining(limit) });
    // required references that fan out: 2^20 values, 20 levels deep
    const $defs = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`n${i}`, { type: "object", properties: { a: { $ref: `#/$defs/n${i + 1}` }, b: { $ref: `#/$defs/n${i + 1}` } }, required: ["a", "b"] }]));
    const fan = { $defs: { ...$defs, n20: { type: "integer" } }, $ref: "#/$defs/n0" };
    expect(placeholder(fan, "s")).toEqual({ ok: false, problem: expect.stringContaining(limit) });
    expect(placeholder({ type: "string", minLength: MAX_SIZE + 1 }, "s")).toEqual({ ok: false, problem: expect.stringContaining(limit) });
    expect(Date.now() - started).toBeLessThan(5000);
    // below the bound it is made
    expect(placeholder({ type: "array", minItems: 3, items: { type: "integer" } }, "s")).toEqual({ ok: true, value: [0, 0, 0] });
  });

  it("fits the bounds, lengths, formats and tuples it can honour exactly", () => {
    const schemas: Record<string, unknown>[] = [
      { type: "number", exclusiveMinimum: 0 },
      { type: "number", exclusiveMinimum: 0, maximum: 0.5 },
      { type: "number", exclusiveMaximum: -2 },
      { type: "integer", exclusiveMinimum: 2.5 },
      { type: "integer", minimum: 3, maximum: 9 },
      { type: "integer", exclusiveMaximum: 0 },
      { type: "string", maxLength: 3 },
      { type: "string", minLength: 20, maxLength: 25 },
      ...["date-time", "date", "time", "duration", "email", "uri", "uri-reference", "uri-template", "url", "uuid", "ipv4", "ipv6", "hostname", "regex", "json-pointer", "relative-json-pointer", "byte"].map((format) => ({ type: "string", format })),
      { type: "array", prefixItems: [{ type: "string" }, { type: "integer", minimum: 1 }], minItems: 3, items: { type: "boolean" } },
      { type: "object", properties: { kids: { type: "array", items: { $ref: "#" } } }, required: ["kids"] },
    ];
    for (const schema of schemas) {
      const p = placeholder(schema, "[sim:a]");
      const validate = validatorFor(schema);
      if (!p.ok || typeof validate !== "function") throw new Error(JSON.stringify(schema));
      expect([schema, validate(p.value)]).toEqual([schema, []]);
    }
  });

  it("fails the call, saying why, for a schema it cannot fit (a pattern, a not): no re-ask", async () => {
    expect(await simulated('{code: {"$schema": "x", "type": "string", "pattern": "^[0-9]+$"}}')).toMatchObject({
      error: { kind: "rejected", message: 'the simulator cannot make a value for this returns= schema: code: must match pattern "^[0-9]+$"' },
    });
    // the same words when the value travels in the envelope (a memory agent's call, a list or word shape)
    expect(await simulated('{code: {"$schema": "x", "type": "string", "pattern": "^[0-9]+$"}}', ', memory={scope: "project", key: "k"}')).toMatchObject({
      error: { kind: "rejected", message: 'the simulator cannot make a value for this returns= schema: code: must match pattern "^[0-9]+$"' },
    });
    expect(await simulated('{"$schema": "x", "type": "string", "pattern": "^[0-9]+$"}')).toMatchObject({
      error: { kind: "rejected", message: 'the simulator cannot make a value for this returns= schema: the value: must match pattern "^[0-9]+$"' },
    });
    expect(await simulated('{"$schema": "x", "type": "object", "properties": {"n": {"type": "integer", "not": {"const": 0}}}, "required": ["n"], "additionalProperties": false}')).toMatchObject({
      error: { kind: "rejected", message: "the simulator cannot make a value for this returns= schema: n: must NOT be valid" },
    });
    // a $ref loop through a subschema's own $id, which the schema's check cannot see: named, not a stack overflow
    expect(await simulated('{"$schema": "x", "$defs": {"a": {"$id": "https://e.com/a", "anyOf": [{"$ref": "#"}]}}, "$ref": "https://e.com/a"}')).toMatchObject({
      error: { kind: "rejected", message: expect.stringMatching(/^the simulator cannot make a value for this returns= schema: a "\$ref" leads back to where it stands/) },
    });
  });
});
