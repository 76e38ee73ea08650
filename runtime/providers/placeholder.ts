// A value shaped like a JSON Schema, for replies nobody wrote: the simulator's answer to a typed call
// (spec/typed-results.md §8). Required fields only, the first of every choice, the fewest items, numbers as close
// to 0 as the bounds allow; strings carry a label. What it cannot make is said, not sent.
import { pointerKeys } from "../json-schema.ts";
import { cutText } from "../text.ts";

const FORMAT_SAMPLES: Record<string, string> = {
  "date-time": "1970-01-01T00:00:00Z",
  "iso-date-time": "1970-01-01T00:00:00Z",
  date: "1970-01-01",
  time: "00:00:00Z",
  "iso-time": "00:00:00Z",
  duration: "P0D",
  email: "sim@example.com",
  uri: "https://example.com/",
  "uri-reference": "https://example.com/",
  "uri-template": "https://example.com/",
  url: "https://example.com/",
  uuid: "00000000-0000-0000-0000-000000000000",
  ipv4: "127.0.0.1",
  ipv6: "::1",
  hostname: "example.com",
  "json-pointer": "",
  "json-pointer-uri-fragment": "#",
  "relative-json-pointer": "0",
  byte: "",
};

/** Deeper than this the placeholder stops (a required part that refers to itself would never end). */
const MAX_DEPTH = 64;
/** Values and string characters a placeholder may hold: a schema's `minItems` must not fill the memory. */
export const MAX_SIZE = 100_000;

type Placeholder = { ok: true; value: unknown } | { ok: false; problem: string };

/** Why a placeholder cannot be made, thrown from deep inside and caught once. */
class Unmakeable extends Error {}

export function placeholder(schema: unknown, label: string): Placeholder {
  try {
    return { ok: true, value: make(schema, { root: schema, label, left: MAX_SIZE }, 0) };
  } catch (err) {
    if (err instanceof Unmakeable) return { ok: false, problem: err.message };
    throw err;
  }
}

interface Budget {
  root: unknown;
  label: string;
  /** of MAX_SIZE */
  left: number;
}

function spend(b: Budget, n: number): void {
  b.left -= n;
  if (b.left < 0) throw new Unmakeable(`the schema needs a larger value than the simulator makes (at most ${MAX_SIZE.toLocaleString("en")} items and characters: a large "minItems" or "minLength", or many required parts)`);
}

function make(s: unknown, b: Budget, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new Unmakeable(`the schema's required parts nest deeper than ${MAX_DEPTH} levels (a part that refers to itself without end?)`);
  spend(b, 1);
  if (typeof s !== "object" || s === null || Array.isArray(s)) return null;
  const o = s as Record<string, unknown>;
  if ("const" in o) return o.const;
  if (Array.isArray(o.enum) && o.enum.length > 0) return o.enum[0];
  if (typeof o.$ref === "string" && (o.$ref === "#" || o.$ref.startsWith("#/"))) {
    // the fragment is a URI's (percent-encoded), then a JSON pointer
    const target = pointerKeys(decodeURIComponent(o.$ref.slice(1))).reduce<unknown>(
      (at, key) => (typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key] : undefined),
      b.root,
    );
    return make(target, b, depth + 1);
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const l = o[key];
    if (Array.isArray(l) && l.length > 0) return make(l[0], b, depth + 1);
  }
  const type = Array.isArray(o.type) ? o.type[0] : o.type;
  switch (type) {
    case "string":
      return string(o, b);
    case "number":
    case "integer":
      return number(o, type === "integer");
    case "boolean":
      return false;
    case "array": {
      const min = typeof o.minItems === "number" ? o.minItems : 0;
      spend(b, min);
      const prefix = Array.isArray(o.prefixItems) ? o.prefixItems : [];
      return Array.from({ length: min }, (_, i) => make(i < prefix.length ? prefix[i] : o.items, b, depth + 1));
    }
    case "object": {
      const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      const props = (typeof o.properties === "object" && o.properties !== null ? o.properties : {}) as Record<string, unknown>;
      const required = Array.isArray(o.required) ? o.required.filter((r): r is string => typeof r === "string") : [];
      for (const name of required) out[name] = make(props[name], b, depth + 1);
      return out;
    }
    default:
      return null;
  }
}

/** A format's sample, or the label, cut to `maxLength` and padded to `minLength`. */
function string(o: Record<string, unknown>, b: Budget): string {
  let text = typeof o.format === "string" && o.format in FORMAT_SAMPLES ? FORMAT_SAMPLES[o.format]! : b.label;
  if (typeof o.maxLength === "number" && [...text].length > o.maxLength) text = cutText(text, o.maxLength);
  const min = typeof o.minLength === "number" ? o.minLength : 0;
  const pad = min - [...text].length;
  if (pad > 0) {
    spend(b, pad);
    text += "_".repeat(pad);
  }
  spend(b, text.length);
  return text;
}

/** 0, or the bound nearest to it: `minimum`, `exclusiveMinimum` (1 above, or halfway to the maximum), and the same below. */
function number(o: Record<string, unknown>, integer: boolean): number {
  const num = (k: string) => (typeof o[k] === "number" ? (o[k] as number) : undefined);
  const [min, xmin, max, xmax] = [num("minimum"), num("exclusiveMinimum"), num("maximum"), num("exclusiveMaximum")];
  const lo = Math.max(min ?? -Infinity, xmin ?? -Infinity);
  const hi = Math.min(max ?? Infinity, xmax ?? Infinity);
  const loOpen = xmin !== undefined && xmin >= (min ?? -Infinity);
  const hiOpen = xmax !== undefined && xmax <= (max ?? Infinity);
  const above = (v: number) => v > lo || (v === lo && !loOpen);
  const below = (v: number) => v < hi || (v === hi && !hiOpen);
  if (above(0) && below(0)) return 0;
  const up = !above(0);
  if (integer) return up ? (loOpen ? Math.floor(lo) + 1 : Math.ceil(lo)) : hiOpen ? Math.ceil(hi) - 1 : Math.floor(hi);
  const v = up ? (loOpen ? lo + 1 : lo) : hiOpen ? hi - 1 : hi;
  return above(v) && below(v) ? v : (lo + hi) / 2;
}
