// One writer per memory directory: an async mutex per directory inside this process, then a lock file
// across processes. The lock file `lock` is created exclusively (O_EXCL, never through a link) and says
// who holds it; its mtime is refreshed while it is held. It is taken over when its holder is a process
// of this machine that no longer runs, or when its mtime is older than the stale time (a holder on
// another machine, or a reused pid). This replaces proper-lockfile: its lock is a directory, and a
// mkdir + rmdir pair costs ~120 µs on ext4 here against ~37 µs for creating and unlinking a file, and
// its synchronous API probes the file system's mtime precision on every lock.
import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, futimesSync, lstatSync, openSync, readSync, renameSync, rmdirSync, unlinkSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Mutex } from "async-mutex";
import { sleep } from "../abort.ts";

export const DEFAULT_STALE_MS = 10_000;

export interface HeldLock {
  /** why the lock is no longer ours (removed, or taken over by another process), or null; checked right before every write */
  readonly compromised: () => string | null;
  release(): Promise<void>;
}

/** Who holds a lock, from its file; null fields when the file says nothing usable. */
export interface Holder {
  pid: number | null;
  host: string | null;
  since: string | null;
}

/** "pid 123 on host", as far as the lock file says. */
export function holderName(h: Holder): string {
  return `${h.pid !== null ? `pid ${h.pid}` : "an unknown process"}${h.host !== null ? ` on ${h.host}` : ""}`;
}

export type AcquireResult =
  | { ok: true; lock: HeldLock }
  | { ok: false; reason: "timeout" | "aborted"; holder: Holder | null }
  | { ok: false; reason: "error"; error: Error };

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

const errno = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code;

/** The holder a lock file names; a lock directory of an earlier release, a link or junk names nobody. */
export function readHolder(file: string): Holder | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (!fstatSync(fd).isFile()) return null;
    // a holder record is a short line: never read more of whatever was planted there
    const buf = Buffer.alloc(1000);
    const h = JSON.parse(buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString("utf8")) as Record<string, unknown>;
    return {
      pid: Number.isSafeInteger(h.pid) && (h.pid as number) > 0 ? (h.pid as number) : null,
      host: typeof h.host === "string" ? h.host : null,
      since: typeof h.since === "string" ? h.since : null,
    };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** True only when the holder is a process of this machine that has exited. */
function holderGone(h: Holder | null): boolean {
  if (h?.pid == null || h.host !== os.hostname() || h.pid === process.pid) return false;
  try {
    process.kill(h.pid, 0);
    return false;
  } catch (err) {
    return errno(err) === "ESRCH";
  }
}

/**
 * What a lock file (or whatever stands at `lock`) says, for `vvm memory doctor`: its holder, and whether
 * a call would take it over now (its holder is a process of this machine that has exited, or it was not
 * refreshed for `staleMs`). Null when there is no lock.
 */
export function judgeLock(file: string, staleMs: number, now = Date.now()): { holder: Holder | null; stale: "gone" | "old" | null } | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(file);
  } catch (err) {
    if (errno(err) === "ENOENT") return null;
    throw err;
  }
  const holder = readHolder(file);
  return { holder, stale: holderGone(holder) ? "gone" : now - st.mtimeMs > staleMs ? "old" : null };
}

/**
 * Move a stale lock out of the way (a rename, so of two processes that both judged it stale only one
 * moves it), then delete it. Whatever stands at `lock` goes: a file, a link (never followed), or the
 * directory an earlier release used.
 */
function takeOver(file: string): void {
  const aside = `${file}.${randomBytes(9).toString("hex")}.stale`;
  try {
    renameSync(file, aside);
  } catch (err) {
    if (errno(err) === "ENOENT") return; // someone else moved it first
    throw err;
  }
  try {
    unlinkSync(aside);
  } catch (err) {
    if (errno(err) !== "EISDIR" && errno(err) !== "EPERM") throw err;
    rmdirSync(aside);
  }
}

/** Create the lock file, or null when it exists. */
function create(file: string, staleMs: number): HeldLock | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  } catch (err) {
    if (errno(err) === "EEXIST") return null;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() }) + "\n");
  } catch {
    // a full disk: the empty file is still the lock, its holder unknown (judged stale by its mtime only)
  }
  const ino = fstatSync(fd).ino;
  // keep the mtime fresh while held, so nobody judges a slow call's lock stale
  const refresh = setInterval(
    () => {
      try {
        const now = new Date();
        futimesSync(fd, now, now);
      } catch {
        // the next compromised() check says what happened
      }
    },
    Math.max(500, Math.floor(staleMs / 4)),
  );
  refresh.unref();
  const mine = () => {
    try {
      return lstatSync(file).ino === ino;
    } catch {
      return false;
    }
  };
  let released = false;
  return {
    compromised: () => (mine() ? null : "the lock file was removed or taken over by another process"),
    async release() {
      if (released) return;
      released = true;
      clearInterval(refresh);
      try {
        if (mine()) unlinkSync(file);
      } catch {
        // removed with the directory: nothing left to release
      } finally {
        closeSync(fd);
      }
    },
  };
}

/**
 * Take the directory's lock, waiting with backoff until `timeoutMs` has passed. The directory must
 * exist. `onWait` is told once, after a second of waiting, who holds it.
 */
export async function acquire(dir: string, timeoutMs: number, staleMs: number, signal: AbortSignal, onWait?: (holder: Holder | null) => void): Promise<AcquireResult> {
  const t0 = Date.now();
  const deadline = t0 + timeoutMs;
  const file = path.join(dir, "lock");
  const releaseMutex = await acquireMutex(dir, deadline, signal);
  // another call of this process holds it: its lock file says so
  if (releaseMutex === "timeout" || releaseMutex === "aborted") return { ok: false, reason: releaseMutex, holder: readHolder(file) };
  let wait = 5;
  let told = false;
  for (;;) {
    let holder: Holder | null = null;
    try {
      const held = create(file, staleMs);
      if (held !== null) {
        return {
          ok: true,
          lock: {
            compromised: held.compromised,
            async release() {
              await held.release();
              releaseMutex();
            },
          },
        };
      }
      holder = readHolder(file);
      let st: ReturnType<typeof lstatSync> | null = null;
      try {
        st = lstatSync(file);
      } catch (err) {
        if (errno(err) !== "ENOENT") throw err;
      }
      if (st === null) continue; // released between the two looks: try again at once
      if (holderGone(holder) || Date.now() - st.mtimeMs > staleMs) {
        takeOver(file);
        continue;
      }
    } catch (err) {
      // out of file descriptors is usually passing (see fsio.ts): wait like for a busy lock
      if (errno(err) !== "EMFILE" && errno(err) !== "ENFILE") {
        releaseMutex();
        return { ok: false, reason: "error", error: err as Error };
      }
    }
    if (!told && onWait && Date.now() - t0 >= 1000) {
      told = true;
      onWait(holder);
    }
    const left = deadline - Date.now();
    if (signal.aborted || left <= 0) {
      releaseMutex();
      return { ok: false, reason: signal.aborted ? "aborted" : "timeout", holder };
    }
    await sleep(Math.min(left, wait * (0.5 + Math.random())), signal);
    wait = Math.min(wait * 1.6, 250);
  }
}
