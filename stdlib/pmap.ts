// pmap(items, f): map with up to `concurrency` calls of f in flight. Results keep input order; the first
// failure in input order (a raise or an error value) wins, and every later item is cancelled through its
// own AbortController (in-flight agent calls receive the signal; items not started yet never start).
import { isErrorValue, VvmRaise, type CallEnv, type Site, type Value, type VFunction } from "../runtime/values.ts";
import { Interrupted, ROOT_ENV } from "../runtime/abort.ts";
import { apply, bindArgs, needFunction, needList } from "./args.ts";
import { mapFrom } from "./collections.ts";
import { SIGNATURES } from "./signatures.ts";
import type { FanOutProgress, ProgressPort } from "../runtime/progress-port.ts";


export function makePmap(concurrency: number, progress?: ProgressPort) {
  return function pmap(args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv): Value | Promise<Value> {
    const [items, fn] = bindArgs("pmap", SIGNATURES.pmap.params, 2, args, kwargs, site);
    const xs = needList(items, "pmap", "items", site);
    const f = needFunction(fn, "pmap", "f", site);
    // A function that can never suspend gains nothing from overlapping: run it like map.
    if (!f.isAsync) return mapFrom("pmap", xs, f, 0, new Array(xs.length), it, site, env);
    return concurrent(xs, f, Math.max(1, concurrency), it, site, env ?? ROOT_ENV, progress?.fanOut(xs.length));
  };
}

async function concurrent(xs: Value[], f: VFunction, limit: number, it: Value, site: Site, env: CallEnv, progress: FanOutProgress | undefined): Promise<Value> {
  const n = xs.length;
  const results: Value[] = new Array(n);
  const raised: unknown[] = new Array(n);
  const controllers: (AbortController | undefined)[] = new Array(n);
  let firstFailure = n;
  let next = 0;

  const fail = (i: number) => {
    if (i >= firstFailure) return;
    firstFailure = i;
    for (let j = i + 1; j < n; j++) controllers[j]?.abort();
  };
  const onAbort = () => controllers.forEach((c) => c?.abort());
  env.signal.addEventListener("abort", onAbort);

  const worker = async () => {
    while (next < n) {
      const i = next++;
      if (i > firstFailure) continue; // cannot win any more: never started
      const c = new AbortController();
      controllers[i] = c;
      if (env.signal.aborted) c.abort();
      try {
        let r = apply(f, [xs[i] as Value], it, site, { depth: env.depth, signal: c.signal });
        if (r instanceof Promise) r = await r;
        results[i] = r;
        if (isErrorValue(r)) fail(i);
      } catch (err) {
        if (err instanceof VvmRaise) err.step({ kind: "item", fn: "pmap", index: i, count: n, site });
        raised[i] = err;
        fail(i);
      }
      progress?.itemDone();
    }
  };
  try {
    const workers: Promise<void>[] = [];
    for (let w = 0; w < Math.min(limit, n); w++) workers.push(worker());
    await Promise.all(workers);
  } finally {
    env.signal.removeEventListener("abort", onAbort);
    progress?.end();
  }
  if (env.signal.aborted) throw new Interrupted();
  if (firstFailure < n) {
    if (raised[firstFailure] !== undefined) throw raised[firstFailure];
    return results[firstFailure] as Value;
  }
  return results;
}
