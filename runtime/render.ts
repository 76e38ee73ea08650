// How values appear inside a rendered template (spec/language.md §4.2). In a call's or a judge's template,
// short strings and scalars go in verbatim and anything large or structured becomes a bounded preview
// whose note says whether the input carries it whole. A bare template (a string the program builds,
// sent nowhere by itself) renders every value whole.
import { jsonText } from "./json-text.ts";
import { isFunction, isRef, someValue, VAgent, type Value } from "./values.ts";

/** Strings up to this many characters are interpolated as they are. */
export const SHORT_STRING = 1000;
/** Longest preview of a long string, list or object. */
const PREVIEW_CHARS = 200;

/** A value in an agent call's or a judge's template, whose input is `input`. */
export function interpolate(v: Value, input: Value): string {
  if (typeof v === "string") {
    if (v.length <= SHORT_STRING) return v;
    return `${clip(v)} [${v.length} characters; ${whereWhole(v, input, "text")}]`;
  }
  if (Array.isArray(v)) {
    return `${clip(compact(v, PREVIEW_CHARS * 8))} [list of ${count(v.length, "item")}; ${whereWhole(v, input, "value")}]`;
  }
  if (v instanceof Map) {
    const fields = v.size;
    // (a ref value is shown by its path: scalar below)
    if (!isRef(v)) return `${clip(compact(v, PREVIEW_CHARS * 8))} [object with ${count(fields, "field")}; ${whereWhole(v, input, "value")}]`;
  }
  return scalar(v);
}

/**
 * A value in a bare template: strings as they are, lists and objects as compact JSON, whole (ValueTooLarge past
 * JSON_TEXT_LIMIT). With `cut`, a preview for a person (narration): the JSON's first `cut` characters, keys in
 * the value's own order, so what it starts with shows first (an error's `kind` before its `data`).
 */
export function renderWhole(v: Value, cut?: number): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v) || (v instanceof Map && !isRef(v))) return cut === undefined ? compact(v) : jsonText(v, { limit: cut, cut: true });
  return scalar(v);
}

function scalar(v: Value): string {
  if (v === null) return "()";
  if (typeof v === "boolean") return v ? "true" : "false";
  // numbers in their shortest form: 3, 2.5, 1e+21
  if (typeof v === "number") return Object.is(v, -0) ? "0" : String(v);
  if (isRef(v)) {
    const summary = v.get("summary");
    // (one line, cut like the summary: an object the program built, or parsed from a reply, can hold any text there)
    const ref = `[ref: ${clip(String(v.get("ref")))}]`;
    // upstream's two-line preview: the pointer, then the summary; never the file's content
    return typeof summary === "string" && summary !== "" ? `${ref}\nsummary: ${clip(summary)}` : ref;
  }
  if (v instanceof VAgent) return `<agent ${v.name}>`;
  if (isFunction(v)) return `<function ${v.name}>`;
  return String(v);
}

/** The preview's note: the model finds the whole value in the input only when the input holds it. */
function whereWhole(v: Value, input: Value, what: "text" | "value"): string {
  // (the input holds it when it is the input or a part of it: the same list or object, an equal string)
  return someValue(input, (x) => x === v) ? `the full ${what} is in the input` : "shortened";
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function compact(v: Value, cut?: number): string {
  // One line, keys sorted like the input serialization, so the preview matches what the model receives.
  return jsonText(v, cut === undefined ? { sorted: true } : { sorted: true, limit: cut, cut: true });
}

function clip(s: string): string {
  const oneLine = s.replace(/\s+/g, " ").trim();
  return oneLine.length <= PREVIEW_CHARS ? oneLine : oneLine.slice(0, PREVIEW_CHARS) + "…";
}
