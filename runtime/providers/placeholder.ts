// A value shaped like a JSON Schema, for replies nobody wrote: the simulator's answer to a typed call
// (spec/typed-results.md). Required fields only, the first of every choice, empty lists; strings carry a label.

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

/** Deeper than this the placeholder stops (a schema that refers to itself would never end). */
const MAX_DEPTH = 32;

export function placeholder(schema: unknown, label: string): unknown {
  return make(schema, schema, label, 0);
}

function make(s: unknown, root: unknown, label: string, depth: number): unknown {
  if (typeof s !== "object" || s === null || Array.isArray(s) || depth > MAX_DEPTH) return null;
  const o = s as Record<string, unknown>;
  if ("const" in o) return o.const;
  if (Array.isArray(o.enum) && o.enum.length > 0) return o.enum[0];
  if (typeof o.$ref === "string" && o.$ref.startsWith("#/")) {
    const target = o.$ref
      .slice(2)
      .split("/")
      .reduce<unknown>((at, key) => (typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined), root);
    return make(target, root, label, depth + 1);
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const l = o[key];
    if (Array.isArray(l) && l.length > 0) return make(l[0], root, label, depth + 1);
  }
  const type = Array.isArray(o.type) ? o.type[0] : o.type;
  switch (type) {
    case "string":
      return typeof o.format === "string" && o.format in FORMAT_SAMPLES ? FORMAT_SAMPLES[o.format] : label;
    case "number":
    case "integer":
      return typeof o.minimum === "number" ? Math.ceil(o.minimum) : 0;
    case "boolean":
      return false;
    case "array": {
      const min = typeof o.minItems === "number" ? o.minItems : 0;
      return Array.from({ length: min }, () => make(o.items, root, label, depth + 1));
    }
    case "object": {
      const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      const props = (typeof o.properties === "object" && o.properties !== null ? o.properties : {}) as Record<string, unknown>;
      const required = Array.isArray(o.required) ? o.required.filter((r): r is string => typeof r === "string") : [];
      for (const name of required) out[name] = make(props[name], root, label, depth + 1);
      return out;
    }
    default:
      return null;
  }
}
