// json(text): JSON text into a VVM value, or an error value saying what is wrong and where (spec/dialect.md).
import { isErrorValue, makeError, obj, thrown, typeName, type Site, type Value } from "../runtime/values.ts";
import { parseJson } from "../runtime/json.ts";
import { bindArgs } from "./args.ts";
import { SIGNATURES } from "./signatures.ts";

export function json(args: Value[], kwargs: Map<string, Value> | null, _it: Value, site: Site): Value {
  const [text] = bindArgs("json", SIGNATURES.json.params, 1, args, kwargs, site);
  // A failed call's error value passes through, so `json(@a `…`())` needs no check before it.
  if (text !== undefined && isErrorValue(text)) return text;
  if (typeof text !== "string") throw thrown(`json() needs a string, got ${typeName(text ?? null)}`, site);
  const r = parseJson(text, { fenced: true });
  if (r.ok) return r.value;
  return makeError("rejected", `json(): ${r.problem} (line ${r.line}, column ${r.column})`, obj({ line: r.line, column: r.column }));
}
