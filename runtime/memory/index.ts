// Persistent agent memory: digest.md + ledger.jsonl + meta.json per (scope, key), behind the
// MemoryPort the call layer uses. This file is the store: it resolves a binding, checks and locks the
// directory, and hands the call a Session (session.ts), which is the transaction. spec/memory.md
// describes the behaviour.
import type { MemoryPort, MemoryProvenance, MemorySession } from "../memory-port.ts";
import { realish } from "../../src/resolve/glob-prefix.ts";
import { relativeUnder } from "../../src/resolve/glob-prefix.ts";
import { makeError, type Value, type VObject } from "../values.ts";
import { nodeFs, type MemoryFs } from "./fsio.ts";
import { loadIndexKey } from "./index-key.ts";
import { BindingError, notAFolder, resolveBinding, verifyContainment, type MemoryLocation } from "./keys.ts";
import type { FactIndex } from "./fact-index.ts";
import type { TailCache, ToolProvenance } from "./ledger.ts";
import { acquire, DEFAULT_STALE_MS, holderName, type AcquireResult, type Holder } from "./lock.ts";
import { extractBlocks } from "./patch.ts";
import { preloadSecretRules } from "./secrets.ts";
import { code, Refused, Session, type StoreShared } from "./session.ts";
import { budgetChars } from "./state.ts";

export interface MemoryStoreOptions {
  /** directory of the entry program: `project` scope and relative `path`s resolve against it */
  entryDir: string;
  homeDir: string;
  /** longest wait for a key's lock before the call returns `error(kind="locked")` */
  lockTimeoutMs: number;
  /** token budget for retained facts in the Memory Context */
  budgetTokens: number;
  warn: (message: string) => void;
  /** how a program's path appears in warnings (the CLI: relative to the working directory) */
  showPath?: (file: string) => string;
  /** age after which a lock left by a dead process is taken over (default 10 s, at least 2 s) */
  staleMs?: number;
  /** file layer; tests substitute one that fails */
  fs?: MemoryFs;
  /**
   * a folder every memory must lie in (its real path; `vvm test`: the test's own folder, which holds its copy
   * of the program and its HOME), whatever a binding computes; one elsewhere is refused before anything is made
   */
  confine?: string;
}

export type MemoryStore = MemoryPort & { close(): Promise<void> };

export const label = (loc: MemoryLocation) => `memory ${loc.scope}:${JSON.stringify(loc.key)}`;

/** "held by pid 123 on host since 12:03:01", as far as the lock file says. */
export function heldBy(h: Holder | null): string {
  if (h === null) return "holder unknown";
  const since = h.since !== null && !Number.isNaN(Date.parse(h.since)) ? ` since ${new Date(h.since).toLocaleTimeString("en-GB")}` : "";
  return `held by ${holderName(h)}${since}`;
}

/** What a wait for the lock says after a second, after the memory's label. */
export const waitingLine = (h: Holder | null) => `waiting for the memory lock (${heldBy(h)})`;

/** A wait for a memory's lock that did not get it: `gone`, the directory was removed meanwhile (`vvm memory rm`). */
export type LockFailure = { kind: "locked" | "rejected" | "gone"; message: string };

/** `got`, a failed wait for `loc`'s lock, as calls and the `vvm memory` commands say it. */
export function lockFailure(loc: MemoryLocation, got: Exclude<AcquireResult, { ok: true }>, timeoutMs: number): LockFailure {
  switch (got.reason) {
    case "timeout":
      return { kind: "locked", message: `${label(loc)} is in use by another call or process (${heldBy(got.holder)}); gave up after waiting ${timeoutMs} ms (--lock-timeout)` };
    case "aborted":
      return { kind: "locked", message: `${label(loc)}: interrupted while waiting for its lock` };
    case "error":
      if ((got.error as NodeJS.ErrnoException).code === "ENOENT") return { kind: "gone", message: `${label(loc)} was removed while waiting for its lock` };
      return { kind: "rejected", message: `${label(loc)}: cannot lock ${loc.dir} (${code(got.error)})` };
    default: {
      const never: never = got;
      return never;
    }
  }
}

/** What the sessions of one store (or one `vvm memory` command) share. */
export function storeShared(fs: MemoryFs, budgetTokens: number, homeDir: string, warn: (message: string) => void, showPath: (file: string) => string = String): StoreShared {
  const reported = new Set<string>();
  let key: Buffer | null = null;
  const shared: StoreShared = {
    fs,
    // read on the first recall that needs it, and made by the first that writes an index
    indexKey: (create) => (key ??= loadIndexKey(homeDir, create)),
    retainChars: budgetChars(budgetTokens),
    tails: new Map<string, TailCache>(),
    facts: new Map<string, FactIndex>(),
    replacedChecked: new Map<string, Map<string, string>>(),
    sessions: new Set<Session>(),
    warn(loc, prov, message) {
      const where = prov ? `${showPath(prov.site.path)}:${prov.site.span.line}: ` : "";
      warn(`${where}${label(loc)}: ${message}`);
    },
    warnOnce(loc, what, message) {
      const id = `${loc.dir}\0${what}`;
      if (reported.has(id)) return;
      reported.add(id);
      shared.warn(loc, null, message);
    },
  };
  return shared;
}

/** `gone`: the memory's directory was removed (`vvm memory rm`) while the lock was waited for. */
export type Opened = { ok: true; session: Session } | ({ ok: false } & LockFailure);

/**
 * Take the lock of an existing directory (`realDir`: its checked real path) and load a session on it:
 * the recovery of §7 and the Memory Context. Used by calls in `continue` and `dry_run` and by the
 * `vvm memory` commands that write (maintain.ts), so all of them wait for and recover a memory alike.
 * `beforeLoad` runs once the lock is held, before the recovery (`doctor --fix` looks at the memory then);
 * `onWait`, told who holds the lock after a second of waiting, says so in place of the store's warning.
 */
export async function openLocked(
  shared: StoreShared,
  loc: MemoryLocation,
  realDir: string,
  actor: MemoryProvenance | ToolProvenance,
  o: { lockTimeoutMs: number; staleMs: number; signal: AbortSignal; query: string; beforeLoad?: () => Promise<void>; onWait?: (holder: Holder | null) => void },
): Promise<Opened> {
  const call = "tool" in actor ? null : actor;
  const waitStarted = performance.now();
  const got = await acquire(loc.dir, o.lockTimeoutMs, o.staleMs, o.signal, o.onWait ?? ((holder) => shared.warn(loc, call, waitingLine(holder))));
  if (!got.ok) return { ok: false, ...lockFailure(loc, got, o.lockTimeoutMs) };
  const session = new Session(shared, loc, actor, got.lock, realDir, o.query);
  session.report.lock_wait_ms = Math.round(performance.now() - waitStarted);
  try {
    await o.beforeLoad?.();
    await session.load();
  } catch (err) {
    await got.lock.release();
    if (err instanceof Refused) return { ok: false, kind: "rejected", message: `${label(loc)}: ${err.message}` };
    return { ok: false, kind: "rejected", message: `${label(loc)}: cannot load memory (${code(err)})` };
  }
  shared.sessions.add(session);
  return { ok: true, session };
}

/** Whether `dir` lies inside `folder`, links in its existing part followed (a link there leads where `mkdir -p` would). */
function confined(dir: string, folder: string): boolean {
  let real: string;
  try {
    real = realish(dir);
  } catch {
    return false;
  }
  return relativeUnder(folder, real) !== null;
}

export function createMemoryStore(opts: MemoryStoreOptions): MemoryStore {
  const fs = opts.fs ?? nodeFs;
  const staleMs = Math.max(2000, opts.staleMs ?? DEFAULT_STALE_MS);
  const shared = storeShared(fs, opts.budgetTokens, opts.homeDir, opts.warn, opts.showPath);

  const fresh = (loc: MemoryLocation): MemorySession => ({
    context: null,
    report: { scope: loc.scope, key: loc.key, mode: "fresh", lock_wait_ms: 0, facts_shown: 0, facts_hidden: 0, context_chars: 0, result: "none", seq: null, reason: null },
    complete: async (reply) => extractBlocks(reply).visible,
    release: async () => {},
  });

  return {
    async open(memory: Value, prov: MemoryProvenance, signal: AbortSignal, query = ""): Promise<MemorySession | VObject> {
      const { mode } = prov;
      let loc: MemoryLocation;
      try {
        loc = resolveBinding(memory, opts.entryDir, opts.homeDir);
      } catch (err) {
        if (err instanceof BindingError) return makeError("rejected", `invalid memory binding on agent ${prov.agentName}: ${err.message}`);
        throw err;
      }
      if (mode === "fresh") return fresh(loc);
      if (opts.confine !== undefined && !confined(loc.dir, opts.confine)) {
        return makeError("rejected", `${label(loc)}: ${loc.dir} is outside ${opts.confine}, the only place this run may keep memory (vvm test writes only inside its copy of the program: give a path relative to the program, inside its folder)`);
      }
      if (mode === "continue") preloadSecretRules();
      // a memory removed while the lock was waited for (`vvm memory rm`) is then one that does not exist:
      // a continue call starts it anew, a dry_run reads nothing
      for (let attempt = 1; ; attempt++) {
        let realDir: string | null;
        try {
          // a project's root is checked before anything is made through it; mkdir -p succeeds on an
          // existing symlink, so containment is checked again once the path exists
          realDir = await verifyContainment(loc);
          if (realDir === null) {
            if (mode !== "continue") {
              // dry_run on a memory that does not exist yet: nothing to read, nothing to lock
              const session = new Session(shared, loc, prov, null, null, query);
              await session.load();
              return session;
            }
            await fs.mkdirp(loc.dir);
            realDir = await verifyContainment(loc);
          }
        } catch (err) {
          if (err instanceof BindingError) return makeError("rejected", `${label(loc)}: ${err.message}`);
          if ((err as NodeJS.ErrnoException).code === "ENOTDIR") return makeError("rejected", `${label(loc)}: ${notAFolder(loc.root)}`);
          return makeError("rejected", `${label(loc)}: cannot use ${loc.dir} (${code(err)})`);
        }
        if (realDir === null) return makeError("rejected", `${label(loc)}: the memory directory was removed before it could be locked`);
        const opened = await openLocked(shared, loc, realDir, prov, { lockTimeoutMs: opts.lockTimeoutMs, staleMs, signal, query });
        if (opened.ok) return opened.session;
        if (opened.kind !== "gone" || attempt >= 3) return makeError(opened.kind === "gone" ? "rejected" : opened.kind, opened.message);
      }
    },
    async close() {
      for (const s of [...shared.sessions]) await s.release();
    },
  };
}
