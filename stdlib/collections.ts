// map, filter, reduce: in order, fail fast on an error value, raises propagate (spec/language.md §15).
// Each stays synchronous while the callback does, and continues asynchronously from the first pending result.
import { isErrorValue, thrown, typeName, VvmRaise, type CallEnv, type Site, type Value, type VFunction } from "../runtime/values.ts";
import { apply, bindArgs, needFunction, needList, poll } from "./args.ts";
import { SIGNATURES } from "./signatures.ts";

export function map(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  const [items, fn] = bindArgs("map", SIGNATURES.map.params, 2, args, kwargs, site);
  const xs = needList(items, "map", "items", site);
  const f = needFunction(fn, "map", "f", site);
  return mapFrom("map", xs, f, 0, new Array(xs.length), it, site, env);
}

/** Shared with pmap's sequential path (`name` says which, in a traceback). */
export function mapFrom(name: string, xs: Value[], f: VFunction, start: number, out: Value[], it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  // a raise that ends an item says which one, for the traceback
  const ended = (err: unknown, i: number) => {
    if (err instanceof VvmRaise) err.step({ kind: "item", fn: name, index: i, count: xs.length, site });
    return err;
  };
  for (let i = start; i < xs.length; i++) {
    poll(i, env);
    let r: Value | Promise<Value>;
    try {
      r = apply(f, [xs[i] as Value], it, site, env);
    } catch (err) {
      throw ended(err, i);
    }
    if (r instanceof Promise)
      return r.then(
        (v) => (isErrorValue(v) ? v : ((out[i] = v), mapFrom(name, xs, f, i + 1, out, it, site, env))),
        (err: unknown) => {
          throw ended(err, i);
        },
      );
    if (isErrorValue(r)) return r;
    out[i] = r;
  }
  return out;
}

export function filter(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  const [items, fn] = bindArgs("filter", SIGNATURES.filter.params, 2, args, kwargs, site);
  const xs = needList(items, "filter", "items", site);
  const f = needFunction(fn, "filter", "pred", site);
  return filterFrom(xs, f, 0, [], it, site, env);
}

function filterFrom(xs: Value[], f: VFunction, start: number, kept: Value[], it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  for (let i = start; i < xs.length; i++) {
    poll(i, env);
    const r = apply(f, [xs[i] as Value], it, site, env);
    if (r instanceof Promise) {
      return r.then((v) => {
        const stop = keep(v, xs[i] as Value, kept, site);
        return stop ?? filterFrom(xs, f, i + 1, kept, it, site, env);
      });
    }
    const stop = keep(r, xs[i] as Value, kept, site);
    if (stop) return stop;
  }
  return kept;
}

/** Returns the error value that ends the filter, or undefined to go on. */
function keep(r: Value, item: Value, kept: Value[], site: Site): Value | undefined {
  if (isErrorValue(r)) return r;
  if (r === true) kept.push(item);
  else if (r !== false) throw thrown(`filter()'s predicate must return true or false, got ${typeName(r)}`, site);
  return undefined;
}

export function reduce(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  const [items, fn, init] = bindArgs("reduce", SIGNATURES.reduce.params, 2, args, kwargs, site);
  const xs = needList(items, "reduce", "items", site);
  const f = needFunction(fn, "reduce", "f", site);
  if (init === undefined) {
    if (xs.length === 0) throw thrown("reduce() of an empty list needs init=", site);
    return reduceFrom(xs, f, 1, xs[0] as Value, it, site, env);
  }
  return reduceFrom(xs, f, 0, init, it, site, env);
}

function reduceFrom(xs: Value[], f: VFunction, start: number, acc: Value, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  for (let i = start; i < xs.length; i++) {
    poll(i, env);
    const r = apply(f, [acc, xs[i] as Value], it, site, env);
    if (r instanceof Promise) return r.then((v) => (isErrorValue(v) ? v : reduceFrom(xs, f, i + 1, v, it, site, env)));
    if (isErrorValue(r)) return r;
    acc = r;
  }
  return acc;
}
