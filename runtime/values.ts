// Runtime values. JS primitives are used where they fit so the hot paths stay cheap:
// unit is `null`, booleans and numbers are JS ones, strings are JS strings, lists are JS arrays
// (never mutated after creation), objects are insertion-ordered `Map<string, Value>`.

import type { Span } from "../grammar/ast.ts";

export type Value = null | boolean | number | string | Value[] | VObject | VFunction | VAgent;
export type VObject = Map<string, Value>;

/** Where a runtime event happened, for error messages and traces. */
export interface Site {
  path: string;
  span: Span;
}

/**
 * The caller's side of a call: how deep the VVM call stack is (for the recursion limit) and the signal
 * that cancels this line of work (Ctrl-C, or a failed pmap sibling). Optional so outside callers can omit it.
 */
export interface CallEnv {
  readonly depth: number;
  readonly signal: AbortSignal;
}

/** A callable value: a user `def` (closure) or a standard-library builtin. */
export interface VFunction {
  readonly type: "function";
  readonly name: string;
  /** Parameter names, in order (builtins list what they accept). */
  readonly params: readonly string[];
  /** True when calling this may suspend (agent calls, judges, pmap, or unknown callees). */
  readonly isAsync: boolean;
  /**
   * Positional then keyword arguments, already evaluated left to right. The `args` array is handed over:
   * a user function may use it as its frame, so callers pass a fresh array and never reuse it.
   */
  callSync?(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value;
  call(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value | Promise<Value>;
}

/** An agent configuration: declared, imported, derived with `.with(...)`, or inline. */
export class VAgent {
  readonly type = "agent";
  constructor(
    /** declared name, the variable a derived agent was assigned to, or a label such as `base.with` or `<inline>` */
    readonly name: string,
    /** model, prompt, skills, permissions, memory, and any pass-through keys */
    readonly config: VObject,
    /** where it was declared (memory provenance, diagnostics) */
    readonly site: Site | null,
    /** the agents it was derived from with `.with(...)`, nearest first (`acme = support.with(...)`: ["support"]) */
    readonly bases: readonly string[] = [],
  ) {}
}

export function isFunction(v: Value): v is VFunction {
  return typeof v === "object" && v !== null && !(v instanceof Map) && !Array.isArray(v) && (v as VFunction).type === "function";
}

/** An error value is any object whose `error` field is itself an object (`{ error: "text" }` is not). */
export function isErrorValue(v: Value): v is VObject {
  return v instanceof Map && v.get("error") instanceof Map;
}
export function errorKind(v: VObject): string | null {
  const e = v.get("error");
  const k = e instanceof Map ? e.get("kind") : undefined;
  return typeof k === "string" ? k : null;
}
/** A ref value is any object whose `ref` field is a string. */
export function isRef(v: Value): v is VObject {
  return v instanceof Map && typeof v.get("ref") === "string";
}

/**
 * Whether `v` or any value inside it passes `test`. Each list and object is visited once: a value can share
 * its parts (`xs = [xs, xs]` forty times is 2^40 paths to one list), which a walk of the tree would repeat.
 */
export function someValue(v: Value, test: (x: Value) => boolean): boolean {
  const stack: Value[] = [v];
  const seen = new Set<Value>();
  while (stack.length > 0) {
    const x = stack.pop() as Value;
    if (test(x)) return true;
    if ((Array.isArray(x) || x instanceof Map) && !seen.has(x)) {
      seen.add(x);
      for (const y of x.values()) stack.push(y);
    }
  }
  return false;
}

export function obj(entries: Record<string, Value> | [string, Value][]): VObject {
  return new Map(Array.isArray(entries) ? entries : Object.entries(entries));
}

/** `{ error: { kind, message, data? } }` */
export function makeError(kind: string, message: string, data?: Value): VObject {
  const e: VObject = new Map<string, Value>([
    ["kind", kind],
    ["message", message],
  ]);
  if (data !== undefined) e.set("data", data);
  return new Map([["error", e]]);
}

/** One step of a raise's way out: a function it left (called at `site`), or a `map`/`pmap` item it ended. */
export type RaiseStep =
  | { kind: "call"; fn: string; site: Site }
  | { kind: "item"; fn: string; index: number; count: number; site: Site }
  /** steps left out between the innermost and the outermost ones of a deep trail */
  | { kind: "omitted"; count: number };

/** Steps a traceback keeps at each end: deep recursion must not make a raise carry a thousand frames. */
const TRAIL_END = 32;

/** A raised error travelling up the JS stack. `value` is the VVM error value. */
export class VvmRaise extends Error {
  /**
   * where it travelled, innermost first (the traceback of an uncaught raise): the innermost and the
   * outermost TRAIL_END steps, with one `omitted` step between them counting the rest
   */
  readonly trail: RaiseStep[] = [];

  /** One step outward: a function's frame, or the item of a map or pmap, the raise left. */
  step(s: RaiseStep): void {
    const t = this.trail;
    if (t.length === 2 * TRAIL_END) t.splice(TRAIL_END, 1, { kind: "omitted", count: 1 });
    else if (t.length > 2 * TRAIL_END) {
      // the oldest outer step joins the omitted ones
      t.splice(TRAIL_END + 1, 1);
      (t[TRAIL_END] as { count: number }).count++;
    }
    t.push(s);
  }

  constructor(
    readonly value: Value,
    readonly site: Site | null = null,
  ) {
    super(describeRaise(value));
    this.name = "VvmRaise";
  }
}

/** Raise `{ error: { kind: "thrown", message } }`. */
export function thrown(message: string, site: Site | null = null, data?: Value): VvmRaise {
  return new VvmRaise(makeError("thrown", message, data), site);
}

function describeRaise(v: Value): string {
  if (isErrorValue(v)) {
    const e = v.get("error") as VObject;
    return `${String(e.get("kind"))}: ${String(e.get("message") ?? "")}`;
  }
  return typeName(v);
}

export function typeName(v: Value): string {
  if (v === null) return "unit";
  switch (typeof v) {
    case "boolean":
      return "boolean";
    case "number":
      return "number";
    case "string":
      return "string";
  }
  if (Array.isArray(v)) return "list";
  if (v instanceof Map) {
    // a failed call's result used as text or a number: named so, the raise points back at the failure
    if (!isErrorValue(v)) return "object";
    const kind = errorKind(v);
    return kind === null ? "error value" : `error value (${kind.length > 40 ? kind.slice(0, 40) + "…" : kind})`;
  }
  if (v instanceof VAgent) return "agent";
  return "function";
}

/** The type's name with its article, for messages: "a list", "an object", "an agent", "unit". */
export function aTypeName(v: Value): string {
  const name = typeName(v);
  return name === "unit" ? name : /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

/** Null when `v` is a list of strings; else what it is, for "… must be a list of …, got …" (`a list whose item 1 is a number`). */
export function notStringList(v: Value): string | null {
  if (!Array.isArray(v)) return aTypeName(v);
  const i = v.findIndex((x) => typeof x !== "string");
  return i < 0 ? null : `a list whose item ${i} is ${aTypeName(v[i]!)}`;
}

/** Structural equality; comparing functions or agents raises `thrown`. */
export function valueEquals(a: Value, b: Value, site: Site | null = null): boolean {
  // booleans, numbers and strings (the common case)
  if (typeof a !== "object" && typeof b !== "object") return a === b;
  return new Equality(site).equal(a, b);
}

/**
 * One comparison's walk. Values are never changed in place, so a list or object can share its parts
 * (`xs = [xs, xs]` forty times is 2^40 paths to one item): a pair of parts found equal after more than
 * REMEMBER steps is remembered, and the same pair met again is equal at once, so two such values compare
 * in time proportional to their distinct parts rather than to their paths. Small pairs are not remembered
 * (a list of a million small objects would fill the memory with pairs met once).
 */
class Equality {
  private steps = 0;
  private readonly equalPairs = new Map<object, Set<object>>();
  constructor(private readonly site: Site | null) {}

  equal(a: Value, b: Value): boolean {
    this.steps++;
    if (typeof a !== "object" && typeof b !== "object") return a === b;
    // a function or an agent compares with nothing, itself included (spec/language.md §2)
    const fa = isFunction(a) || a instanceof VAgent;
    if (fa || isFunction(b) || b instanceof VAgent) {
      throw thrown(fa && a === b ? `cannot compare ${typeName(a)} values` : `cannot compare ${typeName(a)} with ${typeName(b)}`, this.site);
    }
    if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return a === b;
    // no shortcut for a list or object compared with itself: one holding a function must raise as a copy of it does
    // (the pairs remembered below keep a value built of shared parts, `xs = [xs, xs]` again and again, quick)
    if (this.equalPairs.get(a)?.has(b)) return true;
    const start = this.steps;
    if (!this.children(a, b)) return false;
    if (this.steps - start > REMEMBER) {
      const known = this.equalPairs.get(a);
      if (known === undefined) this.equalPairs.set(a, new Set([b]));
      else known.add(b);
    }
    return true;
  }

  private children(a: object, b: object): boolean {
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false;
      for (let i = 0; i < a.length; i++) if (!this.equal(a[i] as Value, b[i] as Value)) return false;
      return true;
    }
    if (a instanceof Map) {
      if (!(b instanceof Map) || a.size !== b.size) return false;
      for (const [k, v] of a) {
        if (!b.has(k) || !this.equal(v as Value, b.get(k) as Value)) return false;
      }
      return true;
    }
    return false;
  }
}

/** Steps of a comparison after which its pair is remembered. */
const REMEMBER = 32;

/**
 * An empty object for JSON output keyed by program-chosen strings: without a prototype, so a key such
 * as `__proto__` is an ordinary field (on `{}` it would set the prototype and vanish from the output).
 */
export function jsonObject(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/** Plain JSON for exports and traces: unit → null, functions and agents described, not executed. */
export function toJSON(v: Value): unknown {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(toJSON);
  if (v instanceof Map) {
    const out = jsonObject();
    for (const [k, x] of v) out[k] = toJSON(x);
    return out;
  }
  if (v instanceof VAgent) return { agent: v.name, config: toJSON(v.config) };
  return { function: v.name };
}

/** JSON back into values (objects become Maps, in key order). */
export function fromJSON(x: unknown): Value {
  if (x === null || x === undefined) return null;
  if (typeof x === "boolean" || typeof x === "number" || typeof x === "string") return x;
  if (Array.isArray(x)) return x.map(fromJSON);
  if (typeof x === "object") {
    const m: VObject = new Map();
    for (const [k, v] of Object.entries(x as Record<string, unknown>)) m.set(k, fromJSON(v));
    return m;
  }
  return String(x);
}

