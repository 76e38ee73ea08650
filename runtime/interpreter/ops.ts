// Operators, member access and indexing: the value-level rules of spec/language.md §2 and the dialect.
import type { BinaryOp } from "../../grammar/ast.ts";
import {
  thrown,
  typeName,
  valueEquals,
  VAgent,
  type Site,
  type Value,
  type VFunction,
  type VObject,
} from "../values.ts";
import { deriveAgent } from "./agents.ts";
import { MAX_LIST_LENGTH, MAX_STRING_LENGTH, TOO_LONG } from "./frame.ts";
import { checkRoomForList } from "../heap.ts";

export function binaryOp(op: BinaryOp, a: Value, b: Value, site: Site): Value {
  switch (op) {
    case "+":
      return add(a, b, site);
    case "-":
      if (typeof a === "number" && typeof b === "number") return checkFinite(a - b, site);
      throw thrown(`'-' needs two numbers, got ${typeName(a)} and ${typeName(b)}`, site);
    case "==":
      return valueEquals(a, b, site);
    case "!=":
      return !valueEquals(a, b, site);
    case "<":
    case "<=":
    case ">":
    case ">=":
      return compare(op, a, b, site);
    default: {
      const never: never = op;
      return never;
    }
  }
}

export function add(a: Value, b: Value, site: Site): Value {
  if (typeof a === "number" && typeof b === "number") return checkFinite(a + b, site);
  if (typeof a === "string" && typeof b === "string") {
    // at the operator, in the program's words: V8 would say "Invalid string length" wherever it is caught
    if (a.length + b.length > MAX_STRING_LENGTH) throw thrown(`value too large: '+' would make a string of ${(a.length + b.length).toLocaleString("en")} characters; ${TOO_LONG.string}`, site);
    return a + b;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length + b.length > MAX_LIST_LENGTH) throw thrown(`value too large: '+' would make a list of ${(a.length + b.length).toLocaleString("en")} items; ${TOO_LONG.list}`, site);
    checkRoomForList(a.length + b.length, site);
    return a.concat(b);
  }
  throw thrown(`'+' needs two numbers, two strings or two lists, got ${typeName(a)} and ${typeName(b)}`, site);
}

export function compare(op: "<" | "<=" | ">" | ">=", a: Value, b: Value, site: Site): boolean {
  if (typeof a !== "number" || typeof b !== "number") {
    throw thrown(`'${op}' compares numbers only, got ${typeName(a)} and ${typeName(b)}`, site);
  }
  switch (op) {
    case "<":
      return a < b;
    case "<=":
      return a <= b;
    case ">":
      return a > b;
    case ">=":
      return a >= b;
    default: {
      const never: never = op;
      return never;
    }
  }
}

function checkFinite(n: number, site: Site): number {
  if (!Number.isFinite(n)) throw thrown("number too large", site);
  return n;
}

/** `if`/`while`/`and`/`or`/`not` operands: booleans only, no truthiness. */
export function needBool(v: Value, what: string, site: Site): boolean {
  if (v === true || v === false) return v;
  throw thrown(`${what} must be true or false, got ${typeName(v)}`, site);
}

/** `obj.field`: objects by key (a missing field raises), agents expose `.with(...)` and their configuration. */
export function member(v: Value, name: string, site: Site): Value {
  if (v instanceof Map) {
    const x = v.get(name);
    if (x !== undefined) return x;
    throw thrown(`no field '${name}' in this object (fields: ${fieldList(v)})`, site);
  }
  if (v instanceof VAgent) {
    if (name === "with") return withMethod(v);
    const x = v.config.get(name);
    if (x !== undefined) return x;
    throw thrown(`agent '${v.name}' has no '${name}' setting`, site);
  }
  throw thrown(`cannot read field '${name}' of ${typeName(v)}`, site);
}

function fieldList(o: VObject): string {
  if (o.size === 0) return "none";
  const keys = [...o.keys()];
  return keys.length > 10 ? keys.slice(0, 10).join(", ") + ", …" : keys.join(", ");
}

/** `xs[i]` (integer, negative counts from the end) and `obj["key"]`; anything out of range raises. */
export function index(v: Value, i: Value, site: Site): Value {
  if (Array.isArray(v)) {
    if (typeof i !== "number" || !Number.isInteger(i)) {
      throw thrown(`a list index must be a whole number, got ${typeName(i)}${typeof i === "number" ? ` ${i}` : ""}`, site);
    }
    const k = i < 0 ? v.length + i : i;
    if (k < 0 || k >= v.length) throw thrown(`list index ${i} out of range (length ${v.length})`, site);
    return v[k] as Value;
  }
  if (v instanceof Map) {
    if (typeof i !== "string") throw thrown(`an object index must be a string, got ${typeName(i)}`, site);
    const x = v.get(i);
    if (x === undefined) throw thrown(`no field '${i}' in this object (fields: ${fieldList(v)})`, site);
    return x;
  }
  throw thrown(`cannot index ${typeName(v)}`, site);
}

function withMethod(agent: VAgent): VFunction {
  const call = (args: Value[], kwargs: Map<string, Value> | null, _it: Value, site: Site): Value => {
    if (args.length > 0) throw thrown(".with(...) takes keyword arguments only, such as .with(model=\"haiku\")", site);
    return deriveAgent(agent, kwargs ?? new Map(), site);
  };
  return { type: "function", name: `${agent.name}.with`, params: [], isAsync: false, callSync: call, call };
}
