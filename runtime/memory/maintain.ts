// The `vvm memory` commands that change a memory: restore, forget (and --purge). Each
// takes the memory's lock exactly as a call does and works through a session of the store (session.ts):
// the same recovery first, the same write order, atomic replacements and secret scan, and an entry in the
// ledger whose provenance names the command and the user. spec/memory.md §13.
import { nodeFs, type MemoryFs } from "./fsio.ts";
import { Scrubber, retainedFacts, selectFacts, type ForgetRequest } from "./forget.ts";
import { digestVersions } from "./history.ts";
import { label, openLocked, storeShared } from "./index.ts";
import { BindingError, verifyContainment, type MemoryLocation } from "./keys.ts";
import type { FactRef, ToolProvenance } from "./ledger.ts";
import { DEFAULT_STALE_MS } from "./lock.ts";
import { preloadSecretRules } from "./secrets.ts";
import { code, Refused, type Outcome, type Session } from "./session.ts";
import { ToolError } from "./tool-error.ts";

export { ToolError };

export interface ToolOptions {
  /** the command and the user who ran it, recorded as the provenance of every entry written */
  who: ToolProvenance;
  lockTimeoutMs: number;
  signal: AbortSignal;
  /** what the store says while it works (a repair it made, a wait for the lock) */
  warn: (message: string) => void;
  staleMs?: number;
  /** file layer; tests substitute one that fails */
  fs?: MemoryFs;
}

/** The memory's checked real path; ToolError when it does not exist or resolves outside its root. */
async function realDirOf(loc: MemoryLocation): Promise<string> {
  let real: string | null;
  try {
    real = await verifyContainment(loc);
  } catch (err) {
    if (err instanceof BindingError) throw new ToolError(err.message, "refused");
    throw new ToolError(`${label(loc)}: cannot use ${loc.dir} (${code(err)})`, "refused");
  }
  if (real === null) throw new ToolError(`no ${label(loc)}`, "missing");
  return real;
}

/**
 * Run `work` on a session that holds the memory (its lock taken, its recovery done, as a `continue`
 * call's would be), then release it. A refusal becomes a ToolError.
 */
async function withSession<T>(loc: MemoryLocation, o: ToolOptions, work: (s: Session, fs: MemoryFs) => Promise<T>): Promise<T> {
  const fs = o.fs ?? nodeFs;
  const realDir = await realDirOf(loc);
  const shared = storeShared(fs, 0, o.warn);
  const opened = await openLocked(shared, loc, realDir, o.who, { lockTimeoutMs: o.lockTimeoutMs, staleMs: Math.max(2000, o.staleMs ?? DEFAULT_STALE_MS), signal: o.signal, query: "" });
  if (!opened.ok) throw new ToolError(opened.message, opened.kind === "locked" ? "locked" : "refused");
  const s = opened.session;
  try {
    return await work(s, fs);
  } catch (err) {
    if (err instanceof Refused) throw new ToolError(`${label(loc)}: ${err.message}`, "refused");
    throw err;
  } finally {
    await s.release();
  }
}

export interface Restored {
  /** the entry asked for, and the version in effect after it (the entry that wrote that digest) */
  requested: number;
  version: number;
  outcome: Outcome;
  /** the digest body now in place */
  body: string;
}

/**
 * `vvm memory restore KEY SEQ`: the digest as it was after entry `seq` becomes current again, as a
 * `restore` entry (§5) committed like a patch. ToolError when the ledger has no such entry or does not
 * hold that digest's content, or the restore is refused (read_only without `force`, a likely secret,
 * limits, an unusable digest.md).
 */
export async function restoreDigest(loc: MemoryLocation, seq: number, force: boolean, o: ToolOptions): Promise<Restored> {
  preloadSecretRules();
  return withSession(loc, o, async (s, fs) => {
    const found = await digestVersions(fs, s.paths.ledger, [seq]);
    const last = found?.last ?? 0;
    if (seq > last) throw new ToolError(`${label(loc)} has no entry ${seq}; its last entry is ${last}`, "missing");
    const at = found?.at.get(seq);
    if (at === undefined) throw new ToolError(`${label(loc)}: the ledger does not hold the digest as it was after entry ${seq}`, "missing");
    if (at.body === null) throw new ToolError(`${label(loc)}: the digest of entry ${at.version.seq} is not in the ledger (${at.version.reason ?? "not recorded"}), so it cannot be restored`, "refused");
    const outcome = await s.restore(at.body, at.version.seq, force);
    return { requested: seq, version: at.version.seq, outcome, body: s.digest.body };
  });
}

export interface Forgotten {
  /** the `forget` entry written */
  seq: number;
  /** the facts it names, with their text (never printed for a purge by the CLI) */
  facts: { seq: number; index: number; ts: string; text: string }[];
  /** named already by an earlier `forget` (a purge still removes their text) */
  already: FactRef[];
  purge: { entries: number; occurrences: number; removedFiles: string[] } | null;
}

/**
 * `vvm memory forget`: a `forget` entry naming the facts the request selects, so recall and search
 * never show them again; with `purge`, the ledger is also rewritten without their text (and without
 * every occurrence of `req.match`), in retain items, past digests and reasons alike, and replaced files
 * of digest.md holding it are removed. A purge is refused while digest.md itself holds the text: that is
 * the current digest, which a person edits (or restores) first.
 */
export async function forgetFacts(loc: MemoryLocation, req: ForgetRequest, purge: boolean, o: ToolOptions): Promise<Forgotten> {
  return withSession(loc, o, async (s, fs) => {
    const all = (await retainedFacts(fs, s.paths.ledger)) ?? [];
    const { targets, missing } = selectFacts(all, req);
    // a purge of text that only past digests hold names no fact
    const onlyDigests = purge && req.match !== null && targets.length === 0 && req.facts.length === 0;
    if (missing.length > 0 && !onlyDigests) throw new ToolError(`${label(loc)}: ${missing.join("; ")}; nothing forgotten`, "missing");
    const fresh = targets.filter((f) => !f.forgotten);
    const already = targets.filter((f) => f.forgotten).map(({ seq, index }) => ({ seq, index }));
    const refs = fresh.map(({ seq, index }) => ({ seq, index }));
    const facts = fresh.map(({ seq, index, ts, text }) => ({ seq, index, ts, text }));
    if (!purge) {
      if (fresh.length === 0) throw new ToolError(`${label(loc)}: ${targets.length === 1 ? "that fact is" : `those ${targets.length} facts are`} forgotten already; nothing to do (--purge also removes the text from the ledger)`, "refused");
      return { seq: await s.forget(refs), facts, already, purge: null };
    }
    const scrubber = new Scrubber(
      targets.map((f) => f.text),
      req.match,
    );
    const digest = s.digest;
    if (digest.unusable) throw new ToolError(`${label(loc)}: ${digest.unusable}; a purge must be able to check the current digest: fix digest.md first; nothing purged`, "refused");
    if (scrubber.holds(digest.body)) {
      throw new ToolError(`${label(loc)}: the current digest (digest.md) holds that text: edit digest.md (or restore a version without it) first, then purge; nothing purged`, "refused");
    }
    const reason = `purged ${targets.length} retained fact${targets.length === 1 ? "" : "s"}${req.match !== null ? " and every occurrence of the text given" : ""} from the ledger (vvm memory forget --purge)`;
    const done = await s.purge((line, purgeSeq) => scrubber.scrubLine(line, purgeSeq), [...refs, ...already], reason);
    // replaced copies of digest.md (§5) may hold an older digest with the text
    const removedFiles = await s.dropReplaced((raw) => raw === null || scrubber.holds(raw.toString("utf8")));
    return { seq: done.seq, facts, already, purge: { entries: done.rewritten, occurrences: scrubber.occurrences, removedFiles } };
  });
}
