// The exports as `vvm run` prints them on stdout: one JSON object, keys in export order, and with
// --partial-exports after an uncaught raise, the exports computed before it (spec/semantics.md).
import { jsonObject, toJSON, type Value } from "../../runtime/values.ts";
import type { PartialExports } from "../../runtime/context.ts";
import { printable } from "../printable.ts";

/** The exports as pretty JSON, or null when a value is nested too deeply to print (the program's problem, not a crash). */
export function exportsJson(exports: Map<string, Value>): string | null {
  try {
    const out = jsonObject();
    for (const [name, value] of exports) out[name] = toJSON(value);
    // JSON escapes C0 itself; C1 and bidi controls become \u escapes too (the same JSON value), as stdout is often a terminal
    return printable(JSON.stringify(out, null, 2));
  } catch (err) {
    // A value nested tens of thousands deep overflows the stack while printing.
    if (!(err instanceof RangeError)) throw err;
    return null;
  }
}

/**
 * --partial-exports after an uncaught raise: the JSON for stdout (`{}` when nothing was computed) and one
 * line for stderr saying which exports are in it and which are missing.
 */
export function partialExportsOutput(partial: PartialExports | null): { json: string | null; note: string } {
  const exports = partial?.exports ?? new Map<string, Value>();
  const missing = partial?.missing ?? [];
  const json = exportsJson(exports);
  const total = exports.size + missing.length;
  const names = (keys: string[]) => keys.map((k) => `'${k}'`).join(", ");
  let note: string;
  if (json === null) note = "the exports computed before the error are nested too deeply to print as JSON";
  else if (partial === null) note = "the error came before the program's own statements ran: no export was computed ({} on stdout)";
  else if (missing.length === 0) note = `all ${total} export${total === 1 ? " was" : "s were"} computed before the error (on stdout)`;
  else if (exports.size === 0) note = `no export was computed before the error ({} on stdout); missing: ${names(missing)}`;
  else note = `${exports.size} of ${total} exports were computed before the error (on stdout); missing: ${names(missing)}`;
  return { json, note: `--partial-exports: ${note}` };
}
