// Typed results (returns=, spec/typed-results.md): the shape language, what goes on the wire through the real
// SDK (output_config), re-asks, rejection, memory patches beside the value, and the expense example against the
// stand-in, the script provider and the simulator.
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { decodeReply, prepareTyped } from "../../runtime/calls/typed.ts";
import { fillOptional, parseShape, shapeSchema, type Shape } from "../../runtime/shapes.ts";
import { fromJSON } from "../../runtime/values.ts";
import { ROOT, runCli, type CliResult } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import type { RecordedRequest } from "../support/standin.ts";

const dir = useTempDir("vvm-typed-");
const standin = useStandin();

function shape(v: unknown): Shape {
  const r = parseShape(fromJSON(v));
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.shape;
}

function problems(v: unknown) {
  const r = parseShape(fromJSON(v));
  return r.ok ? [] : r.problems.map((p) => [p.code, p.path.join("."), p.message]);
}

function exportsOf(res: CliResult): Record<string, unknown> {
  if (res.code !== 0) throw new Error(`exit ${res.code}\n${res.stderr}`);
  return JSON.parse(res.stdout) as Record<string, unknown>;
}

async function program(name: string, source: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, source);
  return file;
}

/** The text blocks of a request's messages, role by role, as the stand-in received them. */
function conversation(r: RecordedRequest): [string, string][] {
  return (r.body.messages as { role: string; content: { type: string; text?: string }[] }[]).map((m) => [m.role, m.content.map((b) => b.text ?? `<${b.type}>`).join(" | ")]);
}

describe("the shape language", () => {
  it("compiles each shape to the JSON Schema it stands for", () => {
    expect(shapeSchema(shape({ vendor: "string", amount: "number", count: "integer", paid: "boolean", note: "string?", kind: "food | travel", tags: ["string"], who: { name: "string" } }))).toEqual({
      type: "object",
      properties: {
        vendor: { type: "string" },
        amount: { type: "number" },
        count: { type: "integer" },
        paid: { type: "boolean" },
        note: { type: "string" },
        kind: { type: "string", enum: ["food", "travel"] },
        tags: { type: "array", items: { type: "string" } },
        who: { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false },
      },
      required: ["vendor", "amount", "count", "paid", "kind", "tags", "who"],
      additionalProperties: false,
    });
    expect(shapeSchema(shape([["integer"]]))).toEqual({ type: "array", items: { type: "array", items: { type: "integer" } } });
    // the escape hatch is used as written, without its "$schema" marker
    expect(shapeSchema(shape({ when: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "string", format: "date" } }))).toMatchObject({
      properties: { when: { type: "string", format: "date" } },
    });
  });

  it("reports every problem with the path to it", () => {
    expect(problems({ a: "str", b: [], c: { d: "x|string" }, e: "n?" })).toEqual([
      ["W070", "a", expect.stringContaining('unknown type "str" (did you mean "string"?)')],
      ["W070", "b", expect.stringContaining("an empty list")],
      ["W070", "c.d", expect.stringContaining("a choice of words")],
      ["W070", "e", expect.stringContaining('unknown type "n"')],
    ]);
    // a name every object inherits is an unknown type, not a hint (it was a crash in vvm check)
    expect(problems({ a: "constructor", b: "__proto__" })).toEqual([
      ["W070", "a", expect.stringMatching(/^unknown type "constructor": a shape is/)],
      ["W070", "b", expect.stringMatching(/^unknown type "__proto__": a shape is/)],
    ]);
    expect(problems(["integer?"])).toEqual([["W070", "0", expect.stringContaining("'?' marks an optional field")]]);
    expect(problems({ s: { $schema: "x", type: "object", properties: { a: { type: "text" } }, required: [1] } })).toEqual([
      ["W071", "s.required", expect.stringContaining("a list of field names")],
      ["W071", "s.properties.a.type", expect.stringContaining('not "text"')],
    ]);
    expect(problems(null)).toEqual([["W070", "", expect.stringContaining("not unit")]]);
  });

  it("fills the optional fields a reply leaves out with unit, at every depth", () => {
    const s = shape({ a: "string?", list: [{ b: "number?", c: "string" }] });
    const v = fillOptional(s, fromJSON({ list: [{ c: "x" }, { b: 2, c: "y" }] }));
    expect(v).toEqual(fromJSON({ a: null, list: [{ b: null, c: "x" }, { b: 2, c: "y" }] }));
  });
});

describe("typed calls through the SDK (stand-in)", () => {
  it("send the schema as output_config and return the reply's JSON as a value", async () => {
    const file = await program(
      "wire.vvm",
      [
        'agent clerk(model="haiku", prompt="You read receipts.")',
        'r = @clerk `Read.`("Acme 12.50", returns={vendor: "string", amount: "number", id: "string"})',
        "total = r.amount + 1",
        'words = @clerk `Words.`("x", returns=["string"])',
        'plain = @clerk `Plain.`("x")',
        "export pack(total, r, words, plain)",
      ].join("\n"),
    );
    standin.enqueue(
      { type: "text", text: '{"vendor": "Acme", "amount": 12.5, "id": "7"}' },
      { type: "text", text: '{"value": ["a", "b"]}' },
      { type: "text", text: "just text" },
    );
    const out = exportsOf(await runCli(["run", file], { cwd: dir, env: standin.env() }));
    expect(out).toEqual({ total: 13.5, r: { vendor: "Acme", amount: 12.5, id: "7" }, words: ["a", "b"], plain: "just text" });
    const [typed, list, plain] = standin.requests;
    expect(typed!.body.output_config).toEqual({
      format: {
        type: "json_schema",
        schema: { type: "object", properties: { vendor: { type: "string" }, amount: { type: "number" }, id: { type: "string" } }, required: ["vendor", "amount", "id"], additionalProperties: false },
      },
    });
    // a list travels in an envelope: the output format is always an object
    expect(list!.body.output_config.format.schema).toEqual({ type: "object", properties: { value: { type: "array", items: { type: "string" } } }, required: ["value"], additionalProperties: false });
    expect(plain!.body.output_config).toBeUndefined();
  });

  it("re-ask with the problems in the same conversation, then reject after the last re-ask", async () => {
    const file = await program(
      "reask.vvm",
      [
        'agent clerk(model="haiku", prompt="You read receipts.", returns={vendor: "string", amount: "number"})',
        'fixed = @clerk `Read A.`("A", retry=2)',
        'failed = @clerk `Read B.`("B", retry=1)',
        "export pack(fixed, failed)",
      ].join("\n"),
    );
    standin.enqueue(
      { type: "text", text: '{"vendor": "Acme", "amount": "12.50"}' },
      { type: "text", text: "not json" },
      { type: "text", text: '{"vendor": "Acme", "amount": 12.5}' },
      { type: "text", text: '{"vendor": 1, "amount": 2}' },
      { type: "text", text: '{"vendor": 1, "amount": 3}' },
    );
    const trace = path.join(dir, "reask.jsonl");
    const res = await runCli(["run", file, "--allow-error-exports", "--trace", trace], { cwd: dir, env: standin.env() });
    const out = exportsOf(res);
    expect(out.fixed).toEqual({ vendor: "Acme", amount: 12.5 });
    expect(out.failed).toEqual({
      error: {
        kind: "rejected",
        message: "the reply does not fit returns= after 1 re-ask: vendor: must be a string",
        data: { errors: ["vendor: must be a string"], reply_preview: '{"vendor": 1, "amount": 3}', reasks: 1, attempts: 2, model: "claude-haiku-5-5" },
      },
    });
    expect(standin.requests).toHaveLength(5);
    // the third request carries both bad replies and what was wrong with each
    expect(conversation(standin.requests[2]!)).toEqual([
      ["user", "Read A. | Input:\n---\nA\n---"],
      ["assistant", '{"vendor": "Acme", "amount": "12.50"}'],
      ["user", expect.stringContaining("- amount: must be a number")],
      ["assistant", "not json"],
      ["user", expect.stringContaining("- the reply is not JSON: expected a JSON value, found 'not'")],
    ]);
    for (const r of standin.requests) expect(r.body.output_config.format.type).toBe("json_schema");
    const calls = (await readFile(trace, "utf8")).split("\n").filter((l) => l.includes('"type":"call"')).map((l) => JSON.parse(l));
    expect(calls.map((c) => [c.ok, c.reasks, c.attempts])).toEqual([[true, 2, 3], [false, 1, 2]]);
    expect(res.stderr).toContain("2 calls, 1 failed (1 rejected; 5 attempts)");
  });

  it("answer a typed call the stand-in was not told about with a value of the schema's shape", async () => {
    const file = await program("default.vvm", ['agent clerk(model="haiku", prompt="x")', 'r = @clerk `Read.`("x", returns={a: "string", n: "integer", k: "x|y", l: ["number"], o: "boolean?"})', "export r"].join("\n"));
    expect(exportsOf(await runCli(["run", file], { cwd: dir, env: standin.env() }))).toEqual({ r: { a: "[standin]", n: 0, k: "x", l: [], o: null } });
  });

  it("carry a memory patch beside the value, and apply it", async () => {
    const project = path.join(dir, "memory");
    await import("node:fs/promises").then((fs) => fs.mkdir(project, { recursive: true }));
    const file = path.join(project, "ledger.vvm");
    await writeFile(
      file,
      [
        'agent keeper(model="haiku", prompt="You keep the books.", memory={ scope: "project", key: "books" }, returns={balance: "number"})',
        'first = @keeper `Record 10.`(())',
        'second = @keeper `Record 5.`(())',
        "total = first.balance + second.balance",
        "export total",
      ].join("\n"),
    );
    standin.enqueue(
      { type: "text", text: '{"value": {"balance": 10}, "memory_patch": {"digest": "Balance 10.", "retain": ["opened the books"]}}' },
      { type: "text", text: '{"value": {"balance": 15}}' },
    );
    const trace = path.join(project, "run.jsonl");
    expect(exportsOf(await runCli(["run", file, "--trace", trace], { cwd: project, env: standin.env() }))).toEqual({ total: 25 });
    const schema = standin.requests[0]!.body.output_config.format.schema;
    expect(Object.keys(schema.properties)).toEqual(["value", "memory_patch"]);
    expect(schema.required).toEqual(["value"]);
    // the second call sees what the first one's patch wrote
    const context = (standin.requests[1]!.body.system as { text: string }[]).map((b) => b.text).join("\n");
    expect(context).toContain("Balance 10.");
    expect(context).toContain("opened the books");
    const [key] = await readdir(path.join(project, ".vvm/memory"));
    expect(await readFile(path.join(project, ".vvm/memory", key!, "digest.md"), "utf8")).toContain("Balance 10.");
    const memory = (await readFile(trace, "utf8")).split("\n").filter((l) => l.includes('"type":"memory"')).map((l) => JSON.parse(l).result);
    expect(memory).toEqual(["applied", "unchanged"]);
  });

  it("reject a reply that does not fit without touching memory", async () => {
    const project = path.join(dir, "memory-rejected");
    await import("node:fs/promises").then((fs) => fs.mkdir(project, { recursive: true }));
    const file = path.join(project, "p.vvm");
    await writeFile(file, ['agent keeper(model="haiku", prompt="x", memory={ scope: "project", key: "k" }, returns={n: "number"})', "r = @keeper `Go.`(())", "export r"].join("\n"));
    standin.enqueue({ type: "text", text: '{"value": {"n": "ten"}, "memory_patch": {"digest": "should not be saved"}}' });
    const res = await runCli(["run", file, "--allow-error-exports"], { cwd: project, env: standin.env() });
    expect((exportsOf(res).r as { error: { kind: string } }).error.kind).toBe("rejected");
    const keys = await readdir(path.join(project, ".vvm/memory")).catch(() => []);
    for (const k of keys) expect(await readFile(path.join(project, ".vvm/memory", k, "digest.md"), "utf8").catch(() => "")).not.toContain("should not be saved");
  });

  it("re-ask a reply that gives a field twice rather than take its last value, and apply no memory_patch given twice", async () => {
    const project = path.join(dir, "memory-twice");
    await import("node:fs/promises").then((fs) => fs.mkdir(project, { recursive: true }));
    const file = path.join(project, "p.vvm");
    await writeFile(
      file,
      [
        'agent clerk(model="haiku", prompt="x", returns={amount: "number"})',
        'agent keeper(model="haiku", prompt="x", memory={ scope: "project", key: "k" }, returns={n: "number"})',
        "a = @clerk `Read.`((), retry=1)",
        "r = @keeper `Go.`(())",
        "export pack(a, r)",
      ].join("\n"),
    );
    standin.enqueue(
      { type: "text", text: '{"amount": 1, "amount": 1000}' },
      { type: "text", text: '{"amount": 1}' },
      { type: "text", text: '{"value": {"n": 1}, "memory_patch": {"retain": ["A"]}, "memory_patch": {"retain": ["B"]}}' },
    );
    const res = await runCli(["run", file, "--allow-error-exports"], { cwd: project, env: standin.env() });
    const out = exportsOf(res) as { a: unknown; r: { error: { kind: string; data: { errors: string[] } } } };
    expect(out.a).toEqual({ amount: 1 });
    expect(conversation(standin.requests[1]!)[2]).toEqual(["user", expect.stringContaining('- the reply is not JSON: the field "amount" is given twice in this object (line 1, column 15)')]);
    expect(out.r.error.kind).toBe("rejected");
    expect(out.r.error.data.errors).toEqual(['the reply is not JSON: the field "memory_patch" is given twice in this object (line 1, column 56)']);
    const keys = await readdir(path.join(project, ".vvm/memory")).catch(() => []);
    for (const k of keys) expect(await readFile(path.join(project, ".vvm/memory", k, "ledger.jsonl"), "utf8").catch(() => "")).not.toMatch(/"A"|"B"/);
  });

  it("raise thrown at the call for a shape it cannot use, before any request", async () => {
    const file = await program("bad.vvm", ['agent clerk(model="haiku", prompt="x")', "shape = {n: \"nubmer\"}", 'r = @clerk `Go.`("x", returns=shape)', "export r"].join("\n"));
    const res = await runCli(["run", file], { cwd: dir, env: standin.env() });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('"message": "returns=: n: unknown type \\"nubmer\\": a shape is');
    expect(standin.requests).toHaveLength(0);
  });
});

describe("the expense example (upstream 07 with returns=)", () => {
  const example = path.join(ROOT, "examples/expense-report.vvm");
  const receipts = path.join(ROOT, "examples/receipts.json");

  it("sums the amounts with the script provider, re-asking the reply that gave the amount as text", async () => {
    const res = await runCli(["run", example, "--input", receipts, "--script", path.join(ROOT, "examples/expense-report.yaml")], { cwd: dir });
    const report = exportsOf(res).report as { count: number; total: number; unreadable: string[]; expenses: { note: unknown }[] };
    expect([report.count, report.total, report.unreadable]).toEqual([4, 465.5, []]);
    expect(report.expenses.map((e) => e.note)).toEqual([null, "team dinner", null, "two nights"]);
    expect(res.stderr).toContain("4 calls (5 attempts)");
  });

  it("sums the amounts against the stand-in, reading each receipt the request carries", async () => {
    standin.setHandler((req) => {
      const input = /Input:\n---\n([^\n]*)\n---/.exec(conversation(req)[0]![1])![1]!;
      const amount = Number(/(\d+\.\d+) EUR/.exec(input)![1]);
      return { type: "text", text: JSON.stringify({ vendor: input.split(",")[0], amount, date: "2026-03-02", category: "other" }) };
    });
    const report = exportsOf(await runCli(["run", example, "--input", receipts], { cwd: dir, env: standin.env() })).report as { total: number; count: number };
    expect([report.count, report.total]).toEqual([4, 465.5]);
    expect(standin.requests).toHaveLength(4);
    expect(standin.requests[0]!.body.output_config.format.schema.properties.category).toEqual({ type: "string", enum: ["travel", "meals", "supplies", "other"] });
  });

  it("runs offline on the simulator's placeholders", async () => {
    const report = exportsOf(await runCli(["run", example, "--input", receipts, "--provider", "sim"], { cwd: dir })).report as { total: number; expenses: unknown[] };
    expect(report.total).toBe(0);
    expect(report.expenses[0]).toEqual({ vendor: "[sim:bookkeeper]", amount: 0, date: "[sim:bookkeeper]", category: "travel", note: null });
  });
});

describe("the trace of a typed call", () => {
  it("gives reasks, and reply_chars null; nothing of the reply or the value is written", async () => {
    const file = await program("traced.vvm", ['agent a(model="haiku")', 'r = @a `Count.`("secret-input", returns={count: "integer"}, retry=1)', "export r", ""].join("\n"));
    const script = path.join(dir, "traced.yaml");
    await writeFile(script, `- { turn: 1, reply: '{"count": "twelve-words"}' }\n- { turn: 2, reply: '{"count": 12345}' }\n`);
    const trace = path.join(dir, "traced.jsonl");
    expect(exportsOf(await runCli(["run", file, "--script", script, "--trace", trace], { cwd: dir }))).toEqual({ r: { count: 12345 } });
    const text = await readFile(trace, "utf8");
    const call = text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.type === "call");
    expect(call).toMatchObject({ ok: true, attempts: 2, reasks: 1, reply_chars: null });
    for (const leak of ["twelve-words", "12345", "secret-input"]) expect(text).not.toContain(leak);
  });
});

describe("a returns= value read once", () => {
  it("is compiled once per value, apart for calls with and without memory (one wraps the value, one does not)", async () => {
    const shape = fromJSON({ vendor: "string", amount: "number" });
    const site = { path: "t.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };
    const plain = await prepareTyped(shape, false, site);
    const withMemory = await prepareTyped(shape, true, site);
    expect(plain!.envelope).toBe(false);
    expect(withMemory!.envelope).toBe(true);
    expect(await prepareTyped(shape, false, site)).toBe(plain);
    expect(await prepareTyped(shape, true, site)).toBe(withMemory);
    // an equal shape written again is its own value: read again, with the same result
    const again = await prepareTyped(fromJSON({ vendor: "string", amount: "number" }), false, site);
    expect(again).not.toBe(plain);
    expect(again!.wire).toEqual(plain!.wire);
    expect(decodeReply(plain!, '{"vendor": "x", "amount": 1}').ok).toBe(true);
    expect(decodeReply(withMemory!, '{"vendor": "x", "amount": 1}').ok).toBe(false);
  });

  it("keeps a JSON Schema's own references pointing into it when the value is wrapped", async () => {
    const site = { path: "t.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };
    // a list of itself ("#"), and a list of a definition ("#/$defs/s"): both wrapped, as every list is
    const nested = (await prepareTyped(fromJSON({ $schema: "x", type: "array", items: { $ref: "#" } }), false, site))!;
    expect(nested.envelope).toBe(true);
    expect(decodeReply(nested, '{"value": [[], [[]]]}').ok).toBe(true);
    expect(decodeReply(nested, '{"value": [{"value": []}]}').ok).toBe(false);
    const defs = (await prepareTyped(fromJSON({ $schema: "x", $defs: { s: { type: "string" } }, type: "array", items: { $ref: "#/$defs/s" } }), false, site))!;
    expect(decodeReply(defs, '{"value": ["a", "b"]}').ok).toBe(true);
    expect(decodeReply(defs, '{"value": ["a", 2]}').ok).toBe(false);
    // an object schema referring to itself, wrapped because the agent has memory
    const tree = fromJSON({ $schema: "x", type: "object", properties: { name: { type: "string" }, kids: { type: "array", items: { $ref: "#" } } }, required: ["name", "kids"], additionalProperties: false });
    const withMemory = (await prepareTyped(tree, true, site))!;
    expect(decodeReply(withMemory, '{"value": {"name": "a", "kids": [{"name": "b", "kids": []}]}}').ok).toBe(true);
    expect(decodeReply(withMemory, '{"value": {"name": "a", "kids": [{"value": 1}]}}').ok).toBe(false);
  });
});
