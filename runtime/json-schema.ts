// What the runtime itself reads of a JSON Schema escape hatch (spec/typed-results.md §2.1): where its subschemas
// are, and whether its local references loop. The validator (ajv) judges the rest.

/** Keywords whose value is one subschema, applied to the value itself (in place) or to a part of it. */
const IN_PLACE_ONE = ["not", "if", "then", "else"];
const INTO_ONE = ["items", "additionalItems", "additionalProperties", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"];
/** Keywords whose value is a list of subschemas. */
const IN_PLACE_LIST = ["allOf", "anyOf", "oneOf"];
const INTO_LIST = ["prefixItems", "items"];
/**
 * Keywords whose value maps names to subschemas (`dependentSchemas` and the older `dependencies`, whose values
 * may also be lists of names, apply in place; `$defs` is not applied).
 */
const IN_PLACE_MAP = ["dependentSchemas", "dependencies"];
const OTHER_MAP = ["properties", "patternProperties", "$defs", "definitions"];

/** A subschema of a schema: its JSON pointer's keys, and whether it applies to the same value as its parent. */
interface Sub {
  path: (string | number)[];
  schema: unknown;
  inPlace: boolean;
}

/** The subschemas directly under `s` (data keywords such as `const`, `enum` or `default` hold none). */
function subschemas(s: unknown, path: (string | number)[]): Sub[] {
  if (typeof s !== "object" || s === null || Array.isArray(s)) return [];
  const o = s as Record<string, unknown>;
  const out: Sub[] = [];
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  for (const [key, v] of Object.entries(o)) {
    if (IN_PLACE_ONE.includes(key) || (INTO_ONE.includes(key) && !Array.isArray(v))) out.push({ path: [...path, key], schema: v, inPlace: IN_PLACE_ONE.includes(key) });
    else if ((IN_PLACE_LIST.includes(key) || INTO_LIST.includes(key)) && Array.isArray(v)) v.forEach((x, i) => out.push({ path: [...path, key, i], schema: x, inPlace: IN_PLACE_LIST.includes(key) }));
    else if ((IN_PLACE_MAP.includes(key) || OTHER_MAP.includes(key)) && isMap(v)) for (const [k, x] of Object.entries(v)) out.push({ path: [...path, key, k], schema: x, inPlace: IN_PLACE_MAP.includes(key) });
  }
  return out;
}

/**
 * `schema` placed at `at` (a JSON pointer, `/properties/item`) inside a larger schema: its references from its own
 * root (`#`, `#/$defs/x`) are moved there, so they still mean what the program wrote. Only `$ref`s are touched, not
 * data (`const`, `enum`, `default`, `examples`), nor a subschema with its own `$id` (its `#` is itself). With
 * `anchorSuffix`, its anchors (`"$anchor": "day"`) and the references to them (`"#day"`) gain the suffix: one
 * escape hatch placed twice in a shape would otherwise name two places with one anchor, which the validator refuses.
 */
export function rebase(schema: unknown, at: string, anchorSuffix = ""): unknown {
  const anchors = new Set<string>();
  if (anchorSuffix !== "") ownAnchors(schema, anchors);
  return moved(schema, at, anchors, anchorSuffix);
}

function moved(schema: unknown, at: string, anchors: Set<string>, suffix: string): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema) || hasId(schema)) return schema;
  const out: Record<string, unknown> = { ...(schema as Record<string, unknown>) };
  const ref = out.$ref;
  if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/"))) out.$ref = `#${at}${ref.slice(1)}`;
  else if (typeof ref === "string" && ref.startsWith("#") && anchors.has(ref.slice(1))) out.$ref = ref + suffix;
  const anchor = anchorOf(schema);
  if (anchor !== undefined && anchors.has(anchor)) out.$anchor = anchor + suffix;
  for (const sub of subschemas(schema, [])) {
    const [key, inner] = sub.path as [string, string | number | undefined];
    if (inner === undefined) out[key] = moved(sub.schema, at, anchors, suffix);
    else {
      // a list or map of subschemas: copied once, then each replaced
      if (out[key] === (schema as Record<string, unknown>)[key]) out[key] = Array.isArray(out[key]) ? [...(out[key] as unknown[])] : { ...(out[key] as object) };
      (out[key] as Record<string | number, unknown>)[inner] = moved(sub.schema, at, anchors, suffix);
    }
  }
  return out;
}

/** The anchors `s` defines outside its subschemas with their own `$id` (those are documents of their own). */
function ownAnchors(s: unknown, into: Set<string>): void {
  if (hasId(s)) return;
  const anchor = anchorOf(s);
  if (anchor !== undefined) into.add(anchor);
  for (const sub of subschemas(s, [])) ownAnchors(sub.schema, into);
}

/** One key of a JSON pointer, as a URI fragment writes it. */
export function pointerKey(key: string): string {
  return encodeURIComponent(escapedKey(key));
}

/** One key of a JSON pointer: `~` and `/` escaped (`a/b` → `a~1b`). */
function escapedKey(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Why such a loop is refused, with the loop where it is known. */
export function refLoopMessage(loop: string[] | null): string {
  return `a "$ref" leads back to where it stands without reading into the value${loop === null ? "" : ` (${loop.join(" → ")})`}, so checking a reply would never end`;
}

/**
 * Thrown by a validator whose schema turned out to loop only while it checked a reply (through a subschema's own
 * `$id`, which refLoop does not follow): the schema's fault, not the reply's.
 */
export class RefLoopFound extends Error {
  constructor() {
    super(refLoopMessage(null));
  }
}

/**
 * A `$ref` that leads back to where it stands without the validator reading into the value (`"$ref": "#"` at the
 * root, or through `anyOf`): ajv would recurse until the stack runs out, compiling or validating. Only references
 * from the schema's root (`#`, `#/…`) and to its anchors (`#name`) are followed; a subschema with its own `$id`
 * is a document of its own and is left to the validator.
 */
export function refLoop(schema: unknown): { at: (string | number)[]; loop: string[] } | null {
  const nodes = new Map<string, { schema: unknown; path: (string | number)[] }>();
  const anchors = new Map<string, string>();
  const collect = (s: unknown, path: (string | number)[]) => {
    const key = pointer(path);
    nodes.set(key, { schema: s, path });
    const anchor = anchorOf(s);
    if (anchor !== undefined) anchors.set(anchor, key);
    for (const sub of subschemas(s, path)) if (!hasId(sub.schema)) collect(sub.schema, sub.path);
  };
  collect(schema, []);
  const target = (ref: string): string | undefined => {
    if (ref === "#" || ref.startsWith("#/")) {
      try {
        return decodeURIComponent(ref.slice(1));
      } catch {
        return undefined; // not a URI: ajv says so
      }
    }
    return ref.startsWith("#") ? anchors.get(ref.slice(1)) : undefined;
  };
  // in-place edges: the schema's own $ref and the subschemas applied to the same value
  const edges = (key: string): string[] => {
    const { schema: s, path } = nodes.get(key)!;
    const out = subschemas(s, path).filter((x) => x.inPlace && !hasId(x.schema)).map((x) => pointer(x.path));
    const ref = refOf(s);
    const to = ref === undefined ? undefined : target(ref);
    if (to !== undefined && nodes.has(to)) out.push(to);
    return out;
  };
  // depth first, without recursion (a chain of references may be long); a node met again while open closes a loop
  const state = new Map<string, "open" | "done">();
  for (const start of nodes.keys()) {
    if (state.has(start)) continue;
    state.set(start, "open");
    const work = [{ key: start, next: edges(start), i: 0 }];
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      if (top.i === top.next.length) {
        state.set(top.key, "done");
        work.pop();
        continue;
      }
      const next = top.next[top.i++]!;
      if (state.get(next) === "open") {
        const loop = [...work.slice(work.findIndex((w) => w.key === next)).map((w) => w.key), next];
        // every loop passes a $ref (subschemas alone form a tree): report the first
        const from = loop.find((k) => refOf(nodes.get(k)!.schema) !== undefined)!;
        return { at: [...nodes.get(from)!.path, "$ref"], loop: loop.map((k) => `#${k}`) };
      }
      if (!state.has(next)) {
        state.set(next, "open");
        work.push({ key: next, next: edges(next), i: 0 });
      }
    }
  }
  return null;
}

/** The keys a JSON pointer names, in order (`/a~1b/0` → `a/b`, `0`; `""`, the whole document, → none). */
export function pointerKeys(pointer: string): string[] {
  return pointer
    .split("/")
    .slice(1)
    .map((k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The JSON pointer of `path` (without its `#`), as the node map keys it. */
function pointer(path: (string | number)[]): string {
  return path.map((p) => `/${escapedKey(String(p))}`).join("");
}

function hasId(s: unknown): boolean {
  return typeof s === "object" && s !== null && "$id" in s;
}

function refOf(s: unknown): string | undefined {
  return stringKeyword(s, "$ref");
}

function anchorOf(s: unknown): string | undefined {
  return stringKeyword(s, "$anchor");
}

function stringKeyword(s: unknown, keyword: string): string | undefined {
  const v = typeof s === "object" && s !== null ? (s as Record<string, unknown>)[keyword] : undefined;
  return typeof v === "string" ? v : undefined;
}
