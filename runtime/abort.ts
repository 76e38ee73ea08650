// Waiting that gives way to cancellation (pmap siblings failing, Ctrl-C, an attempt's deadline).

/** Resolves true after `ms`, or false as soon as `signal` aborts (at once if it already has). */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
