// Typed results at their edges (spec/typed-results.md): what a program and a model read when a reply or a
// schema is unusual — previews, paths, schemas the validator cannot use.
import { describe, expect, it } from "vitest";
import { askTyped, decodeReply, prepareTyped, type Typed } from "../../runtime/calls/typed.ts";
import { parseShape, pathText } from "../../runtime/shapes.ts";
import { fromJSON, type Value, type VObject } from "../../runtime/values.ts";

const site = { path: "t.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };

async function typed(returns: unknown, withMemory = false): Promise<Typed> {
  return (await prepareTyped(fromJSON(returns), withMemory, site))!;
}

const fits = (t: Typed, reply: string) => decodeReply(t, reply).ok;

/** The message of the `thrown` a call with `returns` raises before any request, or "accepted". */
function refusal(returns: unknown): Promise<string> {
  return refusalOf(fromJSON(returns));
}

/** As refusal, for a value made as it is (one that shares its parts). */
function refusalOf(returns: Value): Promise<string> {
  return prepareTyped(returns, false, site).then(
    () => "accepted",
    (e: unknown) => (e as Error).message.replace(/^thrown: /, ""),
  );
}

describe("a rejected reply", () => {
  it("keeps a preview cut between characters, never inside a surrogate pair", async () => {
    const text = "a".repeat(499) + "😀😀";
    const out = await askTyped(await typed({ n: "number" }), 0, 20, "m", async () => ({ ok: true, text, attempts: 1, turns: 1, toolUses: 0 }));
    if (out.ok) throw new Error("accepted");
    const data = (out as { rejected: VObject }).rejected.get("error") as VObject;
    expect((data.get("data") as VObject).get("reply_preview")).toBe("a".repeat(499) + "…");
  });
});

describe("re-asks", () => {
  it("stop once the call has made max_turns requests, however many retry= allows", async () => {
    let asked = 0;
    const ask = async (_history: unknown, firstTurn: number) => {
      asked++;
      return { ok: true as const, text: '{"n": "four"}', attempts: 1, turns: firstTurn, toolUses: 0 };
    };
    const out = await askTyped(await typed({ n: "number" }), 3, 2, "m", ask);
    expect(asked).toBe(2);
    if (out.ok) throw new Error("accepted");
    const error = (out as { rejected: VObject }).rejected.get("error") as VObject;
    expect(error.get("message")).toBe("the reply does not fit returns= after 1 re-ask (max_turns=2 allows no more requests): n: must be a number");
    // max_turns=1: the first reply is the only one
    asked = 0;
    expect((await askTyped(await typed({ n: "number" }), 3, 1, "m", ask)).reasks).toBe(0);
    expect(asked).toBe(1);
  });
});

describe("field names an object inherits", () => {
  it("are fields like any other: constructor, toString and valueOf are neither present when absent nor checked when not there", async () => {
    const shape = await typed({ name: "string", constructor: "string?" });
    expect(shape.validate({ name: "n" })).toEqual([]);
    const hatch = await typed({ $schema: "x", type: "object", required: ["toString"], dependentRequired: { a: ["valueOf"] } });
    expect(hatch.validate({})).toEqual(["toString: missing (a required field)"]);
    expect(hatch.validate({ toString: 1, a: 1 })).toEqual(["the reply: must have property valueOf when property a is present"]);
    expect(hatch.validate({ toString: 1, a: 1, valueOf: 2 })).toEqual([]);
  });
});

describe("a problem's place", () => {
  it("is written as the program writes it: a key of digits as a key, a list's index as an index", async () => {
    const t = await typed({ "0": "string", l: ["number"] });
    expect(t.validate({ "0": 1, l: [1, "a"] })).toEqual(['["0"]: must be a string', "l[1]: must be a number"]);
  });

  it("is in the program's value, not in the envelope it travels in", async () => {
    const t = await typed(["number"]);
    expect(t.envelope).toBe(true);
    expect(t.validate({ value: [1, "a"] })).toEqual(["[1]: must be a number"]);
    expect(t.validate({ value: "a" })).toEqual(["the value: must be a list"]);
    expect(t.validate({})).toEqual(["value: missing (a required field)"]);
  });
});

describe("a JSON Schema the validator refuses", () => {
  it("is named at its place in the program's schema", async () => {
    expect(await refusal({ $schema: "x", minimum: "5" })).toBe("returns=: the JSON Schema cannot be used: minimum: must be a number");
    expect(await refusal({ a: { $schema: "x", type: "string", maxLength: -1 } })).toBe("returns=: the JSON Schema cannot be used: properties.a.maxLength: must be >= 0");
  });

  it("says an unknown format refuses the schema", async () => {
    expect(await refusal({ $schema: "x", type: "string", format: "nope" })).toMatch(/^returns=: the JSON Schema cannot be used: unknown format "nope", so the schema is refused \(the formats known are date, time, .*\)$/);
  });
});

describe("a field named __proto__", () => {
  const problems = (v: unknown) => {
    const r = parseShape(fromJSON(v));
    return r.ok ? [] : r.problems.map((p) => [p.code, pathText(p.path), p.message]);
  };
  const why = expect.stringMatching(/^"__proto__" cannot be a field's name: the JSON Schema validator loses a field of that name/);

  // (a computed key: a literal `__proto__:` would set the prototype)
  it("is refused in a shape (W070) and in an escape hatch (W071), as vvm check and the run read them", async () => {
    expect(problems({ ["__proto__"]: "string", a: "number" })).toEqual([["W070", "__proto__", why]]);
    expect(problems({ $schema: "x", type: "object", properties: { ["__proto__"]: { type: "string" } }, required: ["__proto__"] })).toEqual([["W071", "properties.__proto__", why]]);
    expect(problems({ $schema: "x", type: "object", required: ["__proto__"] })).toEqual([["W071", "required", why]]);
    expect(await refusal({ ["__proto__"]: "string" })).toMatch(/^returns=: __proto__: "__proto__" cannot be a field's name/);
  });
});

describe("a $ref that loops without reading into the value", () => {
  it("is refused when the shape is read (W071), not left to overflow the stack", async () => {
    const direct = { $schema: "x", $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" };
    const through = { $schema: "x", $defs: { a: { anyOf: [{ $ref: "#/$defs/a" }, { type: "string" }] } }, $ref: "#/$defs/a" };
    expect(await refusal(direct)).toBe('returns=: ["$defs"].a["$ref"]: a "$ref" leads back to where it stands without reading into the value (#/$defs/a → #/$defs/a), so checking a reply would never end');
    expect(await refusal(through)).toMatch(/^returns=: \["\$defs"\]\.a\.anyOf\[0\]\["\$ref"\]: a "\$ref" leads back .* \(#\/\$defs\/a → #\/\$defs\/a\/anyOf\/0 → #\/\$defs\/a\)/);
    expect(await refusal({ a: { $schema: "x", allOf: [{ $ref: "#" }] } })).toMatch(/^returns=: a\.allOf\[0\]\["\$ref"\]: a "\$ref" leads back/);
    expect(await refusal({ $schema: "x", $defs: { n: { $anchor: "n", not: { $ref: "#n" } } }, $ref: "#n" })).toMatch(/leads back .*#\/\$defs\/n → #\/\$defs\/n\/not → #\/\$defs\/n\)/);
  });

  it("is refused when the call runs where it passes through a subschema's own $id (the validator's stack overflows)", async () => {
    const loop = 'a "$ref" leads back to where it stands without reading into the value, so checking a reply would never end';
    expect(await refusal({ $schema: "x", $defs: { a: { $id: "http://x/a.json", $ref: "http://x/a.json" } }, $ref: "http://x/a.json" })).toBe(`returns=: the JSON Schema cannot be used: ${loop}`);
    const t = await typed({ $schema: "x", $defs: { b: { $id: "http://x/b.json", anyOf: [{ $ref: "http://x/b.json" }, { type: "string" }] } }, $ref: "http://x/b.json" });
    expect(() => decodeReply(t, '{"value": "ok"}')).toThrow(`thrown: returns=: the JSON Schema cannot be used: ${loop}`);
  });

  it("is not a reference that reads into the value first (a list of itself, a tree)", async () => {
    const t = await typed({ $schema: "x", anyOf: [{ type: "string" }, { type: "array", items: { $ref: "#" } }] });
    expect(t.validate({ value: ["a", ["b", []]] })).toEqual([]);
    expect(await refusal({ $schema: "x", type: "object", properties: { kids: { type: "array", items: { $ref: "#" } } }, required: ["kids"], additionalProperties: false })).toBe("accepted");
  });
});

describe("a computed shape too large to be a schema", () => {
  it("is refused when it shares its parts (2^40 paths), rather than read along every path for ever", async () => {
    let shape: Value = "string";
    for (let i = 0; i < 40; i++) shape = new Map([["a", shape], ["b", shape]]);
    let list: Value = [1];
    for (let i = 0; i < 40; i++) list = [list, list];
    const parts = "returns=: a shape has at most 100,000 parts (a part used in several places counts each time)";
    expect(await refusalOf(shape)).toBe(parts);
    expect(await refusalOf(new Map<string, Value>([["$schema", "x"], ["const", list]]))).toBe(parts);
  });

  it("is refused when it nests deeper than 100 levels, where the validator's stack would overflow (it said: a $ref loop)", async () => {
    const deep = (n: number, leaf: Value, wrap: (x: Value) => Value) => {
      let x = leaf;
      for (let i = 0; i < n; i++) x = wrap(x);
      return x;
    };
    const nests = "returns=: a shape nests at most 100 levels of lists and objects";
    expect(await refusalOf(deep(100_000, "string", (x) => [x]))).toBe(nests);
    const items = (x: Value): Value => new Map<string, Value>([["type", "array"], ["items", x]]);
    expect(await refusalOf(new Map<string, Value>([["$schema", "x"], ["type", "array"], ["items", deep(400, new Map([["type", "string"]]), items)]]))).toBe(nests);
    expect(await refusalOf(deep(99, "string", (x) => [x]))).toBe("accepted");
  });
});

describe("an escape hatch inside a shape", () => {
  const node = { $schema: "x", type: "object", properties: { kids: { type: "array", items: { $ref: "#" } } }, required: ["kids"], additionalProperties: false };

  it("keeps its own references pointing into it, in a field or a list item", async () => {
    const field = await typed({ root: node });
    expect(fits(field, '{"root": {"kids": [{"kids": []}]}}')).toBe(true);
    expect(fits(field, '{"root": {"kids": [{"root": {"kids": []}}]}}')).toBe(false);
    const list = await typed([node]);
    expect(fits(list, '{"value": [{"kids": [{"kids": []}]}]}')).toBe(true);
    expect(fits(list, '{"value": [{"kids": [[]]}]}')).toBe(false);
    const defs = await typed({ "my item": { $schema: "x", $defs: { name: { type: "string" } }, $ref: "#/$defs/name" } });
    expect(fits(defs, '{"my item": "a"}')).toBe(true);
    expect(fits(defs, '{"my item": 1}')).toBe(false);
    // under the older `dependencies` keyword too, wrapped in the envelope (a memory call)
    const deps = await typed({ $schema: "x", type: "object", dependencies: { a: { $ref: "#/$defs/s" }, b: ["c"] }, $defs: { s: { required: ["b"] } } }, true);
    expect(fits(deps, '{"value": {}}')).toBe(true);
    expect(fits(deps, '{"value": {"a": 1}}')).toBe(false);
  });

  it("leaves data alone: a constant that looks like a reference is the constant", async () => {
    const t = await typed({ $schema: "x", const: { $ref: "#/a" } });
    expect(fits(t, '{"value": {"$ref": "#/a"}}')).toBe(true);
    expect(fits(t, '{"value": {"$ref": "#/properties/value/a"}}')).toBe(false);
  });
});

describe("an anchor in an escape hatch", () => {
  const tree = { $schema: "x", $anchor: "node", type: "object", properties: { kids: { type: "array", items: { $ref: "#node" } } }, required: ["kids"], additionalProperties: false };
  const day = { $schema: "x", $defs: { d: { $anchor: "day", type: "string", format: "date" } }, $ref: "#day" };

  it("is a name a reference can use (the validator's strict mode refused the keyword itself)", async () => {
    const t = await typed(day);
    expect(fits(t, '{"value": "2026-11-26"}')).toBe(true);
    expect(fits(t, '{"value": "Thursday"}')).toBe(false);
  });

  it("stays one name per place when one escape hatch stands twice in a shape, each copy referring to its own", async () => {
    const t = await typed({ start: day, end: day, left: tree, right: tree, more: [tree] });
    const props = (t.wire as { properties: Record<string, { $defs?: { d: { $anchor: string } }; $anchor?: string; $ref?: string }> }).properties;
    expect(new Set([props.start!.$defs!.d.$anchor, props.end!.$defs!.d.$anchor, props.left!.$anchor, props.right!.$anchor]).size).toBe(4);
    expect(props.start!.$ref).toBe(`#${props.start!.$defs!.d.$anchor}`);
    const ok = { start: "2026-01-01", end: "2026-01-02", left: { kids: [{ kids: [] }] }, right: { kids: [] }, more: [{ kids: [{ kids: [] }] }] };
    expect(fits(t, JSON.stringify(ok))).toBe(true);
    expect(fits(t, JSON.stringify({ ...ok, end: "soon" }))).toBe(false);
    expect(fits(t, JSON.stringify({ ...ok, right: { kids: [{ kids: [1] }] } }))).toBe(false);
    expect(fits(t, JSON.stringify({ ...ok, more: [{ kids: [{}] }] }))).toBe(false);
  });
});

describe("two escape hatches with one $id", () => {
  it("are each their own schema: the second is neither refused as known nor checked as the first", async () => {
    const names = await typed({ $schema: "x", $id: "https://example.com/s", type: "array", items: { type: "string" } });
    const counts = await typed({ $schema: "x", $id: "https://example.com/s", type: "object", properties: { n: { type: "integer" } }, required: ["n"] });
    expect(decodeReply(names, '{"value": ["a"]}').ok).toBe(true);
    expect(decodeReply(counts, '{"n": 1}').ok).toBe(true);
    expect(decodeReply(counts, '{"n": "a"}').ok).toBe(false);
    expect(decodeReply(names, '{"value": [1]}').ok).toBe(false);
  });
});

describe("a constant object in an escape hatch", () => {
  it("is compared with the reply (a VVM value has no prototype; the validator's equality needs one)", async () => {
    const t = await typed({ $schema: "x", type: "object", properties: { a: { const: { b: 1 } }, e: { enum: [{ c: [2] }] } }, required: ["a", "e"], additionalProperties: false });
    expect(decodeReply(t, '{"a": {"b": 1}, "e": {"c": [2]}}').ok).toBe(true);
    expect(decodeReply(t, '{"a": {"b": 2}, "e": {"c": [2]}}')).toEqual({ ok: false, errors: ["a: must be equal to constant"] });
  });
});
