// The standard library (spec/language.md §15): in scope in every module, shadowed by module and local names.
import type { CallEnv, Site, Value, VFunction } from "../runtime/values.ts";
import { len, pack, perm, range } from "./basics.ts";
import { filter, map, reduce } from "./collections.ts";
import { makePmap } from "./pmap.ts";
import type { ProgressPort } from "../runtime/progress-port.ts";
import { refine } from "./refine.ts";
import { json } from "./json.ts";
import type { StdlibName } from "./names.ts";
import { SIGNATURES } from "./signatures.ts";

type Impl = (args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv) => Value | Promise<Value>;

const FUNCTION_PARAMS = new Map(
  Object.entries(SIGNATURES).map(([name, s]) => [name, { positions: s.fnParams, names: s.fnParams.map((i) => s.params[i] as string) }]),
);

/**
 * Which parameters of a builtin take functions (by position and name). A call whose function arguments
 * are all known not to suspend cannot suspend either; the interpreter uses this to stay synchronous.
 */
export function functionParams(name: string): { positions: number[]; names: string[] } | null {
  return FUNCTION_PARAMS.get(name) ?? null;
}

/** The builtins for one run (pmap's concurrency and progress port come from the run). */
export function createStdlib(opts: { concurrency: number; progress?: ProgressPort }): Map<string, VFunction> {
  const impls: Record<StdlibName, Impl> = { pack, perm, range, len, map, pmap: makePmap(opts.concurrency, opts.progress), filter, reduce, refine, json };
  const out = new Map<string, VFunction>();
  for (const [name, s] of Object.entries(SIGNATURES)) {
    out.set(name, {
      type: "function",
      name,
      params: s.params,
      isAsync: s.fnParams.length > 0,
      call: impls[name as StdlibName],
    });
  }
  return out;
}
