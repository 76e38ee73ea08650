// pack, perm, range, len.
import { notStringList, thrown, typeName, type Site, type Value, type VObject } from "../runtime/values.ts";
import { checkRoomForList } from "../runtime/heap.ts";
import { bindArgs } from "./args.ts";
import { SIGNATURES } from "./signatures.ts";

/**
 * `pack(k=v)` as a value. Positional arguments need their names, which only the call site has: the
 * interpreter compiles direct `pack(...)` calls itself and only reaches this for keyword-only calls.
 */
export function pack(args: Value[], kwargs: Map<string, Value> | null, _it: Value, site: Site): Value {
  if (args.length > 0) {
    throw thrown("pack()'s positional arguments must be plain names written at the call, such as pack(draft, notes); use pack(key=value) otherwise", site);
  }
  return new Map(kwargs ?? []);
}

const PERM_MODES = ["allow", "deny", "prompt"];

export function perm(args: Value[], kwargs: Map<string, Value> | null, _it: Value, site: Site): Value {
  if (args.length > 0) throw thrown("perm() takes keyword arguments only, such as perm(network=\"allow\")", site);
  const [read, write, execute, bash, network] = bindArgs("perm", SIGNATURES.perm.params, 0, args, kwargs, site);
  const out: VObject = new Map();
  out.set("read", globs("read", read, site));
  out.set("write", globs("write", write, site));
  out.set("execute", globs("execute", execute, site));
  out.set("bash", mode("bash", bash, site));
  out.set("network", mode("network", network, site));
  return out;
}

function globs(key: string, v: Value | undefined, site: Site): Value {
  if (v === undefined) return [];
  const got = notStringList(v);
  if (got === null) return v;
  throw thrown(`perm(${key}=...) needs a list of glob strings, got ${got}`, site);
}

function mode(key: string, v: Value | undefined, site: Site): Value {
  if (v === undefined) return "deny";
  if (typeof v === "string" && PERM_MODES.includes(v)) return v;
  throw thrown(`perm(${key}=...) must be "allow", "deny" or "prompt", got ${typeof v === "string" ? JSON.stringify(v) : typeName(v)}`, site);
}

/** Longest list range() builds: far beyond any sensible program, well below what exhausts memory. */
export const RANGE_MAX = 50_000_000;

export function range(args: Value[], kwargs: Map<string, Value> | null, _it: Value, site: Site): Value {
  const [n] = bindArgs("range", SIGNATURES.range.params, 1, args, kwargs, site);
  if (typeof n !== "number" || !Number.isInteger(n)) {
    throw thrown(`range() needs a whole number, got ${typeName(n ?? null)}${typeof n === "number" ? ` ${n}` : ""}`, site);
  }
  if (n > RANGE_MAX) throw thrown(`range(${n}) is too large (at most ${RANGE_MAX})`, site);
  checkRoomForList(n, site);
  const out: number[] = new Array(Math.max(0, n));
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** Items of a list, fields of an object, characters (code points) of a string. */
export function len(args: Value[], kwargs: Map<string, Value> | null, _it: Value, site: Site): Value {
  const [x] = bindArgs("len", SIGNATURES.len.params, 1, args, kwargs, site);
  if (Array.isArray(x)) return x.length;
  if (x instanceof Map) return x.size;
  if (typeof x === "string") {
    let count = 0;
    for (const _ of x) count++;
    return count;
  }
  throw thrown(`len() needs a list, string or object, got ${typeName(x ?? null)}`, site);
}
