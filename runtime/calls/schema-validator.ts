// JSON Schema validation of typed replies (ajv, draft 2020-12, with the string formats the Messages API knows).
// Loaded on the first typed call, so runs without `returns=` never pay for the library.
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { pointerKeys, RefLoopFound, refLoopMessage } from "../json-schema.ts";
import { pathText } from "../shapes.ts";
import { linearRegExp } from "./re2-pattern.ts";

/** Validation problems are listed up to this many; the first ones are what a re-ask needs. */
const MAX_ERRORS = 20;

// A schema's patterns run on RE2, in time linear in the reply (re2-pattern.ts). allowMatchingProperties: strict
// mode would otherwise test each `properties` name against each `patternProperties` pattern with a JavaScript
// RegExp, which backtracks as the reply's would have.
function newAjv(): Ajv2020 {
  const a = new Ajv2020({
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowMatchingProperties: true,
    // the reply is checked as plain objects (const/enum equality needs their prototype): only their own
    // fields count, never an inherited `constructor` or `toString`
    ownProperties: true,
    logger: false,
    code: { regExp: linearRegExp },
  });
  // ajv resolves `#name` references to `$anchor`s but leaves the keyword out of its 2020-12 vocabulary, so strict
  // mode refused every schema with one (ajv-validator/ajv#1854): declared here as the annotation it is
  a.addKeyword("$anchor");
  // (ajv-formats is CommonJS: its plugin is also its own `default`, which is what the types describe)
  formats.default(a);
  // ajv-formats' `url` expression takes time quadratic in a run of `:` (a 200,000-character reply: 21 s): it is
  // tried only on a string of at most MAX_URL characters, and a longer one is not a url
  a.addFormat("url", (s: string) => s.length <= MAX_URL && url.test(s));
  return a;
}
const MAX_URL = 8192;
const url = fullFormats.url as RegExp;
const ajv = newAjv();

/** Compiled validators by schema text: a program's few schemas are compiled once per run. */
const compiled = new Map<string, ValidateFunction>();

export type Validator = (value: unknown) => string[];

/**
 * A validator for `schema`, or the reason the schema itself cannot be used (an unknown keyword, a bad $ref).
 * `enveloped`: the program's value is the reply's `value` (typed.ts), so paths start there, as the program sees them.
 */
export function validatorFor(schema: Record<string, unknown>, enveloped = false): Validator | { problem: string } {
  const key = JSON.stringify(schema);
  let fn = compiled.get(key);
  if (fn === undefined) {
    if (!ajv.validateSchema(schema)) {
      const errors = ajv.errors ?? [];
      const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
      return { problem: describe(errors[0]!, schema, enveloped ? ["properties", "value"] : [], "the schema") + more };
    }
    try {
      // from its text: a VVM value's objects have no prototype, and ajv's equality (const, enum) needs one
      fn = compileAlone(JSON.parse(key) as Record<string, unknown>);
    } catch (err) {
      // a loop refLoop cannot see (through a subschema's own $id) overflows the stack
      return { problem: err instanceof RangeError ? refLoopMessage(null) : compileProblem((err as Error).message) };
    }
    compiled.set(key, fn);
  }
  const validate = fn;
  const under = enveloped ? ["value"] : [];
  return (value) => {
    const data: unknown = JSON.parse(JSON.stringify(value)); // (with prototypes, as for the schema)
    let ok: boolean;
    try {
      ok = validate(data) as boolean;
    } catch (err) {
      // as when compiling: the stack ran out in a loop refLoop could not see
      throw err instanceof RangeError ? new RefLoopFound() : err;
    }
    return ok ? [] : (validate.errors ?? []).slice(0, MAX_ERRORS).map((e) => describe(e, data, under, "the reply"));
  };
}

/**
 * ajv keeps every schema it compiled under its `$id`: a second, different schema with an `$id` the first used
 * (two calls' escape hatches) is compiled by an instance of its own rather than refused as already known.
 */
function compileAlone(schema: Record<string, unknown>): ValidateFunction {
  try {
    return ajv.compile(schema);
  } catch (err) {
    if (!/already exists/.test((err as Error).message)) throw err;
    return newAjv().compile(schema);
  }
}

/** ajv's reason, in the program's words where ajv speaks of itself (a strict-mode "ignored" format is refused). */
function compileProblem(message: string): string {
  const format = /^unknown format "(.*)" ignored in schema/.exec(message);
  if (format === null) return message;
  return `unknown format "${format[1]}", so the schema is refused (the formats known are ${Object.keys(ajv.formats).join(", ")})`;
}

/**
 * `items[0].amount: must be a number`: the path as a program writes it, then what is wrong. `data` is what was
 * validated: a key of digits is a list's index only where the data holds a list. Paths below `under` lose it.
 */
function describe(e: ErrorObject, data: unknown, under: string[], whole: string): string {
  let segments = pointerKeys(e.instancePath);
  if (under.length > 0 && under.every((u, i) => segments[i] === u)) {
    for (const u of under) data = (data as Record<string, unknown>)[u];
    segments = segments.slice(under.length);
    whole = "the value";
  }
  const path: (string | number)[] = [];
  for (const p of segments) {
    path.push(Array.isArray(data) ? Number(p) : p);
    data = typeof data === "object" && data !== null ? (data as Record<string, unknown>)[p] : undefined;
  }
  const at = (extra?: string) => {
    const text = pathText(extra === undefined ? path : [...path, extra]);
    return text === "" ? whole : text;
  };
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required":
      return `${at(String(p.missingProperty))}: missing (a required field)`;
    case "additionalProperties":
      return `${at(String(p.additionalProperty))}: not a field of the schema`;
    case "enum":
      return `${at()}: must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "type":
      return `${at()}: must be ${article(String(p.type))}`;
    default:
      return `${at()}: ${e.message ?? e.keyword}`;
  }
}

function article(type: string): string {
  const names: Record<string, string> = { integer: "a whole number", number: "a number", string: "a string", boolean: "true or false", array: "a list", object: "an object", null: "null" };
  return type.split(",").map((t) => names[t] ?? t).join(" or ");
}
