// How values appear inside a rendered template (LANGUAGE.md §4): short strings verbatim, everything
// large or structured as a bounded preview that points to the call's input, refs as `[ref: path]`.
import { isFunction, isRef, sortedJSON, VAgent, type Value } from "./values.ts";

/** Strings up to this many characters are interpolated as they are. */
export const SHORT_STRING = 1000;
/** Longest preview of a long string, list or object. */
const PREVIEW_CHARS = 200;

export function interpolate(v: Value): string {
  if (v === null) return "()";
  switch (typeof v) {
    case "boolean":
      return v ? "true" : "false";
    case "number":
      return formatNumber(v);
    case "string":
      if (v.length <= SHORT_STRING) return v;
      return `${clip(v)} [${v.length} characters; the full text is in the input]`;
  }
  if (isRef(v)) {
    const summary = v.get("summary");
    const ref = `[ref: ${String(v.get("ref"))}]`;
    return typeof summary === "string" && summary !== "" ? `${ref} summary: ${clip(summary)}` : ref;
  }
  if (Array.isArray(v)) {
    return `${clip(compact(v))} [list of ${v.length} item${v.length === 1 ? "" : "s"}; the full value is in the input]`;
  }
  if (v instanceof Map) {
    return `${clip(compact(v))} [object with ${v.size} field${v.size === 1 ? "" : "s"}; the full value is in the input]`;
  }
  if (v instanceof VAgent) return `<agent ${v.name}>`;
  if (isFunction(v)) return `<function ${v.name}>`;
  return String(v);
}

/** Numbers print in their shortest form: 3, 2.5, 1e+21. */
function formatNumber(n: number): string {
  return Object.is(n, -0) ? "0" : String(n);
}

function compact(v: Value): string {
  // One line, keys sorted like the input serialization, so the preview matches what the model receives.
  return JSON.stringify(sortedJSON(v)) ?? "null";
}

function clip(s: string): string {
  const oneLine = s.replace(/\s+/g, " ").trim();
  return oneLine.length <= PREVIEW_CHARS ? oneLine : oneLine.slice(0, PREVIEW_CHARS) + "…";
}
