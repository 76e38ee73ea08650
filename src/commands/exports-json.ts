// The exports as `vvm run` prints them on stdout: one JSON object, keys in export order, and with
// --partial-exports after an uncaught raise, the exports computed before it (spec/semantics.md).
import { jsonText, ValueTooLarge } from "../../runtime/json-text.ts";
import type { Value } from "../../runtime/values.ts";
import type { PartialExports } from "../../runtime/context.ts";
import { printable } from "../printable.ts";

/**
 * The exports as pretty JSON in export order, or why they cannot be printed: their text would pass the longest
 * string there can be (a huge value, or one that shares its parts many times over: the program's problem, not a crash).
 */
export function exportsJson(exports: Map<string, Value>): { text: string } | { problem: string } {
  try {
    // JSON escapes C0 itself; C1 and bidi controls become \u escapes too (the same JSON value), as stdout is often a terminal
    return { text: printable(jsonText(exports, { indent: 2 })) };
  } catch (err) {
    if (!(err instanceof ValueTooLarge)) throw err;
    return { problem: `the exported values are too large to print as JSON: ${err.message}` };
  }
}

/**
 * --partial-exports after an uncaught raise: the JSON for stdout (`{}` when nothing was computed) and one
 * line for stderr saying which exports are in it and which are missing.
 */
export function partialExportsOutput(partial: PartialExports | null): { json: string | null; note: string } {
  const exports = partial?.exports ?? new Map<string, Value>();
  const missing = partial?.missing ?? [];
  const printed = exportsJson(exports);
  const json = "text" in printed ? printed.text : null;
  const total = exports.size + missing.length;
  const names = (keys: string[]) => keys.map((k) => `'${k}'`).join(", ");
  let note: string;
  if (!("text" in printed)) note = `${printed.problem} (the exports computed before the error)`;
  else if (partial === null) note = "the error came before the program's own statements ran: no export was computed ({} on stdout)";
  else if (missing.length === 0) note = `all ${total} export${total === 1 ? " was" : "s were"} computed before the error (on stdout)`;
  else if (exports.size === 0) note = `no export was computed before the error ({} on stdout); missing: ${names(missing)}`;
  else note = `${exports.size} of ${total} exports were computed before the error (on stdout); missing: ${names(missing)}`;
  return { json, note: `--partial-exports: ${note}` };
}
