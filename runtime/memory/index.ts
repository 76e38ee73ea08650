// Persistent agent memory: digest.md + ledger.jsonl + meta.json per (scope, key), behind the
// MemoryPort the call layer uses. This file is the store: it resolves a binding, checks and locks the
// directory, and hands the call a Session (session.ts), which is the transaction. spec/memory.md
// describes the behaviour.
import type { MemoryPort, MemoryProvenance, MemorySession } from "../memory-port.ts";
import { makeError, type Value, type VObject } from "../values.ts";
import { nodeFs, type MemoryFs } from "./fsio.ts";
import { BindingError, resolveBinding, verifyContainment, type MemoryLocation } from "./keys.ts";
import type { FactIndex } from "./fact-index.ts";
import type { TailCache } from "./ledger.ts";
import { acquire, DEFAULT_STALE_MS, type Holder } from "./lock.ts";
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
}

export type MemoryStore = MemoryPort & { close(): Promise<void> };

const label = (loc: MemoryLocation) => `memory ${loc.scope}:${JSON.stringify(loc.key)}`;

/** "held by pid 123 on host since 12:03:01", as far as the lock file says. */
function heldBy(h: Holder | null): string {
  if (h === null) return "holder unknown";
  const since = h.since !== null && !Number.isNaN(Date.parse(h.since)) ? ` since ${new Date(h.since).toLocaleTimeString("en-GB")}` : "";
  return `held by ${h.pid !== null ? `pid ${h.pid}` : "an unknown process"}${h.host !== null ? ` on ${h.host}` : ""}${since}`;
}

export function createMemoryStore(opts: MemoryStoreOptions): MemoryStore {
  const fs = opts.fs ?? nodeFs;
  const staleMs = Math.max(2000, opts.staleMs ?? DEFAULT_STALE_MS);
  const reported = new Set<string>();
  const shared: StoreShared = {
    fs,
    retainChars: budgetChars(opts.budgetTokens),
    tails: new Map<string, TailCache>(),
    facts: new Map<string, FactIndex>(),
    sessions: new Set<Session>(),
    warn(loc, prov, message) {
      const where = prov ? `${(opts.showPath ?? String)(prov.site.path)}:${prov.site.span.line}: ` : "";
      opts.warn(`${where}${label(loc)}: ${message}`);
    },
    warnOnce(loc, what, message) {
      const id = `${loc.dir}\0${what}`;
      if (reported.has(id)) return;
      reported.add(id);
      shared.warn(loc, null, message);
    },
  };

  const fresh = (): MemorySession => ({
    context: null,
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
      if (mode === "fresh") return fresh();
      if (mode === "continue") preloadSecretRules();
      let realDir: string | null;
      try {
        // mkdir -p succeeds on an existing symlink, so containment is checked once the path exists
        if (mode === "continue") await fs.mkdirp(loc.dir);
        else if ((await fs.size(loc.dir)) === null) {
          // dry_run on a memory that does not exist yet: nothing to read, nothing to lock
          const session = new Session(shared, loc, prov, null, null, query);
          await session.load();
          return session;
        }
        realDir = await verifyContainment(loc);
      } catch (err) {
        if (err instanceof BindingError) return makeError("rejected", `${label(loc)}: ${err.message}`);
        return makeError("rejected", `${label(loc)}: cannot use ${loc.dir} (${code(err)})`);
      }
      const got = await acquire(loc.dir, opts.lockTimeoutMs, staleMs, signal, (holder) => shared.warn(loc, prov, `waiting for the memory lock (${heldBy(holder)})`));
      if (!got.ok) {
        switch (got.reason) {
          case "timeout":
            return makeError("locked", `${label(loc)} is in use by another call or process (${heldBy(got.holder)}); gave up after waiting ${opts.lockTimeoutMs} ms (--lock-timeout)`);
          case "aborted":
            return makeError("locked", `${label(loc)}: interrupted while waiting for its lock`);
          case "error":
            return makeError("rejected", `${label(loc)}: cannot lock ${loc.dir} (${code(got.error)})`);
          default: {
            const never: never = got;
            return never;
          }
        }
      }
      const session = new Session(shared, loc, prov, got.lock, realDir, query);
      try {
        await session.load();
      } catch (err) {
        await got.lock.release();
        if (err instanceof Refused) return makeError("rejected", `${label(loc)}: ${err.message}`);
        return makeError("rejected", `${label(loc)}: cannot load memory (${code(err)})`);
      }
      shared.sessions.add(session);
      return session;
    },
    async close() {
      for (const s of [...shared.sessions]) await s.release();
    },
  };
}
