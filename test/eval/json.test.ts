// runtime/json.ts (shared by json() and vvm run's inputs): agreement with JSON.parse on good text, and the
// problem and position it reports on bad text.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JSON_MAX_DEPTH, parseJson } from "../../runtime/json.ts";
import { toJSON } from "../../runtime/values.ts";
import { json } from "../../stdlib/json.ts";
import { VvmRaise, type Value } from "../../runtime/values.ts";

const site = { path: "json.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 2 } };

function ok(text: string, fenced = false): unknown {
  const r = parseJson(text, { fenced });
  if (!r.ok) throw new Error(`expected ${JSON.stringify(text)} to parse: ${r.problem}`);
  return toJSON(r.value);
}

function bad(text: string, fenced = false): string {
  const r = parseJson(text, { fenced });
  if (r.ok) throw new Error(`expected ${JSON.stringify(text)} to be refused`);
  return `${r.line}:${r.column} ${r.problem}`;
}

describe("parseJson", () => {
  it("agrees with JSON.parse on any JSON text, compact or indented", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.boolean(), (x, indent) => {
        const text = JSON.stringify(x, null, indent ? 2 : undefined);
        // -0 prints as 0; both parsers read it back the same way
        expect(ok(text)).toEqual(JSON.parse(text));
      }),
    );
  });

  it("decodes any string's escapes as JSON.parse does, lone surrogates and \\u forms included", () => {
    // any text as JSON writes it, or an escape as a person may write it
    const piece = fc.oneof(fc.string({ unit: "binary" }).map((x) => JSON.stringify(x).slice(1, -1)), fc.constantFrom("\\u00e9", "\\ud800", "\\uDC00x", "\\n\\t", '\\"', "\\\\", "\\/"));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (pieces) => {
        const text = `"${pieces.join("")}"`;
        expect(ok(text)).toBe(JSON.parse(text));
      }),
    );
  });

  it("reads an integer past 2^53 that a number holds exactly, as JSON.stringify writes one", () => {
    expect(ok("[9007199254740992, 100000000000000000000, -1152921504606846976, 36031261649790970]")).toEqual([2 ** 53, 1e20, -(2 ** 60), 36031261649790970]);
  });

  it("reads strings with every escape, null as unit, objects in key order", () => {
    const r = parseJson('{"b": "\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00", "a": null, "b2": [] }');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const m = r.value as Map<string, Value>;
    expect([...m.keys()]).toEqual(["b", "a", "b2"]);
    expect(m.get("b")).toBe('"\\/\b\f\n\r\té😀');
    expect(m.get("a")).toBeNull();
  });

  it("a repeated key keeps its first place and its last value, as JSON.parse does", () => {
    expect(ok('{"a": 1, "b": 2, "a": 3}')).toEqual({ a: 3, b: 2 });
    expect(Object.keys(ok('{"a": 1, "b": 2, "a": 3}') as object)).toEqual(["a", "b"]);
  });

  it("keeps __proto__ as an ordinary key", () => {
    const r = parseJson('{"__proto__": {"x": 1}}');
    expect(r.ok && r.value instanceof Map && r.value.has("__proto__")).toBe(true);
  });

  it.each([
    ["", "1:1 the text is empty: expected a JSON value"],
    ["  \n ", "2:2 the text is empty: expected a JSON value"],
    ['{"a": 1,}', "1:9 expected a field name after ',', found '}' (JSON allows no trailing comma)"],
    ["[1, 2,]", "1:7 expected a JSON value after ',', found ']' (JSON allows no trailing comma)"],
    ["[1, 2", "1:6 expected ',' or ']' after a list item, found the end of the text ('[' at line 1, column 1 is never closed)"],
    ['{\n  "a": {"b": 1}', "2:16 expected ',' or '}' after the field \"a\", found the end of the text ('{' at line 1, column 1 is never closed)"],
    ['{"a" 1}', "1:6 expected ':' after the field name \"a\", found '1'"],
    ["{'a': 1}", "1:2 expected a field name in double quotes, found a single quote (JSON strings use double quotes)"],
    ["{a: 1}", "1:2 expected a field name in double quotes, found 'a'"],
    ['{"a": True}', "1:7 expected a JSON value, found 'True' (JSON writes true)"],
    ["None", "1:1 expected a JSON value, found 'None' (JSON writes null)"],
    ["nul", "1:1 expected a JSON value, found 'nul'"],
    ["truest", "1:1 expected a JSON value, found 'truest'"],
    ["01", "1:1 a number cannot start with 0 followed by more digits"],
    ["1.", "1:3 expected a digit after '.', found the end of the text"],
    ["1e", "1:3 expected the exponent's digits, found the end of the text"],
    // a second fraction or exponent is text after a whole number, not a number missing its digits
    ["1.5.3", "1:4 unexpected '.' after the JSON value (the text must hold one value)"],
    ["[1e4E00]", "1:5 expected ',' or ']' after a list item, found 'E00'"],
    ["1e5.0", "1:4 unexpected '.' after the JSON value (the text must hold one value)"],
    ["1.5e", "1:5 expected the exponent's digits, found the end of the text"],
    ["-x", "1:2 expected a number after '-', found 'x'"],
    [".5", "1:1 expected a JSON value, found '.'"],
    ["1e400", "1:1 the number 1e400 is too large"],
    ["[9007199254740993]", "1:2 the integer 9007199254740993 cannot be held exactly (a number holds every integer up to 9007199254740991, and only some beyond); write it as a string"],
    ['{"id": -12345678901234567890}', "1:8 the integer -12345678901234567890 cannot be held exactly (a number holds every integer up to 9007199254740991, and only some beyond); write it as a string"],
    ['"abc', "1:1 the string that starts at line 1, column 1 is never closed"],
    ['["a\nb"]', "1:4 a string cannot hold the control character U+000A: write it as \\n"],
    ['"\\q"', "1:2 unknown escape '\\q' in a string (JSON knows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"],
    ['"\\u12G4"', "1:2 expected four hex digits after \\u"],
    ["[1] [2]", "1:5 unexpected '[' after the JSON value (the text must hold one value)"],
    ["Here is the JSON: {}", "1:1 expected a JSON value, found 'Here'"],
  ])("refuses %j: %s", (text, expected) => {
    expect(bad(text)).toBe(expected);
  });

  it("refuses nesting deeper than the limit, at the bracket that goes too deep", () => {
    expect(ok("[".repeat(JSON_MAX_DEPTH) + "]".repeat(JSON_MAX_DEPTH))).toBeInstanceOf(Array);
    expect(bad("[".repeat(JSON_MAX_DEPTH + 1))).toBe(`1:${JSON_MAX_DEPTH + 1} objects and lists nested deeper than ${JSON_MAX_DEPTH} levels are not supported`);
  });

  it("skips a byte-order mark", () => {
    expect(ok('\ufeff{"a": 1}')).toEqual({ a: 1 });
  });

  it("with fenced, reads one code fence around the whole text and counts positions from the start", () => {
    expect(ok('```json\n{"a": [1, 2]}\n```', true)).toEqual({ a: [1, 2] });
    expect(ok('\n  ```\n[true]\n```  \n', true)).toEqual([true]);
    expect(bad("```json\n[1,\n 2,]\n```", true)).toBe("3:4 expected a JSON value after ',', found ']' (JSON allows no trailing comma)");
    // anything around the fence, or a fence without fenced, is not JSON
    expect(bad('Sure:\n```json\n{}\n```', true)).toBe("1:1 expected a JSON value, found 'Sure'");
    expect(bad('```json\n{}\n```')).toBe("1:1 expected a JSON value, found '`'");
  });
});

describe("json()", () => {
  const call = (...args: Value[]) => json(args, null, null, site);

  it("returns the parsed value", () => {
    expect(toJSON(call('{"amount": 12.5, "tags": ["a"]}'))).toEqual({ amount: 12.5, tags: ["a"] });
    expect(call("null")).toBeNull();
  });

  it("returns error(kind=\"rejected\") with the problem, line and column", () => {
    expect(toJSON(call('{\n  "a": 1,\n}'))).toEqual({
      error: {
        kind: "rejected",
        message: "json(): expected a field name after ',', found '}' (JSON allows no trailing comma) (line 3, column 1)",
        data: { line: 3, column: 1 },
      },
    });
  });

  it("passes an error value through unchanged (a failed call)", () => {
    const failed: Value = new Map([["error", new Map<string, Value>([["kind", "timeout"], ["message", "late"]])]]);
    expect(call(failed)).toBe(failed);
  });

  it("raises thrown for anything but a string, and for a wrong argument list", () => {
    const message = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        if (err instanceof VvmRaise) return toJSON(err.value);
        throw err;
      }
      throw new Error("did not raise");
    };
    expect(message(() => call(5))).toMatchObject({ error: { kind: "thrown", message: "json() needs a string, got number" } });
    expect(message(() => call(new Map([["error", "text"]])))).toMatchObject({ error: { message: "json() needs a string, got object" } });
    expect(message(() => json([], null, null, site))).toMatchObject({ error: { message: "json() is missing the argument 'text'" } });
  });
});
