// refine(seed, max, done, step): the library loop of spec/language.md §15, stepping synchronously while it can.
import { thrown, typeName, type CallEnv, type Site, type Value, type VFunction } from "../runtime/values.ts";
import { apply, bindArgs, needFunction, poll } from "./args.ts";
import { SIGNATURES } from "./signatures.ts";
import { RANGE_MAX } from "./basics.ts";


export function refine(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  const [seed, max, doneFn, stepFn] = bindArgs("refine", SIGNATURES.refine.params, 4, args, kwargs, site);
  if (typeof max !== "number" || !Number.isInteger(max) || max < 0) {
    throw thrown(`refine() needs a whole number of at least 0 for 'max', got ${typeName(max ?? null)}${typeof max === "number" ? ` ${max}` : ""}`, site);
  }
  // the reference loop is `for i in range(max)`: past range's cap it raises, and a loop of a quadrillion steps
  // through functions that cannot suspend never let Ctrl-C in (not even the second one, which kills vvm)
  if (max > RANGE_MAX) throw thrown(`refine() max ${max} is too large (at most ${RANGE_MAX}, as range())`, site);
  const done = needFunction(doneFn, "refine", "done", site);
  const step = needFunction(stepFn, "refine", "step", site);
  return loop(seed as Value, 0, max, done, step, it, site, env);
}

function loop(current: Value, start: number, max: number, done: VFunction, step: VFunction, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  for (let i = start; i < max; i++) {
    poll(i, env);
    const d = apply(done, [current, i], it, site, env);
    if (d instanceof Promise) {
      const cur = current;
      return d.then((b) => (isDone(b, site) ? cur : stepThen(cur, i, max, done, step, it, site, env)));
    }
    if (isDone(d, site)) return current;
    const next = apply(step, [current, i], it, site, env);
    if (next instanceof Promise) return next.then((v) => loop(v, i + 1, max, done, step, it, site, env));
    current = next;
  }
  return current;
}

function stepThen(current: Value, i: number, max: number, done: VFunction, step: VFunction, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
  const next = apply(step, [current, i], it, site, env);
  if (next instanceof Promise) return next.then((v) => loop(v, i + 1, max, done, step, it, site, env));
  return loop(next, i + 1, max, done, step, it, site, env);
}

// `done` plays the role of an `if` condition in the reference loop: booleans only.
function isDone(v: Value, site: Site): boolean {
  if (v === true || v === false) return v;
  throw thrown(`refine()'s done function must return true or false, got ${typeName(v)}`, site);
}
