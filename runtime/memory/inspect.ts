// A memory looked at from outside (`vvm memory ls`, `show`): its files read without the lock, without
// writing a byte and never through a link, and what is wrong with them. A commit may run meanwhile, so
// a look is repeated until two readings agree (spec/memory.md §13).
import path from "node:path";
import { sleep } from "../abort.ts";
import { isOrphanName, NOT_REGULAR, type MemoryFs } from "./fsio.ts";
import { loadIndexKey } from "./index-key.ts";
import { assertProjectRootReal, BindingError, escapeKey, notAFolder, removedName, unescapeKey, verifyContainment, type MemoryLocation, type MemoryScope } from "./keys.ts";
import { describeBadLines, scanTail, type LedgerEntry } from "./ledger.ts";
import { DEFAULT_STALE_MS, holderName, judgeLock, type Holder } from "./lock.ts";
import { memoryContext } from "./prompt.ts";
import type { Recalled } from "./recall.ts";
import { budgetChars, digestState, MAX_SCAN_BYTES, parseMeta, readDigestFile, recalledFacts, type DigestFile, type DigestState, type Meta } from "./state.ts";

/** A memory's files, as `vvm memory` reads them. */
export function memoryFiles(dir: string) {
  return { digest: path.join(dir, "digest.md"), ledger: path.join(dir, "ledger.jsonl"), meta: path.join(dir, "meta.json"), lock: path.join(dir, "lock"), recall: path.join(dir, "recall.jsonl") };
}

/** A memory that cannot be read at all (its directory is a link out of its root, or not a directory). */
export class InspectError extends Error {
  override name = "InspectError";
}

export interface Inspection {
  loc: MemoryLocation;
  digest: DigestFile;
  meta: Meta | null;
  ledger: {
    /** bytes, 0 when there is no ledger */
    size: number;
    tornBytes: number;
    /** the last readable entry */
    last: LedgerEntry | null;
    /** why the ledger could not be read (a link, a FIFO…), or null */
    problem: string | null;
  };
  state: DigestState;
  /** who holds the lock, when a `lock` file is there */
  lock: Holder | null;
  locked: boolean;
  /** what is wrong and what the next `continue` call (or a person) does about it */
  warnings: string[];
  /** worth knowing, not wrong: an unrecorded hand edit, a call holding the lock */
  notes: string[];
}

export interface InspectOptions {
  fs: MemoryFs;
  signal: AbortSignal;
}

const errCode = (err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  return e?.code === NOT_REGULAR ? e.message : (e?.code ?? e?.message ?? String(err));
};

/** A digest.md or ledger.jsonl that changed between two readings means a commit ran meanwhile. */
async function fingerprint(fs: MemoryFs, files: ReturnType<typeof memoryFiles>): Promise<string> {
  const parts: string[] = [];
  for (const f of [files.digest, files.ledger, files.meta]) {
    const id = await fs.identity(f).catch(() => null);
    parts.push(id === null ? "-" : `${id.ino}:${id.mtimeMs}`);
  }
  parts.push(String(await fs.size(files.ledger).catch(() => null)));
  return parts.join(" ");
}

/** How many times a look is repeated while a commit is under way, and the pause between. */
export const ATTEMPTS = 40;
const PAUSE_MS = 25;

/**
 * `look()` taken without the lock, and taken again while the memory's files change under it or `busy` says a
 * call holding the lock has the memory half-way through a commit, up to ATTEMPTS times PAUSE_MS apart (about
 * a second; `ls`, `show` and `doctor` alike): the last look, which after that describes the memory as found.
 */
export async function settledLook<T>(fs: MemoryFs, dir: string, signal: AbortSignal, look: () => Promise<T>, busy: (found: T) => boolean): Promise<T> {
  const files = memoryFiles(dir);
  for (let attempt = 1; ; attempt++) {
    const before = await fingerprint(fs, files);
    const found = await look();
    if ((before === (await fingerprint(fs, files)) && !busy(found)) || attempt >= ATTEMPTS || !(await sleep(PAUSE_MS, signal))) return found;
  }
}

/**
 * What the memory at `loc` holds, or null when it does not exist (or stops existing while it is read). Readings are repeated while the files
 * change under them or a call holding the lock is half-way through a commit (a torn last line, a digest
 * one entry behind), for about a second; after that the memory is described as found.
 */
export async function inspectMemory(loc: MemoryLocation, opts: InspectOptions): Promise<Inspection | null> {
  const { fs } = opts;
  let real: string | null;
  try {
    real = await verifyContainment(loc);
  } catch (err) {
    if (err instanceof BindingError) throw new InspectError(err.message);
    throw err;
  }
  if (real === null) return null;
  const files = memoryFiles(loc.dir);
  try {
    return await settledLook(fs, loc.dir, opts.signal, () => readOnce(loc, files, opts), (found) => found.locked && midCommit(found));
  } catch (err) {
    // taken aside by an rm (or removed) while it was read: no memory, as if it had not been found
    if (err instanceof InspectError && (await fs.inspect(loc.dir)) === null) return null;
    throw err;
  }
}

/** What a commit in progress looks like from outside: a line being appended, the digest one entry behind, meta.json one behind. */
function midCommit(i: Inspection): boolean {
  const metaBehind = i.state.kind === "clean" && i.meta !== null && i.meta.digest_sha256 !== i.digest.hash;
  return i.ledger.tornBytes > 0 || i.state.kind === "interrupted" || metaBehind;
}

async function readOnce(loc: MemoryLocation, files: ReturnType<typeof memoryFiles>, opts: InspectOptions): Promise<Inspection> {
  const { fs } = opts;
  const warnings: string[] = [];
  const notes: string[] = [];
  let names: string[];
  try {
    names = await fs.list(loc.dir);
  } catch (err) {
    throw new InspectError(`${loc.dir} cannot be read (${errCode(err)})`);
  }
  const digest = await readDigestFile(fs, files.digest).catch((err) => {
    throw new InspectError(`digest.md cannot be read (${errCode(err)})`);
  });
  if (digest.parsed.unusable) warnings.push(`${digest.parsed.unusable}: the digest is not injected and no patch can replace it until it is fixed by hand`);
  for (const note of digest.parsed.notes) warnings.push(note);

  let meta: Meta | null = null;
  try {
    const raw = await fs.readFile(files.meta);
    // empty: created by a writer killed before its first write, like none at all
    if (raw !== null && raw.length > 0) {
      meta = parseMeta(raw);
      if (meta === null) warnings.push("meta.json is not valid; the next continue call rebuilds it");
    }
  } catch (err) {
    warnings.push(`meta.json cannot be read (${errCode(err)}); the next continue call rebuilds it`);
  }

  const ledger: Inspection["ledger"] = { size: 0, tornBytes: 0, last: null, problem: null };
  try {
    const scan = await scanTail(fs, files.ledger, MAX_SCAN_BYTES);
    Object.assign(ledger, { size: scan.size, tornBytes: scan.tornBytes, last: scan.last });
    if (scan.tornBytes > 0) warnings.push(`ledger.jsonl ends with ${scan.tornBytes} bytes of an incomplete line (an interrupted write); the next continue call repairs it`);
    if (scan.badLines.length > 0) warnings.push(`ledger.jsonl has ${describeBadLines(scan.badLines)}; calls skip ${scan.badLines.length === 1 ? "it" : "them"}`);
  } catch (err) {
    ledger.problem = `ledger.jsonl cannot be read (${errCode(err)})`;
    warnings.push(`${ledger.problem}; every continue call on this memory fails until it is fixed by hand`);
  }

  const state: DigestState = ledger.problem === null ? digestState(digest.hash, ledger.last, meta) : { kind: "clean", known: digest.hash };
  switch (state.kind) {
    case "clean":
      break;
    case "interrupted":
      warnings.push(`the update of entry ${state.seq} was cut short (digest.md is still the digest before it); the next continue call completes it`);
      break;
    case "edited":
      if (!digest.parsed.unusable) notes.push(`digest.md was changed by hand ${state.after === null ? "and the ledger does not have it yet" : `after entry ${state.after}`}; the next continue call records the edit`);
      break;
    default: {
      const never: never = state;
      return never;
    }
  }

  // a lock whose holder has exited (killed mid-call) or stopped refreshing it holds nothing: no call is under way
  const judged = names.includes("lock") ? judgeLock(files.lock, DEFAULT_STALE_MS) : null;
  const lock = judged?.holder ?? null;
  const locked = judged !== null && judged.stale === null;
  if (locked) notes.push(`in use: ${describeHolder(lock)}`);
  else if (judged !== null) {
    const why = judged.stale === "gone" ? "no longer runs" : `has not refreshed it for over ${DEFAULT_STALE_MS / 1000} s`;
    warnings.push(`a stale lock: ${lock === null ? "its holder (unknown)" : holderName(lock)} held it and ${why}; the next continue call takes it over`);
  }
  // while a call holds the lock, a temporary file is most likely its own write in progress
  if (!locked) for (const name of names.filter(isOrphanName).sort()) warnings.push(`${name} was left by an interrupted write; the next continue call removes it`);
  return { loc, digest, meta, ledger, state, lock, locked, warnings, notes };
}

/**
 * What a `continue` call with this task and input would be shown now: the facts recall picks within the
 * budget and the whole Memory Context. Nothing is written (recall.jsonl is read, never brought up to
 * date). A memory that needs recovery first (an interrupted update, §7) is shown as it stands.
 */
export async function nextContext(i: Inspection, o: { fs: MemoryFs; query: string; budgetTokens: number; homeDir: string; warn: (message: string) => void }): Promise<{ facts: Recalled; context: string }> {
  const files = memoryFiles(i.loc.dir);
  const facts =
    i.ledger.problem !== null
      ? { shown: [], hidden: 0 }
      : await recalledFacts({
          fs: o.fs,
          ledger: files.ledger,
          index: files.recall,
          ledgerSize: i.ledger.size,
          settings: i.digest.parsed.settings,
          query: o.query,
          budgetChars: budgetChars(o.budgetTokens),
          cache: new Map(),
          persist: false,
          // no key yet: recall reads the ledger itself (a reading command makes nothing)
          key: loadIndexKey(o.homeDir, false),
          warn: o.warn,
        });
  return { facts, context: memoryContext(i.loc, i.digest.parsed, facts, "continue") };
}

/** "held by pid 123 on host since 2026-01-02T03:04:05Z", as far as the lock file says. */
function describeHolder(h: Holder | null): string {
  if (h === null) return "the lock is held (holder unknown)";
  return `the lock is held by ${holderName(h)}${h.since !== null ? ` since ${h.since}` : ""}`;
}

/** One directory under a root: the key it holds (null when neither its name nor meta.json says), and what was found. */
export interface Listed {
  name: string;
  key: string | null;
  inspection: Inspection | null;
  /** why it could not be read */
  problem: string | null;
}

/** A memory directory an `rm` took aside and did not finish removing (it was killed part-way): see maintain.ts. */
export interface RemovalLeft {
  /** the memory directory's name, and its key when the name can be decoded */
  name: string;
  key: string | null;
  path: string;
}

/** What removals left under `root`; none when the root does not exist. */
export async function removalsLeft(root: string, fs: MemoryFs): Promise<RemovalLeft[]> {
  let names: string[];
  try {
    names = await fs.list(root);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw err;
  }
  return names.sort().flatMap((entry) => {
    const name = removedName(entry);
    return name === null ? [] : [{ name, key: unescapeKey(name), path: path.join(root, entry) }];
  });
}

/**
 * Every memory under `root` (directories named `k-…`), sorted by key. A shortened name (a key over 160
 * escaped characters) cannot be decoded; its key comes from meta.json when that key escapes to the name.
 */
export async function listMemories(scope: MemoryScope, root: string, opts: InspectOptions): Promise<Listed[]> {
  let names: string[];
  try {
    // a project's root that is a link is not listed: its names could be the user's own memories (keys.ts)
    assertProjectRootReal(scope, root);
    names = await opts.fs.list(root);
  } catch (err) {
    if (err instanceof BindingError) throw new InspectError(err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return [];
    // a root that is a file (a --path naming one, say) holds no memories: not a place without any
    if (code === "ENOTDIR") throw new InspectError(notAFolder(root));
    throw new InspectError(`${root} cannot be read (${errCode(err)})`);
  }
  const out: Listed[] = [];
  for (const name of names.filter((n) => n.startsWith("k-")).sort()) {
    const dir = path.join(root, name);
    let key = unescapeKey(name);
    const item: Listed = { name, key, inspection: null, problem: null };
    try {
      item.inspection = await inspectMemory({ scope, key: key ?? name, root, dir }, opts);
      const metaKey = item.inspection?.meta?.key;
      if (key === null && typeof metaKey === "string" && escapeKey(metaKey) === name) key = metaKey;
      item.key = key;
      if (item.inspection !== null) item.inspection.loc.key = key ?? name;
    } catch (err) {
      if (!(err instanceof InspectError)) throw err;
      item.problem = err.message;
    }
    out.push(item);
  }
  return out.sort((a, b) => (a.key ?? a.name).localeCompare(b.key ?? b.name));
}
