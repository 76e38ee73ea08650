// runtime/json-text.ts: VVM values as JSON text. The same text JSON.stringify gives for the plain form where
// that form keeps the order; integer-like keys in place; a limit instead of a crash.
import { describe, expect, it } from "vitest";
import { jsonText, serializeInput, ValueTooLarge } from "../../runtime/json-text.ts";
import { obj, toJSON, VAgent, type Value } from "../../runtime/values.ts";

/** A random value with string keys that are not integer-like (for those JSON.stringify keeps the order). */
function randomValue(seed: { n: number }, depth: number): Value {
  const r = () => (seed.n = (seed.n * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = r();
  if (depth > 3 || pick < 0.4) {
    const scalars: Value[] = [null, true, false, 0, -0, 1.5, -7, 1e21, 2 ** 53, "", "a\"b\\c\n", "\u2028é😀", "\ud800 lone"];
    return scalars[Math.floor(r() * scalars.length)]!;
  }
  const n = Math.floor(r() * 4);
  if (pick < 0.7) return Array.from({ length: n }, () => randomValue(seed, depth + 1));
  return new Map(Array.from({ length: n }, (_, i) => [`k${Math.floor(r() * 100)}_${i}`, randomValue(seed, depth + 1)]));
}

describe("jsonText", () => {
  it("writes what JSON.stringify writes for the plain form, compact and indented", () => {
    const seed = { n: 42 };
    for (let i = 0; i < 500; i++) {
      const v = randomValue(seed, 0);
      expect(jsonText(v)).toBe(JSON.stringify(toJSON(v)));
      expect(jsonText(v, { indent: 2 })).toBe(JSON.stringify(toJSON(v), null, 2));
    }
  });

  it("keeps an object's own key order, integer-like keys included; sorted on request", () => {
    const o = new Map<string, Value>([["b", 1], ["10", 2], ["2", 3], ["a", 4], ["__proto__", 5]]);
    expect(jsonText(o)).toBe('{"b":1,"10":2,"2":3,"a":4,"__proto__":5}');
    expect(jsonText(o, { sorted: true })).toBe('{"10":2,"2":3,"__proto__":5,"a":4,"b":1}');
    expect(serializeInput(obj({ z: [1], a: "x" }))).toBe('{\n  "a": "x",\n  "z": [\n    1\n  ]\n}');
    expect(serializeInput("as it is")).toBe("as it is");
  });

  it("describes functions and agents, and writes -0 as 0", () => {
    const agent = new VAgent("w", new Map<string, Value>([["model", "haiku"]]), { path: "m.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } });
    expect(jsonText([agent, -0])).toBe('[{"agent":"w","config":{"model":"haiku"}},0]');
  });

  it("walks values nested far deeper than the stack allows", () => {
    let deep: Value = [];
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const text = jsonText(deep);
    expect(text.length).toBe(400_002);
    expect(text.startsWith("[[[") && text.endsWith("]]]")).toBe(true);
  });

  it("past the limit: ValueTooLarge, or with cut the text's start, without writing the rest", () => {
    let shared: Value = [1];
    for (let i = 0; i < 60; i++) shared = [shared, shared]; // 2^60 paths: only the limit ends the walk
    expect(() => jsonText(shared, { limit: 1000 })).toThrow(ValueTooLarge);
    expect(() => jsonText(shared, { limit: 1000 })).toThrow("its JSON text would be longer than 1,000 characters");
    expect(jsonText(shared, { limit: 10, cut: true })).toBe("[[[[[[[[[[");
    expect(jsonText([1, 2], { limit: 5 })).toBe("[1,2]");
    expect(() => jsonText([1, 2], { limit: 4 })).toThrow(ValueTooLarge);
  });

  it("measures a value that shares its parts once its text is long, rather than writing it up to the limit (a bare template took ~10 s)", () => {
    // 2^45 items; reads of items in the top 35 levels are counted (each such item holds 2^10 or more)
    let reads = 0;
    let shared: Value = [1];
    for (let i = 0; i < 45; i++) {
      shared = [shared, shared];
      if (i < 10) continue;
      shared = new Proxy(shared, {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    }
    expect(() => jsonText(shared)).toThrow(ValueTooLarge);
    expect(reads).toBeLessThan(20_000); // written out to the limit: ~87,000
  });

  it("never builds a string past the limit: one long string many times over, or one whose escaped form is six times as long", () => {
    // (joined whole, 8,192 of these pass V8's longest string, whatever the limit; escaped whole, so does this one)
    const long = "a".repeat(2 ** 18);
    expect(() => jsonText(Array.from({ length: 2 ** 13 }, () => long), { limit: 2 ** 20 })).toThrow(ValueTooLarge);
    const controls = "\u0001".repeat(2 ** 27);
    expect(() => jsonText([controls], { limit: 2 ** 20 })).toThrow(ValueTooLarge);
    expect(jsonText([controls], { limit: 12, cut: true })).toBe('["\\u0001\\u00');
    // escaped a piece at a time, a string reads as JSON.stringify writes it, surrogate pairs and lone halves alike
    const mixed = "a".repeat(65535) + "😀" + "\ud800" + "\n\"".repeat(70000) + "é";
    expect(jsonText(mixed)).toBe(JSON.stringify(mixed));
    expect(jsonText(new Map([[mixed, 1]]))).toBe(JSON.stringify({ [mixed]: 1 }));
  });
});
