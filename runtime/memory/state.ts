// A memory's files as read without the lock and without writing: digest.md classified and parsed,
// meta.json checked, and how digest.md stands against the ledger's last entry. Calls read them the
// same way under the lock (spec/memory.md §1, §5, §7); the `vvm memory` commands read them bare.
import path from "node:path";
import type { MemoryMode } from "../memory-port.ts";
import { syncFacts, type SyncOptions } from "./fact-index.ts";
import { NOT_REGULAR, type MemoryFs, type ReadHandle } from "./fsio.ts";
import { sha256 } from "./keys.ts";
import type { LedgerEntry } from "./ledger.ts";
import { MAX_DIGEST_FILE_BYTES, parseDigest, unusableDigest, type DigestSettings, type ParsedDigest } from "./patch.ts";
import { recall, type Recalled } from "./recall.ts";

export const EMPTY_HASH = sha256("");
/** Most ledger bytes read from the end to find the last entry and the newest facts, however long the ledger grows. */
export const MAX_SCAN_BYTES = 1024 * 1024;

export interface Meta {
  schema: number;
  key: string;
  scope: string;
  created_at: string;
  last_used_at: string;
  last_mode: MemoryMode;
  digest_sha256: string;
  /** bumped by every apply; a writer that finds a different value than it loaded refuses to write */
  generation: number;
  /** the ledger's last sequence number, a fallback when no entry is readable near its end */
  last_seq: number;
}

/** Larger than any meta.json or lock file the runtime writes, by far. */
export const MAX_META_BYTES = 64 * 1024;

/** meta.json's content, or null when it is not a valid one (it is derived: ignored and rebuilt). */
export function parseMeta(raw: Buffer): Meta | null {
  // a larger one is not the runtime's, and parsing megabytes of nested brackets takes seconds
  if (raw.length > MAX_META_BYTES) return null;
  try {
    const m = JSON.parse(raw.toString("utf8")) as Meta;
    // the numbers feed new sequence numbers and the writers' generation check: whole and finite, or ignored
    const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
    if (typeof m !== "object" || m === null || !count(m.generation) || !count(m.last_seq) || typeof m.digest_sha256 !== "string") return null;
    return m;
  } catch {
    return null;
  }
}

export interface DigestFile {
  parsed: ParsedDigest;
  /** SHA-256 of the whole file; for an unusable one, of the reason (so a later change still shows as an edit) */
  hash: string;
  /** the file's size in bytes, null when there is none */
  size: number | null;
  /** the file, still open, when asked to keep it and it is usable */
  handle: ReadHandle | null;
}

/**
 * digest.md parsed, and the hash the ledger records for it. A file over the size cap, or something that
 * is not a regular file with one name (a link, a directory, a FIFO that would block), is unusable and
 * never read. One open both classifies the file and reads it; with `keep`, a usable file stays open.
 */
export async function readDigestFile(fs: MemoryFs, file: string, keep = false): Promise<DigestFile> {
  const unusable = (reason: string, size: number | null) => ({ parsed: unusableDigest(reason), hash: sha256(reason), size, handle: null });
  let h: ReadHandle | null;
  try {
    // a second name is allowed here only when it is the store's own (below)
    h = await fs.openRead(file, 2);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === NOT_REGULAR) return unusable((err as Error).message, null);
    throw err;
  }
  if (h === null) return { parsed: parseDigest(null), hash: EMPTY_HASH, size: null, handle: null };
  let kept = false;
  try {
    // A commit gives the digest it replaces a second name (REPLACED) just before renaming the new one over
    // it, so a reader without the lock (`vvm memory show`, doctor) can open digest.md in between, and a
    // crash there leaves that state until the next call. Any other second name is refused as before.
    if (h.nlink > 1 && !(await hasReplacedName(fs, path.dirname(file), h.ino))) return unusable(`${path.basename(file)} has other hard links`, null);
    if (h.size > MAX_DIGEST_FILE_BYTES) return unusable(`digest.md is ${h.size} bytes, over the ${MAX_DIGEST_FILE_BYTES}-byte cap`, h.size);
    const raw = await h.read(0, h.size);
    kept = keep;
    return { parsed: parseDigest(raw), hash: sha256(raw), size: raw.length, handle: keep ? h : null };
  } finally {
    if (!kept) await h.close();
  }
}

/**
 * A digest.md that a commit replaced keeps a second name until the next call has looked at it:
 * `digest.md.<first 16 hex digits of the content's SHA-256>.<random>.prev`. A person's editor that
 * saves into the file it had open writes there; the next call finds the content no longer matches
 * the name and keeps the save (session.ts settleReplaced).
 */
export const REPLACED = /^digest\.md\.([0-9a-f]{16})\.[0-9a-f]{8}\.prev$/;
/** How long a replaced file is kept after its last change (session.ts settleReplaced, doctor's note). */
export const KEEP_REPLACED_MS = 5000;

/** Whether one of the store's replaced-digest names in `dir` is the file with inode `ino`. */
async function hasReplacedName(fs: MemoryFs, dir: string, ino: number): Promise<boolean> {
  try {
    for (const name of await fs.list(dir)) {
      if (REPLACED.test(name) && (await fs.identity(path.join(dir, name)))?.ino === ino) return true;
    }
  } catch {
    // a directory that cannot be listed proves nothing: the second name is refused
  }
  return false;
}

/**
 * How digest.md stands against the ledger: what the runtime last produced (`clean`), the digest before
 * the last entry, a patch (or restore) whose update a crash cut short (`interrupted`: the next `continue` call
 * completes it when the entry's digest passes the patch checks), or changed by someone else (`edited`:
 * the next `continue` call records it). §7.
 */
export type DigestState = ({ kind: "clean" } | { kind: "interrupted"; seq: number } | { kind: "edited"; after: number | null }) & {
  /** the hash of the digest the runtime last produced */
  known: string;
};

export function digestState(hash: string, last: LedgerEntry | null, meta: Meta | null): DigestState {
  const known = last?.digest_after ?? meta?.digest_sha256 ?? EMPTY_HASH;
  if (hash === known) return { kind: "clean", known };
  // meta.json is written after digest.md: when it already records this entry's result, the update
  // finished and digest.md was changed since (a person restoring the old digest), not left half-done
  const finished = meta !== null && meta.last_seq >= (last?.seq ?? 0) && meta.digest_sha256 === last?.digest_after;
  // a restore (`vvm memory restore`) commits exactly as a patch does, so it is completed the same way
  if (!finished && (last?.kind === "patch" || last?.kind === "restore") && last.digest_before === hash) return { kind: "interrupted", seq: last.seq, known };
  return { kind: "edited", after: last?.seq ?? null, known };
}

/** Rough characters per token, for the retained-facts budget (`--memory-budget` is in tokens). */
const CHARS_PER_TOKEN = 4;

/** The retained facts' budget in characters, for a budget in tokens. */
export const budgetChars = (tokens: number) => Math.max(0, Math.floor(tokens * CHARS_PER_TOKEN));

type RecallOptions = SyncOptions & {
  settings: DigestSettings;
  /** what recall ranks the facts against: the call's task and input */
  query: string;
  budgetChars: number;
};

/** The retained facts a call's Memory Context shows (§3 "Recall"). */
export async function recalledFacts(o: RecallOptions): Promise<Recalled> {
  const index = await syncFacts(o);
  return recall(index.search, o.query, o.budgetChars, o.settings.recall, o.settings.recentShare);
}
