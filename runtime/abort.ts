// Cancellation (pmap siblings failing, Ctrl-C, an attempt's deadline): the signal that unwinds a run,
// how often loops look for it, and waiting that gives way to it. Shared by the interpreter and stdlib.
import type { CallEnv } from "./values.ts";
import { MAX_DURATION_MS } from "./duration.ts";

/** Ctrl-C (or a cancelled pmap sibling): unwinds everything; `except` never sees it and `finally` does not run. */
export class Interrupted extends Error {
  constructor() {
    super("interrupted");
    this.name = "Interrupted";
  }
}

/** Loops poll the abort signal once per this many iterations (a power of two minus one, used as a mask). */
export const POLL_MASK = 1023;

/** The environment of a call made from outside any VVM frame: depth 0, never aborted. */
export const ROOT_ENV: CallEnv = { depth: 0, signal: new AbortController().signal };

/** Resolves true after `ms`, or false as soon as `signal` aborts (at once if it already has). */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    // a longer timer would fire at once (with a TimeoutOverflowWarning on stderr): held to the longest one
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, Math.min(ms, MAX_DURATION_MS));
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
