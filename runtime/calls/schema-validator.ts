// JSON Schema validation of typed replies (ajv, draft 2020-12, with the string formats the Messages API knows).
// Loaded on the first typed call, so runs without `returns=` never pay for the library.
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import { RE2JS } from "re2js";
import { pathText } from "../shapes.ts";

/** Validation problems are listed up to this many; the first ones are what a re-ask needs. */
const MAX_ERRORS = 20;

/**
 * A schema's `pattern` (and `patternProperties`) is tested against the model's reply, which is untrusted: with
 * JavaScript's backtracking engine, `^(a+)+$` and a reply of forty `a`s and a `!` would stall the run for
 * good (the event loop with it, so not even Ctrl-C gets through). RE2 runs in time linear in the text; it has
 * no lookaround and no backreferences, and a pattern that needs them is refused when the schema is compiled.
 */
function linearRegExp(pattern: string): { test: (s: string) => boolean; toString: () => string } {
  let re: RE2JS;
  try {
    re = RE2JS.compile(withRe2Escapes(pattern));
  } catch (err) {
    throw new Error(`pattern ${JSON.stringify(pattern)} is not one RE2 runs (${(err as Error).message}): patterns run in time linear in the reply, without lookaround or backreferences`, { cause: err });
  }
  // JSON Schema's pattern is a search, not a whole-string match; ajv keeps one engine per toString(), so it names the pattern
  return { test: (s) => re.matcher(s).find(), toString: () => `/${pattern}/` };
}
// ajv's type asks for the code that would build the engine in standalone output, which is never generated here
linearRegExp.code = "linearRegExp";

/** JavaScript's `\uXXXX` and `\u{X…}` escapes as RE2's `\x{…}`; everything else as it is (`\\u` is a backslash and a `u`). */
function withRe2Escapes(pattern: string): string {
  return pattern.replace(/\\(?:u([0-9A-Fa-f]{4})|u\{([0-9A-Fa-f]+)\}|[\s\S])/g, (all, four?: string, braced?: string) => {
    const hex = four ?? braced;
    return hex === undefined ? all : `\\x{${hex}}`;
  });
}

const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false, code: { regExp: linearRegExp } });
// (ajv-formats is CommonJS: its plugin is also its own `default`, which is what the types describe)
formats.default(ajv);

/** Compiled validators by schema text: a program's few schemas are compiled once per run. */
const compiled = new Map<string, ValidateFunction>();

export type Validator = (value: unknown) => string[];

/** A validator for `schema`, or the reason ajv refuses the schema itself (an unknown keyword, a bad $ref). */
export function validatorFor(schema: Record<string, unknown>): Validator | { problem: string } {
  const key = JSON.stringify(schema);
  let fn = compiled.get(key);
  if (fn === undefined) {
    try {
      fn = ajv.compile(schema);
    } catch (err) {
      return { problem: (err as Error).message };
    }
    compiled.set(key, fn);
  }
  const validate = fn;
  return (value) => (validate(value) ? [] : (validate.errors ?? []).slice(0, MAX_ERRORS).map(describe));
}

/** `items[0].amount: must be a number, got a string`: the path as a program writes it, then what is wrong. */
function describe(e: ErrorObject): string {
  const path = e.instancePath
    .split("/")
    .slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  const at = (extra?: string) => {
    const text = pathText((extra === undefined ? path : [...path, extra]).map((p) => (/^\d+$/.test(p) ? Number(p) : p)));
    return text === "" ? "the reply" : text;
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
