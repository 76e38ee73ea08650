// VVM values as JSON text: what `vvm run` prints, what a call sends as its input, and the previews in
// templates and narration. Written here rather than by JSON.stringify over plain objects, which put
// integer-like keys ("2", "10") before the others whatever the object's order, overflowed the stack on
// values nested tens of thousands deep, and on a value that shares its parts (`xs = [xs, xs]`, 40 times:
// 2^40 items to print) ran until memory ran out. The walk here keeps its own stack and stops at a limit.
import { isFunction, VAgent, type Value } from "./values.ts";

/** The longest text written by default: well under V8's longest string (2^29 - 24 characters). */
export const JSON_TEXT_LIMIT = 2 ** 28;

/** A value whose JSON text would pass the limit: a program's problem (`value too large`), never a crash. */
export class ValueTooLarge extends RangeError {
  constructor(limit: number) {
    super(`its JSON text would be longer than ${limit.toLocaleString("en")} characters`);
  }
}

interface JsonTextOptions {
  /** spaces per level, as JSON.stringify's third argument; 0 writes one line */
  indent?: number;
  /** object keys in sorted order (the input serialization) rather than the object's own */
  sorted?: boolean;
  /** characters at most (default JSON_TEXT_LIMIT) */
  limit?: number;
  /** past the limit, return the text cut there instead of throwing ValueTooLarge (for previews) */
  cut?: boolean;
}

/**
 * The spec's serialization of a call input: JSON, object keys in sorted order, indented. Strings at the top
 * level are sent as they are.
 */
export function serializeInput(v: Value): string {
  return typeof v === "string" ? v : jsonText(v, { indent: 2, sorted: true });
}

/** One open list or object: its items (an object's in the order of `keys`), the next to write, and its closing bracket. */
interface Open {
  items: readonly Value[];
  keys: string[] | null;
  next: number;
  close: string;
}

/**
 * `v` as JSON text, formatted as JSON.stringify(v, null, indent) would format its plain form (toJSON): unit is
 * null; functions are `{"function": name}` and agents `{"agent": name, "config": …}`.
 */
export function jsonText(v: Value, opts: JsonTextOptions = {}): string {
  const indent = opts.indent ?? 0;
  const limit = opts.limit ?? JSON_TEXT_LIMIT;
  const sorted = opts.sorted === true;
  const colon = indent > 0 ? ": " : ":";
  // the line break and indentation before an item at each depth
  const pads: string[] = [];
  const pad = (depth: number): string => (pads[depth] ??= "\n" + " ".repeat(indent * depth));
  // Pieces gather in `parts` and are joined into a chunk every CHUNK pieces: one array of every piece (a
  // pointer each) could outgrow the text, and one long chain of concatenations makes work for the collector.
  // No piece goes past the limit: the one that would is cut there and the writing stops, so no string made
  // here is ever longer than the limit (a list of one long string 8,192 times over passed V8's longest).
  const chunks: string[] = [];
  const parts: string[] = [];
  let size = 0;
  let over = false;
  let measured = false;
  const put = (s: string): boolean => {
    if (!measured && size > MEASURE_AFTER && !opts.cut) {
      // long already: a value that shares its parts can be measured whole far sooner than written out
      measured = true;
      if (leastLength(v, limit) > limit) {
        over = true;
        return false;
      }
    }
    if (size + s.length > limit) {
      parts.push(s.slice(0, limit - size));
      over = true;
      return false;
    }
    parts.push(s);
    size += s.length;
    if (parts.length >= CHUNK) {
      chunks.push(parts.join(""));
      parts.length = 0;
    }
    return true;
  };
  // a long string is escaped a piece at a time: escaped whole, one of control characters grows sixfold
  const putString = (s: string): boolean => {
    if (s.length <= STRING_PIECE) return put(JSON.stringify(s));
    if (!put('"')) return false;
    for (let i = 0; i < s.length; ) {
      let j = Math.min(s.length, i + STRING_PIECE);
      const last = s.charCodeAt(j - 1);
      if (j < s.length && last >= 0xd800 && last <= 0xdbff) j--; // a surrogate pair stays in one piece
      if (!put(JSON.stringify(s.slice(i, j)).slice(1, -1))) return false;
      i = j;
    }
    return put('"');
  };
  const stack: Open[] = [];
  let x: Value = v;
  writing: for (;;) {
    // write x: a scalar, or the opening of a list or object
    const open = opened(x, sorted);
    let within: boolean;
    if (open === null) within = typeof x === "string" ? putString(x) : put(scalar(x));
    else if (open.items.length === 0) within = put(open.keys === null ? "[]" : "{}");
    else {
      stack.push(open);
      within = put(open.keys === null ? "[" : "{");
    }
    if (!within) break;
    // then the next item to write, closing the lists and objects that are done
    let top = stack[stack.length - 1];
    while (top !== undefined && top.next === top.items.length) {
      stack.pop();
      if ((indent > 0 && !put(pad(stack.length))) || !put(top.close)) break writing;
      top = stack[stack.length - 1];
    }
    if (top === undefined) break;
    const i = top.next++;
    if ((i > 0 && !put(",")) || (indent > 0 && !put(pad(stack.length)))) break;
    if (top.keys !== null && !(putString(top.keys[i]!) && put(colon))) break;
    x = top.items[i] as Value;
  }
  chunks.push(parts.join(""));
  const text = chunks.join("");
  if (over && !opts.cut) throw new ValueTooLarge(limit);
  return text;
}

/** Characters written before the value is measured as a whole (leastLength): text this long is rare enough that one more walk of it (a map entry per list and object) costs little. */
const MEASURE_AFTER = 1 << 24;

/**
 * At least how long `v`'s JSON text is (one line, every scalar one character), or a number past `limit` as
 * soon as it is clear. Each list and object is measured once however many places hold it, so `xs = [xs, xs]`
 * forty times (2^40 items to write) is measured in forty steps, where writing it stopped only at the limit
 * after hundreds of millions of items (seconds).
 */
function leastLength(v: Value, limit: number): number {
  const known = new Map<object, number>();
  const measure = (x: Value): number => {
    const open = opened(x, false);
    if (open === null) return typeof x === "string" ? x.length + 2 : 1;
    const key = x as object;
    const got = known.get(key);
    if (got !== undefined) return got;
    let n = 1 + Math.max(open.items.length, 1); // brackets and commas
    for (let i = 0; i < open.items.length && n <= limit; i++) {
      n += measure(open.items[i] as Value) + (open.keys === null ? 0 : open.keys[i]!.length + 3);
    }
    known.set(key, n);
    return n;
  };
  try {
    return measure(v);
  } catch (err) {
    if (err instanceof RangeError) return 0; // nested too deep to measure this way: the writing decides
    throw err;
  }
}

/** Pieces joined into one chunk at a time. */
const CHUNK = 8192;
/** Characters of a string escaped at a time. */
const STRING_PIECE = 65536;

/** A number, boolean or null (strings are written by putString, a piece at a time when long). */
function scalar(x: Value): string {
  if (typeof x === "number") return Number.isFinite(x) ? String(x) : "null"; // as JSON.stringify (-0 is 0)
  return x === null ? "null" : x ? "true" : "false";
}

/** A list or object (a function's and an agent's plain form too) about to be written; null for a scalar. */
function opened(x: Value, sorted: boolean): Open | null {
  if (Array.isArray(x)) return { items: x, keys: null, next: 0, close: "]" };
  if (x instanceof Map) {
    const keys = sorted ? [...x.keys()].sort() : [...x.keys()];
    return { items: keys.map((k) => x.get(k) as Value), keys, next: 0, close: "}" };
  }
  if (x instanceof VAgent) return { items: [x.name, x.config], keys: ["agent", "config"], next: 0, close: "}" };
  if (isFunction(x)) return { items: [x.name], keys: ["function"], next: 0, close: "}" };
  return null;
}
