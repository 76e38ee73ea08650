// A value shaped like a JSON Schema, for replies nobody wrote: the simulator's answer to a typed call
// (spec/typed-results.md §8). Required fields only, the first of every choice, empty lists; strings carry a label.
// What it cannot make is said, not sent.

const FORMAT_SAMPLES: Record<string, string> = {
  "date-time": "1970-01-01T00:00:00Z",
  date: "1970-01-01",
  time: "00:00:00Z",
  email: "sim@example.com",
  uri: "https://example.com/",
  uuid: "00000000-0000-0000-0000-000000000000",
  ipv4: "127.0.0.1",
  ipv6: "::1",
  hostname: "example.com",
};

/** Deeper than this the placeholder stops (a required part that refers to itself would never end). */
const MAX_DEPTH = 64;
/** Values and string characters a placeholder may hold: a schema's `minItems` must not fill the memory. */
export const MAX_SIZE = 100_000;

export type Placeholder = { ok: true; value: unknown } | { ok: false; problem: string };

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
  if (typeof o.$ref === "string" && o.$ref.startsWith("#/")) {
    const target = o.$ref
      .slice(2)
      .split("/")
      .reduce<unknown>((at, key) => (typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined), b.root);
    return make(target, b, depth + 1);
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const l = o[key];
    if (Array.isArray(l) && l.length > 0) return make(l[0], b, depth + 1);
  }
  const type = Array.isArray(o.type) ? o.type[0] : o.type;
  switch (type) {
    case "string": {
      const text = typeof o.format === "string" && o.format in FORMAT_SAMPLES ? FORMAT_SAMPLES[o.format]! : b.label;
      spend(b, text.length);
      return text;
    }
    case "number":
    case "integer":
      return typeof o.minimum === "number" ? Math.ceil(o.minimum) : 0;
    case "boolean":
      return false;
    case "array": {
      const min = typeof o.minItems === "number" ? o.minItems : 0;
      spend(b, min);
      return Array.from({ length: min }, () => make(o.items, b, depth + 1));
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
