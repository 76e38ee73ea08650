// Argument binding shared by the builtins: positional then keyword, as for a user `def`, plus optional
// trailing parameters (`perm` defaults, `reduce`'s `init`), which a user `def` does not have.
import { isFunction, thrown, typeName, type CallEnv, type Site, type Value, type VFunction } from "../runtime/values.ts";
import { Interrupted, POLL_MASK } from "../runtime/abort.ts";

/**
 * Positional then keyword arguments onto `params`; `required` leading params must be given.
 * Missing optional params come back as `undefined`.
 */
export function bindArgs(
  fn: string,
  params: readonly string[],
  required: number,
  args: Value[],
  kwargs: Map<string, Value> | null,
  site: Site,
): (Value | undefined)[] {
  if (args.length > params.length) {
    throw thrown(`${fn}() takes at most ${params.length} positional argument${params.length === 1 ? "" : "s"} but ${args.length} were given`, site);
  }
  const out: (Value | undefined)[] = new Array(params.length);
  for (let i = 0; i < args.length; i++) out[i] = args[i];
  if (kwargs) {
    for (const [k, v] of kwargs) {
      const i = params.indexOf(k);
      if (i < 0) throw thrown(`${fn}() got an unknown keyword argument '${k}' (it takes ${params.join(", ")})`, site);
      if (out[i] !== undefined) throw thrown(`${fn}() got '${k}' twice`, site);
      out[i] = v;
    }
  }
  for (let i = 0; i < required; i++) {
    if (out[i] === undefined) throw thrown(`${fn}() is missing the argument '${params[i]}'`, site);
  }
  return out;
}

export function needList(v: Value | undefined, fn: string, what: string, site: Site): Value[] {
  if (Array.isArray(v)) return v;
  throw thrown(`${fn}() needs a list for '${what}', got ${typeName(v ?? null)}`, site);
}

export function needFunction(v: Value | undefined, fn: string, what: string, site: Site): VFunction {
  if (v !== undefined && isFunction(v)) return v;
  throw thrown(`${fn}() needs a function for '${what}', got ${typeName(v ?? null)}`, site);
}

/** Call a function value; sync functions are called directly so helpers over sync code never suspend. */
export function apply(f: VFunction, args: Value[], it: Value, site: Site, env: CallEnv | undefined): Value | Promise<Value> {
  if (!f.isAsync && f.callSync) return f.callSync(args, null, it, site, env);
  return f.call(args, null, it, site, env);
}

/** Poll for Ctrl-C every 1024 items in long helper loops. */
export function poll(i: number, env: CallEnv | undefined): void {
  if ((i & POLL_MASK) === POLL_MASK && env?.signal.aborted) throw new Interrupted();
}

