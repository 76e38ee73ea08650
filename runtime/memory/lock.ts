// One writer per memory directory: an async mutex per directory inside this process (proper-lockfile
// has no in-process queue), then proper-lockfile's `lock` directory across processes.
import { Mutex } from "async-mutex";
import lockfile from "proper-lockfile";
import path from "node:path";
import { sleep } from "../abort.ts";

export const DEFAULT_STALE_MS = 10_000;

export interface HeldLock {
  /** set when proper-lockfile reports the lock compromised; re-checked right before every write */
  readonly compromised: () => string | null;
  release(): Promise<void>;
}

export type AcquireResult = { ok: true; lock: HeldLock } | { ok: false; reason: "timeout" | "aborted" } | { ok: false; reason: "error"; error: Error };

const mutexes = new Map<string, { mutex: Mutex; users: number }>();

/** Wait for the mutex until `deadline`; a late grant after giving up is released at once. */
async function acquireMutex(dir: string, deadline: number, signal: AbortSignal): Promise<(() => void) | "timeout" | "aborted"> {
  let slot = mutexes.get(dir);
  if (!slot) mutexes.set(dir, (slot = { mutex: new Mutex(), users: 0 }));
  slot.users++;
  const s = slot;
  const forget = () => {
    if (--s.users === 0 && mutexes.get(dir) === s) mutexes.delete(dir);
  };
  if (signal.aborted) {
    forget();
    return "aborted";
  }
  if (!s.mutex.isLocked()) {
    // free: granted at once (async-mutex dispatches synchronously), so no timer, no abort listener
    const release = await s.mutex.acquire();
    return () => {
      release();
      forget();
    };
  }
  let gaveUp = false;
  const granted = s.mutex.acquire().then((release) => {
    if (gaveUp) {
      release();
      forget();
      return null;
    }
    return () => {
      release();
      forget();
    };
  });
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  // a free mutex grants in a microtask, before even a 0 ms timer fires
  const outcome = await Promise.race([
    granted,
    new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), Math.max(0, deadline - Date.now())))),
    new Promise<"aborted">((r) => {
      onAbort = () => r("aborted");
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }),
  ]);
  clearTimeout(timer);
  if (onAbort) signal.removeEventListener("abort", onAbort);
  if (typeof outcome === "function") return outcome;
  gaveUp = true;
  return outcome === null ? "timeout" : outcome;
}

/**
 * Take the directory's lock, waiting with backoff until `timeoutMs` has passed. The directory must
 * exist. A lock left by a killed process is reclaimed once its mtime is older than `staleMs`.
 */
export async function acquire(dir: string, timeoutMs: number, staleMs: number, signal: AbortSignal): Promise<AcquireResult> {
  const deadline = Date.now() + timeoutMs;
  const releaseMutex = await acquireMutex(dir, deadline, signal);
  if (releaseMutex === "timeout" || releaseMutex === "aborted") return { ok: false, reason: releaseMutex };
  let compromised: string | null = null;
  const lockOptions = {
    lockfilePath: path.join(dir, "lock"),
    realpath: false,
    stale: staleMs,
    update: Math.max(1000, Math.floor(staleMs / 4)),
    retries: 0,
    // the default throws from a timer and kills the process; record it and refuse to write instead
    onCompromised: (err: Error) => {
      compromised = err.message;
    },
  };
  let wait = 5;
  for (;;) {
    try {
      // The sync API: mkdir/stat/utimes/rmdir on one tiny directory take microseconds, far less than
      // thread-pool round trips on a busy machine; waiting between tries stays asynchronous (below).
      const releaseFile = lockfile.lockSync(dir, lockOptions);
      let released = false;
      return {
        ok: true,
        lock: {
          compromised: () => compromised,
          async release() {
            if (released) return;
            released = true;
            try {
              releaseFile(); // synchronous, like the lock
            } catch {
              // already compromised or removed with the directory: nothing left to release
            } finally {
              releaseMutex();
            }
          },
        },
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ELOCKED") {
        releaseMutex();
        return { ok: false, reason: "error", error: err as Error };
      }
    }
    const left = deadline - Date.now();
    if (signal.aborted) {
      releaseMutex();
      return { ok: false, reason: "aborted" };
    }
    if (left <= 0) {
      releaseMutex();
      return { ok: false, reason: "timeout" };
    }
    await sleep(Math.min(left, wait * (0.5 + Math.random())), signal);
    wait = Math.min(wait * 1.6, 250);
  }
}
