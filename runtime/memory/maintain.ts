// The `vvm memory` commands that change a memory: restore, forget (and --purge), rm, doctor --fix. Each
// takes the memory's lock exactly as a call does and works through a session of the store (session.ts):
// the same recovery first, the same write order, atomic replacements and secret scan, and an entry in the
// ledger whose provenance names the command and the user. spec/memory.md §13.
import { randomBytes } from "node:crypto";
import { realpathSync } from "node:fs";
import path from "node:path";
import { nodeFs, type MemoryFs } from "./fsio.ts";
import { examine, examineSettled, findingId, type Examination, type Finding } from "./doctor.ts";
import { Scrubber, retainedFacts, selectFacts, type ForgetRequest } from "./forget.ts";
import { digestVersions } from "./history.ts";
import { loadIndexKey } from "./index-key.ts";
import { label, lockFailure, openLocked, storeShared, waitingLine, type LockFailure } from "./index.ts";
import { memoryFiles, removalsLeft, type RemovalLeft } from "./inspect.ts";
import { BindingError, notAFolder, removalPrefix, verifyContainment, type MemoryLocation } from "./keys.ts";
import type { FactRef, ToolProvenance } from "./ledger.ts";
import { acquire, DEFAULT_STALE_MS, type Holder } from "./lock.ts";
import { preloadSecretRules } from "./secrets.ts";
import { code, Refused, unusableRefusal, type Outcome, type Session } from "./session.ts";
import { readDigestFile } from "./state.ts";
import { ToolError } from "./tool-error.ts";
import { openFolder, type Folder } from "../tools/sandbox.ts";

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
  /** the user's home directory, where the key recall.jsonl is signed with is kept (index-key.ts) */
  homeDir: string;
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

/** A wait for a memory's lock that did not get it, as a command's error. */
function lockError(f: LockFailure): ToolError {
  return new ToolError(f.message, f.kind === "locked" ? "locked" : f.kind === "gone" ? "missing" : "refused");
}

/**
 * Run `work` on a session that holds the memory (its lock taken, its recovery done, as a `continue`
 * call's would be), then release it. A refusal becomes a ToolError. `beforeLoad` runs under the lock, before the recovery;
 * a wait for the lock is told to `waitWarn` (the command's warnings, even when the store's go elsewhere).
 */
async function withSession<T>(loc: MemoryLocation, o: ToolOptions, work: (s: Session, fs: MemoryFs) => Promise<T>, beforeLoad?: () => Promise<void>, waitWarn = o.warn): Promise<T> {
  const fs = o.fs ?? nodeFs;
  const realDir = await realDirOf(loc);
  const shared = storeShared(fs, 0, o.homeDir, o.warn);
  const onWait = (holder: Holder | null) => waitWarn(`${label(loc)}: ${waitingLine(holder)}`);
  const opened = await openLocked(shared, loc, realDir, o.who, { lockTimeoutMs: o.lockTimeoutMs, staleMs: Math.max(2000, o.staleMs ?? DEFAULT_STALE_MS), signal: o.signal, query: "", beforeLoad, onWait });
  if (!opened.ok) throw lockError(opened);
  const s = opened.session;
  try {
    return await work(s, fs);
  } catch (err) {
    if (err instanceof Refused) throw new ToolError(`${label(loc)}: ${withRecovered(err.message, s.recovered)}`, "refused");
    throw err;
  } finally {
    await s.release();
  }
}

/**
 * A refusal, true of a session whose opening wrote entries (a hand edit of digest.md recorded, a repair)
 * before the command was refused: the ledger changed, so "memory unchanged" would not be.
 */
function withRecovered(message: string, recovered: Session["recovered"]): string {
  if (recovered.length === 0) return message;
  const what = recovered.map((r) => `${r.seq} (${r.kind === "external_edit" ? "the hand edit of digest.md it found" : "a repair"})`).join(", ");
  return `${message.replace(/memory unchanged$/, "digest unchanged")}; opening the memory recorded entr${recovered.length === 1 ? "y" : "ies"} ${what} first`;
}

interface Restored {
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
  // under the lock, before the recovery, which would record an unusable digest.md as a hand edit (without
  // its content) before the restore is refused over it: a refused restore writes nothing
  const refuseUnusable = async () => {
    const { parsed } = await readDigestFile(o.fs ?? nodeFs, memoryFiles(loc.dir).digest);
    if (parsed.unusable) throw new Refused(unusableRefusal(parsed.unusable));
  };
  return withSession(loc, o, async (s, fs) => {
    const found = await digestVersions(fs, s.paths.ledger, [seq]);
    const last = found?.last ?? 0;
    if (seq > last) throw new ToolError(`${label(loc)} has no entry ${seq}; its last entry is ${last}`, "missing");
    const at = found?.at.get(seq);
    if (at === undefined) throw new ToolError(`${label(loc)}: the ledger does not hold the digest as it was after entry ${seq}`, "missing");
    if (at.body === null) throw new ToolError(`${label(loc)}: the digest of entry ${at.version.seq} is not in the ledger (${at.version.reason ?? "not recorded"}), so it cannot be restored`, "refused");
    const outcome = await s.restore(at.body, at.version.seq, force);
    return { requested: seq, version: at.version.seq, outcome, body: s.digest.body };
  }, refuseUnusable);
}

interface Forgotten {
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
  const digestHolds = `${label(loc)}: the current digest (digest.md) holds that text: edit digest.md (or restore a version without it) first, then purge; nothing purged`;
  if (purge) {
    // looked at before the session opens too: its recovery would record a hand edit of digest.md that
    // holds the text in the ledger, and a refused purge must change nothing
    const fs = o.fs ?? nodeFs;
    const files = memoryFiles(loc.dir);
    const { targets } = selectFacts((await retainedFacts(fs, files.ledger).catch(() => null)) ?? [], req);
    const raw = await fs.readFile(files.digest).catch(() => null);
    if (raw !== null && new Scrubber(targets.map((f) => f.text), req.match).holds(raw.toString("utf8"))) throw new ToolError(digestHolds, "refused");
  }
  return withSession(loc, o, async (s, fs) => {
    const all = (await retainedFacts(fs, s.paths.ledger)) ?? [];
    const { targets, missing } = selectFacts(all, req, s.lastSeq);
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
    // the front matter too: a purge leaves no file under .vvm/ holding the text
    if (scrubber.holds(digest.prefix + digest.body)) throw new ToolError(digestHolds, "refused");
    const named = targets.length === 0 ? "" : `${targets.length} retained fact${targets.length === 1 ? "" : "s"}${req.match !== null ? " and " : ""}`;
    const reason = `purged ${named}${req.match !== null ? "every occurrence of the text given" : ""} from the ledger (vvm memory forget --purge)`;
    // replaced copies of digest.md (§5) may hold an older digest with the text; removed first, so that a purge
    // run again after one was killed between its new ledger and these files removes them, the ledger clean
    const removedFiles = await s.dropReplaced((raw) => raw === null || scrubber.holds(raw.toString("utf8")));
    let done: Awaited<ReturnType<Session["purge"]>>;
    try {
      done = await s.purge((line, purgeSeq) => scrubber.scrubLine(line, purgeSeq), [...refs, ...already], reason);
    } catch (err) {
      if (err instanceof Refused && removedFiles.length > 0) throw new Refused(`${err.message.replace(/; nothing purged$/, "; the ledger is unchanged")}; removed ${removedFiles.join(", ")}, a copy of an earlier digest.md that held it`);
      throw err;
    }
    return { seq: done.seq, facts, already, purge: { entries: done.rewritten, occurrences: scrubber.occurrences, removedFiles } };
  });
}

interface Removed {
  /** names removed from the memory directory (the directory itself last, as ".") */
  files: string[];
  bytes: number;
  /** how many earlier removals of this memory, cut short, were finished too */
  finished: number;
}

/**
 * `vvm memory rm`: remove the memory's directory and everything in it. Under its lock, one rename takes
 * the whole directory aside (removalPrefix): from then on no call, `ls` or `show` finds any of it, so an rm
 * killed part-way leaves no memory behind (removing the files in place left digest.md, which reads as a
 * memory again). What was taken aside is then removed, and so is anything an earlier rm of the memory left
 * aside. Nothing is ever followed: the directory must be a directory inside its root (not a link, even to
 * another memory), links in it are unlinked, and a subdirectory (none of the runtime's own) is entered only
 * when it is a directory, inside the folder as opened (removeAside). ToolError when it does not exist or is in use past
 * the timeout.
 */
export async function removeMemory(loc: MemoryLocation, o: ToolOptions): Promise<Removed> {
  const fs = o.fs ?? nodeFs;
  const real = await realDirOf(loc);
  const itself = await fs.inspect(loc.dir);
  if (itself?.type !== "dir") throw new ToolError(`${label(loc)}: ${loc.dir} is a symbolic link, not the memory's own directory; remove the link by hand (rm never follows one)`, "refused");
  const got = await acquire(loc.dir, o.lockTimeoutMs, Math.max(2000, o.staleMs ?? DEFAULT_STALE_MS), o.signal, (holder) => o.warn(`${label(loc)}: ${waitingLine(holder)}`));
  if (!got.ok) {
    // said as restore, forget and doctor --fix say it (a Ctrl-C is not a lock held too long), and that nothing went
    const failed = lockFailure(loc, got, o.lockTimeoutMs);
    throw lockError(got.reason === "aborted" || failed.kind === "gone" ? { ...failed, message: `${failed.message}; nothing removed` } : failed);
  }
  const aside = path.join(loc.root, removalPrefix(path.basename(loc.dir)) + randomBytes(6).toString("hex"));
  try {
    // the lock is ours: the directory must still be the one checked
    if ((await realDirOf(loc)) !== real) throw new ToolError(`${label(loc)}: the memory directory was moved or replaced; nothing removed`, "refused");
    if (got.lock.compromised()) throw new ToolError(`${label(loc)}: the memory lock was lost; nothing removed`, "refused");
    await fs.rename(loc.dir, aside);
    // what was moved must be what was checked (a link swapped in between is put back, untouched)
    if ((await fs.inspect(aside))?.type !== "dir" || realpathSync.native(aside) !== path.join(path.dirname(real), path.basename(aside))) {
      await fs.rename(aside, loc.dir);
      throw new ToolError(`${label(loc)}: the memory directory was moved or replaced; nothing removed`, "refused");
    }
    // a power loss from here on does not bring the memory back
    await fs.syncDir(loc.root);
  } finally {
    // the lock file went aside with the directory: nothing at its old place is ours, so this unlinks nothing; a
    // call that was waiting finds no directory and starts a new memory
    await got.lock.release();
  }
  const removed: Removed = { files: [], bytes: 0, finished: 0 };
  // the memory is gone from here on, whatever stops the removal of its files (a tree too deep, a folder it
  // may not read): that is said, and left aside for the next rm or doctor --fix, as a kill would leave it
  await removeAside(fs, aside, removed).catch((err: unknown) => o.warn(asideFailure(aside, err)));
  removed.finished = await finishRemovals(loc, o.warn, fs, aside);
  return removed;
}

/** Why what an rm took aside could not be removed, for a warning. */
function asideFailure(aside: string, err: unknown): string {
  return err instanceof ToolError ? err.message : `${aside} could not be removed (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); remove it by hand`;
}

/**
 * Finish what earlier removals of this memory took aside and left (killed part-way); how many it finished.
 * One it must not enter (a link, a file: none an rm made) or cannot remove (a folder it may not read) is left and
 * said through `warn`, and stops neither the others nor the removal of the memory itself. `besides`: the one
 * this rm took aside itself, already tried.
 */
export async function finishRemovals(loc: MemoryLocation, warn: (message: string) => void, fs: MemoryFs = nodeFs, besides?: string): Promise<number> {
  let left: RemovalLeft[];
  try {
    left = (await removalsLeft(loc.root, fs)).filter((r) => r.name === path.basename(loc.dir) && r.path !== besides);
  } catch (err) {
    throw new ToolError(`${label(loc)}: cannot read ${loc.root} (${code(err)})`, "refused");
  }
  let finished = 0;
  for (const r of left) {
    try {
      await removeAside(fs, r.path, { files: [], bytes: 0, finished: 0 });
      finished++;
    } catch (err) {
      warn(asideFailure(r.path, err));
    }
  }
  return finished;
}

/**
 * Remove a memory directory taken aside by `rm`: its files (the ledger first), then the directory. It is
 * entered only when it is a directory whose real path is its own place in the root (never a link), and then
 * only as opened and checked (openFolder): every name is listed and unlinked inside the opened folder, never
 * by its path again, so a folder swapped for a link once checked takes nothing elsewhere with it. Another rm
 * finishing the same directory at the same time is no error.
 */
async function removeAside(fs: MemoryFs, aside: string, removed: Removed): Promise<void> {
  const real = path.join(realpathSync.native(path.dirname(aside)), path.basename(aside));
  const folder = openFolder(real);
  if (folder === "missing") return;
  if (folder === "denied") throw new ToolError(`${aside} is a folder rm may not open (permission denied); remove it by hand`, "refused");
  if (typeof folder === "string") throw new ToolError(`${aside} is not a directory of its own; remove it by hand (rm never follows a link)`, "refused");
  try {
    const names = await namesIn(fs, folder);
    if (names === null) return;
    for (const name of names.sort((a, b) => order(a) - order(b) || a.localeCompare(b))) await removeTree(fs, aside, folder, real, name, removed);
  } finally {
    folder.close();
  }
  await fs.remove(aside);
  removed.files.push(".");
}

/** The names in a folder being removed, as opened; null when another rm finishing the same leftover removed it meanwhile. */
async function namesIn(fs: MemoryFs, folder: Folder): Promise<string[] | null> {
  try {
    return await fs.list(folder.path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

const MAX_DEPTH = 32;

const ORDER = ["ledger.jsonl", "recall.jsonl", "digest.md", "meta.json"];
const order = (name: string) => {
  const i = ORDER.indexOf(name);
  return i < 0 ? ORDER.length : i;
};

/**
 * Remove `rel` (a path under the directory `aside`) inside `dir`, the folder it is in as opened and checked
 * (`real`: that folder's real path), never following a link; a real subdirectory is opened inside it in turn
 * (openFolder), and emptied first, down to MAX_DEPTH folders (the runtime makes none; a tree a repository
 * ships 2,000 folders deep took a minute and a half of system time when each level resolved the whole path).
 */
async function removeTree(fs: MemoryFs, aside: string, dir: Folder, real: string, rel: string, removed: Removed): Promise<void> {
  const name = path.basename(rel);
  const file = path.join(dir.path, name);
  const st = await fs.inspect(file);
  if (st === null) return;
  if (st.type === "dir") {
    if (rel.split(path.sep).length > MAX_DEPTH) throw new ToolError(`${path.join(aside, rel.split(path.sep)[0])} holds folders more than ${MAX_DEPTH} deep; removed nothing more (remove it by hand)`, "refused");
    const inner = path.join(real, name);
    const sub = openFolder(inner, dir);
    // another rm finishing the same leftover removed it meanwhile
    if (sub === "missing") return;
    if (sub === "moved") throw new ToolError(`${path.join(aside, rel)} was replaced by a link while it was being removed; removed nothing more (rm never follows a link)`, "refused");
    if (sub === "denied") throw new ToolError(`${path.join(aside, rel)} is a folder rm may not open (permission denied); removed nothing more (remove it by hand)`, "refused");
    if (sub === "not a folder") throw new ToolError(`${path.join(aside, rel)} could not be opened as a folder; removed nothing more (remove it by hand)`, "refused");
    try {
      const entries = await namesIn(fs, sub);
      if (entries === null) return;
      for (const entry of entries) await removeTree(fs, aside, sub, inner, path.join(rel, entry), removed);
    } finally {
      sub.close();
    }
  }
  await fs.remove(file);
  removed.files.push(st.type === "dir" ? `${rel}/` : rel);
  if (st.type === "file") removed.bytes += st.size;
}

export interface Doctored {
  /** what was found before anything was fixed */
  before: Examination;
  /** what is found now (after --fix; the same as `before` without it) */
  after: Examination;
  /** the findings --fix repaired or tidied (notes), and the `repair` entry that records the problems among them (null: none written) */
  fixed: Finding[];
  entry: number | null;
  /** what the store said while it recovered the memory (its own repair entries, a wait for the lock) */
  said: string[];
  /** why --fix could not run at all (the memory could not be loaded), or null */
  refused: string | null;
}

/**
 * `vvm memory doctor`: the memory examined (doctor.ts). With `fix`, under the lock, the store's own
 * recovery runs as a `continue` call's does (a stale lock taken over, leftovers removed, a torn tail and
 * an interrupted update repaired, a hand edit recorded, recall.jsonl rebuilt), then derived files that
 * cannot be used are removed and written afresh, and a `repair` entry lists what was fixed.
 */
export async function doctorMemory(loc: MemoryLocation, fix: boolean, o: ToolOptions): Promise<Doctored> {
  const fs = o.fs ?? nodeFs;
  await realDirOf(loc);
  const before = await examineSettled(loc, fs, loadIndexKey(o.homeDir, false), o.signal);
  const result: Doctored = { before, after: before, fixed: [], entry: null, said: [], refused: null };
  // a note with a fix (a replaced digest.md past its time, a recall index to build or signed with another
  // key: temporary or derived files) is tidied as the next continue call would, but is no reason to wait
  // for a call that holds the lock: that call tidies it
  const inUse = before.findings.some((f) => f.code === "lock-held");
  if (!fix || !before.findings.some((f) => f.fix !== null && (f.problem || !inUse))) return result;
  try {
    const prefix = `${label(loc)}: `;
    // Looked at again once the lock is ours: the look above, without it, may have met a call half-way through
    // a commit (a line being appended, digest.md not renamed yet), which is no damage and must not be
    // recorded as repaired. A stale lock it found is gone now that the lock is held.
    let found = before;
    const locked = async () => {
      const again = await examine(loc, fs, loadIndexKey(o.homeDir, false), { lockIsOurs: true });
      found = { ...again, findings: [...before.findings.filter((f) => f.code === "lock-stale"), ...again.findings] };
    };
    await withSession(
      loc,
      { ...o, warn: (m) => result.said.push(m.startsWith(prefix) ? m.slice(prefix.length) : m) },
      async (s) => {
        const remove = [...new Set(found.findings.flatMap((f) => (f.remove !== undefined && f.fix !== null ? [f.remove] : [])))];
        await s.rebuildDerived(remove);
        const now = new Set((await examine(loc, fs, loadIndexKey(o.homeDir, false))).findings.map(findingId));
        result.fixed = found.findings.filter((f) => f.fix !== null && !now.has(findingId(f)));
        // the ledger records repaired problems; tidying a note's files is not worth an entry (a call records none)
        const repaired = result.fixed.filter((f) => f.problem);
        if (repaired.length > 0) result.entry = await s.recordRepair(`vvm memory doctor --fix: ${repaired.map((f) => f.message).join("; ")}`);
      },
      locked,
      // said while it waits, as restore and forget say it, not in the report afterwards
      o.warn,
    );
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    result.refused = err.message;
  }
  result.after = await examineSettled(loc, fs, loadIndexKey(o.homeDir, false), o.signal);
  return result;
}

/** Every memory directory (`k-…`) under a root, by name; [] when the root does not exist, ToolError when it is a file. */
export async function memoryNames(root: string, fs: MemoryFs = nodeFs): Promise<string[]> {
  try {
    return (await fs.list(root)).filter((n) => n.startsWith("k-")).sort();
  } catch (err) {
    const c = (err as NodeJS.ErrnoException).code;
    if (c === "ENOENT") return [];
    // a root that is a file holds no memories: not a place without any
    if (c === "ENOTDIR") throw new ToolError(notAFolder(root), "missing");
    throw err;
  }
}
