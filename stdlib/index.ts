// The standard library (LANGUAGE.md §12): in scope in every module, shadowed by module and local names.
import type { CallEnv, Site, Value, VFunction } from "../runtime/values.ts";
import { len, pack, perm, range } from "./basics.ts";
import { filter, map, reduce } from "./collections.ts";
import { makePmap } from "./pmap.ts";
import { refine } from "./refine.ts";
import { isStdlibName, type StdlibName } from "../src/resolve/stdlib.ts";

type Impl = (args: Value[], kwargs: Map<string, Value> | null, it: Value, site: Site, env?: CallEnv) => Value | Promise<Value>;

interface Spec {
  params: string[];
  impl: Impl;
  /** the parameters that take functions: the call can only suspend through them */
  fnParams: number[];
}

// Keyed by the validator's name list, so the two cannot disagree.
function specs(concurrency: number): Record<StdlibName, Spec> {
  return {
    pack: { params: [], impl: pack, fnParams: [] },
    perm: { params: ["read", "write", "execute", "bash", "network"], impl: perm, fnParams: [] },
    range: { params: ["n"], impl: range, fnParams: [] },
    len: { params: ["x"], impl: len, fnParams: [] },
    map: { params: ["items", "f"], impl: map, fnParams: [1] },
    pmap: { params: ["items", "f"], impl: makePmap(concurrency), fnParams: [1] },
    filter: { params: ["items", "pred"], impl: filter, fnParams: [1] },
    reduce: { params: ["items", "f", "init"], impl: reduce, fnParams: [1] },
    refine: { params: ["seed", "max", "done", "step"], impl: refine, fnParams: [2, 3] },
  };
}

/**
 * Which parameters of a builtin take functions (by position and name). A call whose function arguments
 * are all known not to suspend cannot suspend either; the interpreter uses this to stay synchronous.
 */
export function functionParams(name: string): { positions: number[]; names: string[] } | null {
  if (!isStdlibName(name)) return null;
  const s = specs(1)[name];
  return { positions: s.fnParams, names: s.fnParams.map((i) => s.params[i] as string) };
}

/** The builtins for one run (pmap's concurrency comes from the run). */
export function createStdlib(opts: { concurrency: number }): Map<string, VFunction> {
  const out = new Map<string, VFunction>();
  for (const [name, s] of Object.entries(specs(opts.concurrency))) {
    const impl = s.impl;
    out.set(name, {
      type: "function",
      name,
      params: s.params,
      isAsync: s.fnParams.length > 0,
      call: impl,
    });
  }
  return out;
}
