// The `returns=` shape language (spec/typed-results.md): a VVM value that says what a typed call answers,
// compiled to JSON Schema. Both `vvm check` (literal shapes, W070/W071) and the call layer read it, so the
// check and the run agree word for word.
import { pointerKey, rebase, refLoop, refLoopMessage } from "./json-schema.ts";
import { jsonObject, toJSON, aTypeName, type Value } from "./values.ts";

export type Shape =
  | { kind: "string" | "number" | "integer" | "boolean" }
  | { kind: "enum"; values: string[] }
  | { kind: "list"; item: Shape }
  | { kind: "object"; fields: ShapeField[] }
  /** the escape hatch: a JSON Schema written out (an object with a "$schema" key), used as written */
  | { kind: "schema"; schema: Record<string, unknown> };

export interface ShapeField {
  name: string;
  shape: Shape;
  /** `"string?"`: the reply may leave the field out; the value then holds unit there */
  optional: boolean;
}

/** Where in the written value a problem is: object keys and list positions from the top. */
export type ShapePath = (string | number)[];

export interface ShapeProblem {
  path: ShapePath;
  /** W070: the shape language; W071: inside a JSON Schema escape hatch */
  code: "W070" | "W071";
  message: string;
}

type ShapeResult = { ok: true; shape: Shape } | { ok: false; problems: ShapeProblem[] };

const SCALARS = ["string", "number", "integer", "boolean"] as const;
const JSON_TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);
/** ajv compiles a schema into JavaScript objects, where this key is the prototype: a field so named is dropped. */
const PROTO = `"__proto__" cannot be a field's name: the JSON Schema validator loses a field of that name, so no reply could be checked`;
/** Names people reach for first, and the shape that means it (a Map: a plain object would find `constructor`). */
const ALIASES: ReadonlyMap<string, string> = new Map([
  ["str", "string"],
  ["text", "string"],
  ["int", "integer"],
  ["float", "number"],
  ["double", "number"],
  ["bool", "boolean"],
  ["list", '["string"] (a list of strings)'],
  ["array", '["string"] (a list of strings)'],
  ["object", "{field: \"string\"}"],
  ["dict", "{field: \"string\"}"],
]);

/** Read a `returns=` value. Every problem is collected, each with the path to the part that causes it. */
export function parseShape(v: Value): ShapeResult {
  const size = tooLarge(v);
  if (size !== null) return { ok: false, problems: [{ path: [], code: "W070", message: size }] };
  const problems: ShapeProblem[] = [];
  const shape = read(v, [], false, problems);
  return problems.length === 0 ? { ok: true, shape: shape.shape } : { ok: false, problems };
}

/** A shape nested deeper than this is refused: the schema of a deeper one overflows the validator's stack. */
const SHAPE_MAX_DEPTH = 100;
/** A shape with more parts than this is refused; a part used in several places counts at each. */
const SHAPE_MAX_PARTS = 100_000;

/**
 * Why a computed `returns=` value cannot be a shape whatever it holds, or null. Its parts are counted along
 * every path, as the schema sent writes them: a value that shares its parts (`s = {a: s, b: s}` forty times)
 * would be a schema of 2^40 parts, which reading, sending or validating would never finish. (A literal shape
 * cannot get this far: the parser refuses brackets nested deeper than 100 levels.)
 */
function tooLarge(v: Value): string | null {
  const stack: [Value, number][] = [[v, 1]];
  let parts = 0;
  while (stack.length > 0) {
    const [x, depth] = stack.pop()!;
    if (++parts > SHAPE_MAX_PARTS) {
      return `a shape has at most ${SHAPE_MAX_PARTS.toLocaleString("en")} parts (a part used in several places counts each time)`;
    }
    if (!Array.isArray(x) && !(x instanceof Map)) continue;
    if (depth > SHAPE_MAX_DEPTH) return `a shape nests at most ${SHAPE_MAX_DEPTH} levels of lists and objects`;
    for (const y of x.values()) stack.push([y, depth + 1]);
  }
  return null;
}

function read(v: Value, path: ShapePath, field: boolean, problems: ShapeProblem[]): { shape: Shape; optional: boolean } {
  const fail = (message: string, code: ShapeProblem["code"] = "W070") => {
    problems.push({ path, code, message });
    return { shape: { kind: "string" } as Shape, optional: false };
  };
  if (typeof v === "string") {
    let text = v;
    let optional = false;
    if (text.endsWith("?")) {
      if (!field) return fail(`'?' marks an optional field of an object; it cannot stand here ("${v}")`);
      optional = true;
      text = text.slice(0, -1);
    }
    if (text.includes("|")) {
      const values = text.split("|").map((s) => s.trim());
      if (values.some((s) => s === "")) return fail(`the choice "${v}" has an empty alternative (write "a|b|c")`);
      const dup = values.find((s, i) => values.indexOf(s) !== i);
      if (dup !== undefined) return fail(`the choice "${v}" names "${dup}" twice`);
      const typeWord = values.find((s) => (SCALARS as readonly string[]).includes(s));
      if (typeWord !== undefined) {
        return fail(`"${v}" is a choice of words, and "${typeWord}" would be the word itself, not its type: a value of one of several types needs a JSON Schema ({"$schema": "…", "anyOf": […]})`);
      }
      return { shape: { kind: "enum", values }, optional };
    }
    if ((SCALARS as readonly string[]).includes(text)) return { shape: { kind: text as (typeof SCALARS)[number] }, optional };
    const alias = ALIASES.get(text.trim().toLowerCase());
    return fail(
      `unknown type "${text}"${alias ? ` (did you mean ${alias.startsWith("[") || alias.startsWith("{") ? alias : `"${alias}"`}?)` : ""}: ` +
        `a shape is "string", "number", "integer", "boolean", "a|b" (one of these words), [shape] (a list), {field: shape} (an object), or a JSON Schema with a "$schema" key`,
    );
  }
  if (Array.isArray(v)) {
    if (v.length !== 1) {
      return fail(
        v.length === 0
          ? `an empty list says nothing about the items: write the shape of every item inside, e.g. ["string"]`
          : `a list shape holds one shape, that of every item (got ${v.length}); for one of several words write "a|b"`,
      );
    }
    return { shape: { kind: "list", item: read(v[0]!, [...path, 0], false, problems).shape }, optional: false };
  }
  if (v instanceof Map) {
    if (v.has("$schema")) return { shape: readSchema(v, path, problems), optional: false };
    if (v.size === 0) return fail("an object shape needs at least one field, e.g. {name: \"string\"}");
    const fields: ShapeField[] = [];
    for (const [name, x] of v) {
      if (name === "__proto__") {
        problems.push({ path: [...path, name], code: "W070", message: PROTO });
        continue;
      }
      const r = read(x, [...path, name], true, problems);
      fields.push({ name, shape: r.shape, optional: r.optional });
    }
    return { shape: { kind: "object", fields }, optional: false };
  }
  return fail(`a shape is a string such as "number", a list or an object, not ${aTypeName(v)}`);
}

/** The escape hatch: checked as JSON and for the keywords whose form is plain to see; the validator judges the rest. */
function readSchema(v: Map<string, Value>, path: ShapePath, problems: ShapeProblem[]): Shape {
  const before = problems.length;
  if (typeof v.get("$schema") !== "string") problems.push({ path: [...path, "$schema"], code: "W071", message: `"$schema" names the JSON Schema dialect and must be a string` });
  checkJson(v, path, problems);
  if (problems.length > before) return { kind: "string" };
  const schema = toJSON(v) as Record<string, unknown>;
  delete schema.$schema; // a marker here; the API and the validator read draft 2020-12 either way
  checkKeywords(schema, path, problems);
  const loop = problems.length > before ? null : refLoop(schema);
  if (loop !== null) {
    problems.push({ path: [...path, ...loop.at], code: "W071", message: refLoopMessage(loop.loop) });
  }
  return { kind: "schema", schema };
}

function checkJson(v: Value, path: ShapePath, problems: ShapeProblem[]): void {
  if (v === null || typeof v === "string" || typeof v === "boolean") return;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) problems.push({ path, code: "W071", message: "a JSON Schema holds only JSON values" });
    return;
  }
  if (Array.isArray(v)) return v.forEach((x, i) => checkJson(x, [...path, i], problems));
  if (v instanceof Map) {
    for (const [k, x] of v) {
      if (k === "__proto__") problems.push({ path: [...path, k], code: "W071", message: PROTO });
      else checkJson(x, [...path, k], problems);
    }
    return;
  }
  problems.push({ path, code: "W071", message: `a JSON Schema holds only JSON values, not ${aTypeName(v)}` });
}

/** The structural keywords of a schema (and of the schemas inside it). */
function checkKeywords(s: unknown, path: ShapePath, problems: ShapeProblem[]): void {
  if (typeof s === "boolean") return;
  const bad = (key: string | number, message: string) => problems.push({ path: [...path, key], code: "W071", message });
  if (typeof s !== "object" || s === null || Array.isArray(s)) {
    problems.push({ path, code: "W071", message: "a JSON Schema here must be an object (or true/false)" });
    return;
  }
  const o = s as Record<string, unknown>;
  if ("type" in o) {
    const types = Array.isArray(o.type) ? o.type : [o.type];
    const wrong = types.find((t) => typeof t !== "string" || !JSON_TYPES.has(t));
    if (types.length === 0 || wrong !== undefined) bad("type", `"type" is one of ${[...JSON_TYPES].map((t) => `"${t}"`).join(", ")} (or a list of them)${wrong !== undefined ? `, not ${JSON.stringify(wrong)}` : ""}`);
  }
  if ("required" in o && !(Array.isArray(o.required) && o.required.every((r) => typeof r === "string"))) bad("required", `"required" is a list of field names`);
  else if (Array.isArray(o.required) && o.required.includes("__proto__")) bad("required", PROTO);
  if ("enum" in o && !(Array.isArray(o.enum) && o.enum.length > 0)) bad("enum", `"enum" is a non-empty list of the allowed values`);
  for (const key of ["properties", "$defs", "definitions"]) {
    if (!(key in o)) continue;
    const m = o[key];
    if (typeof m !== "object" || m === null || Array.isArray(m)) bad(key, `"${key}" maps names to schemas`);
    else for (const [k, x] of Object.entries(m)) checkKeywords(x, [...path, key, k], problems);
  }
  for (const key of ["items", "additionalProperties", "not"]) if (key in o) checkKeywords(o[key], [...path, key], problems);
  for (const key of ["anyOf", "allOf", "oneOf"]) {
    if (!(key in o)) continue;
    const l = o[key];
    if (!Array.isArray(l) || l.length === 0) bad(key, `"${key}" is a non-empty list of schemas`);
    else l.forEach((x, i) => checkKeywords(x, [...path, key, i], problems));
  }
}

/**
 * The JSON Schema of a shape, placed at `at` (a JSON pointer) of the schema sent: an escape hatch's references
 * are moved there. Objects allow no other fields (the API's structured output requires it).
 */
export function shapeSchema(s: Shape, at = "", hatches = { placed: 0 }): Record<string, unknown> {
  switch (s.kind) {
    case "string":
    case "number":
    case "integer":
    case "boolean":
      return { type: s.kind };
    case "enum":
      return { type: "string", enum: s.values };
    case "list":
      return { type: "array", items: shapeSchema(s.item, `${at}/items`, hatches) };
    case "object": {
      const properties = jsonObject();
      for (const f of s.fields) properties[f.name] = shapeSchema(f.shape, `${at}/properties/${pointerKey(f.name)}`, hatches);
      return { type: "object", properties, required: s.fields.filter((f) => !f.optional).map((f) => f.name), additionalProperties: false };
    }
    case "schema":
      // inside a shape, each escape hatch's anchors get a suffix of their own (one hatch may stand twice)
      return rebase(s.schema, at, at === "" ? "" : `-${++hatches.placed}`) as Record<string, unknown>;
    default: {
      const never: never = s;
      return never;
    }
  }
}

/** A shape whose JSON Schema is an object (the reply can be the value itself, without an envelope). */
export function isObjectShape(s: Shape): boolean {
  return s.kind === "object" || (s.kind === "schema" && s.schema.type === "object");
}

/** The written path, for messages: `items[0].amount`. */
export function pathText(path: ShapePath): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `${out === "" ? "" : "."}${p}` : `[${JSON.stringify(p)}]`;
  return out;
}

/**
 * Unit for every optional field the reply left out, so `r.note` reads `()` instead of raising (values from the
 * validator only: `v` already fits `s`). Escape-hatch parts are left as the model wrote them.
 */
export function fillOptional(s: Shape, v: Value): Value {
  switch (s.kind) {
    case "list":
      return Array.isArray(v) ? v.map((x) => fillOptional(s.item, x)) : v;
    case "object": {
      if (!(v instanceof Map)) return v;
      const out = new Map<string, Value>();
      for (const f of s.fields) {
        const x = v.get(f.name);
        out.set(f.name, x === undefined ? null : fillOptional(f.shape, x));
      }
      return out;
    }
    case "string":
    case "number":
    case "integer":
    case "boolean":
    case "enum":
    case "schema":
      return v;
    default: {
      const never: never = s;
      return never;
    }
  }
}
