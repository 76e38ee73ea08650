// Properties of the value operators over random data: structural equality, `+`, ordering type rules.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { binaryOp } from "../../runtime/interpreter/ops.ts";
import { fromJSON, toJSON, VvmRaise, type Value } from "../../runtime/values.ts";

const site = { path: "prop.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 2 } };
const json = fc.jsonValue({ maxDepth: 4 }).filter((x) => !Object.is(x, -0));

/** The same data with every object's keys in reverse order. */
function reversedKeys(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(reversedKeys);
  if (x !== null && typeof x === "object") {
    return Object.fromEntries(Object.entries(x as Record<string, unknown>).reverse().map(([k, v]) => [k, reversedKeys(v)]));
  }
  return x;
}

describe("value operators", () => {
  it("== is structural and ignores object key order; != is its negation", () => {
    fc.assert(
      fc.property(json, (x) => {
        const a = fromJSON(x);
        const b = fromJSON(reversedKeys(x));
        expect(binaryOp("==", a, b, site)).toBe(true);
        expect(binaryOp("!=", a, b, site)).toBe(false);
      }),
    );
  });

  it("== agrees with deep equality of the JSON data", () => {
    fc.assert(
      fc.property(json, json, (x, y) => {
        const expected = JSON.stringify(sortKeys(x)) === JSON.stringify(sortKeys(y));
        expect(binaryOp("==", fromJSON(x), fromJSON(y), site)).toBe(expected);
      }),
    );
  });

  it("+ concatenates lists and strings, adds numbers, and raises thrown for anything else", () => {
    fc.assert(
      fc.property(json, json, (x, y) => {
        const a = fromJSON(x);
        const b = fromJSON(y);
        let r: Value | VvmRaise;
        try {
          r = binaryOp("+", a, b, site);
        } catch (e) {
          r = e as VvmRaise;
        }
        if (Array.isArray(x) && Array.isArray(y)) expect(toJSON(r as Value)).toEqual([...x, ...y].map((v) => toJSON(fromJSON(v))));
        else if (typeof x === "string" && typeof y === "string") expect(r).toBe(x + y);
        else if (typeof x === "number" && typeof y === "number" && Number.isFinite(x + y)) expect(r).toBe(x + y);
        else {
          expect(r).toBeInstanceOf(VvmRaise);
          expect(toJSON((r as VvmRaise).value)).toMatchObject({ error: { kind: "thrown" } });
        }
      }),
    );
  });

  it("== on values that share their parts (xs = [xs, xs], 60 times) reads each pair of parts a few times, not each of 2^60 paths", () => {
    // every read of an item is counted; past the budget the comparison would not end in a lifetime
    let reads = 0;
    const counted = (items: Value[]): Value[] =>
      new Proxy(items, {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key) && ++reads > 100_000) throw new Error("walked the paths, not the parts");
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    const shared = (leaf: Value): Value => {
      let xs: Value = [leaf];
      for (let i = 0; i < 60; i++) xs = counted([xs, xs]);
      return xs;
    };
    expect(binaryOp("==", shared(1), shared(1), site)).toBe(true);
    expect(binaryOp("!=", shared(1), shared(2), site)).toBe(true);
    const same = shared(1);
    expect(binaryOp("==", same, same, site)).toBe(true);
    expect(reads).toBeLessThan(1000);
  });

  it("a list or object holding a function raises when compared with itself, as a copy of it does", () => {
    const f = { type: "function", name: "f", params: [], isAsync: false } as unknown as Value;
    for (const v of [[1, [f]], new Map<string, Value>([["f", f]])] as Value[]) {
      expect(() => binaryOp("==", v, v, site)).toThrow(VvmRaise);
      expect(() => binaryOp("!=", v, v, site)).toThrow(VvmRaise);
    }
  });

  it("ordering accepts numbers only", () => {
    fc.assert(
      fc.property(json, json, fc.constantFrom("<", "<=", ">", ">=") as fc.Arbitrary<"<" | "<=" | ">" | ">=">, (x, y, op) => {
        if (typeof x === "number" && typeof y === "number") {
          expect(typeof binaryOp(op, x, y, site)).toBe("boolean");
        } else {
          expect(() => binaryOp(op, fromJSON(x), fromJSON(y), site)).toThrow(VvmRaise);
        }
      }),
    );
  });
});

function sortKeys(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(sortKeys);
  if (x !== null && typeof x === "object") {
    return Object.fromEntries(Object.keys(x as object).sort().map((k) => [k, sortKeys((x as Record<string, unknown>)[k])]));
  }
  return x;
}
