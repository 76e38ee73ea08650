// ledger.jsonl: one JSON object per line, appended under the lock. Read from the end in chunks so
// the cost of a call does not depend on how long the ledger has grown.
import type { MemoryFs, ReadHandle } from "./fsio.ts";
import type { MemoryMode } from "../memory-port.ts";

export const LEDGER_VERSION = 1;

/** Highest sequence number: one more stays an exact integer in JSON and in JavaScript. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER - 1;
/**
 * How far one entry's seq may run ahead of the readable entry before it. The runtime writes exactly one
 * more; lines deleted by hand leave small gaps that must not make every later entry unreadable, while a
 * planted huge seq (which would exhaust the numbers of every later entry) is out of order.
 */
const MAX_SEQ_STEP = 1_000_000;

/**
 * Kinds this release writes. A reader meets any string: an entry of a kind it does not know (written by a
 * later release) is read like any other (its seq numbers the next entry, its hashes say what digest.md
 * should be) and contributes no facts unless its `retain` holds strings.
 */
export const ENTRY_KINDS = ["patch", "rejected", "external_edit", "repair", "restore", "forget"] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** Who wrote an entry: an agent's call… */
export interface CallProvenance {
  program: string;
  line: number;
  agent: string;
  model: string;
  mode: MemoryMode;
}

/** …or a person through a `vvm memory` command (`tool` is "vvm memory restore", …). */
export interface ToolProvenance {
  tool: string;
  /** the user name the command ran as, when known */
  user: string | null;
}

export type Provenance = CallProvenance | ToolProvenance;

/** The provenance of an agent's call, or null (a tool, a person's edit, nothing recorded, or junk). */
export function callProvenance(p: unknown): CallProvenance | null {
  return typeof p === "object" && p !== null && typeof (p as CallProvenance).agent === "string" ? (p as CallProvenance) : null;
}

/** The provenance of a `vvm memory` command, or null. */
export function toolProvenance(p: unknown): ToolProvenance | null {
  return typeof p === "object" && p !== null && typeof (p as ToolProvenance).tool === "string" ? (p as ToolProvenance) : null;
}

/** One fact a `forget` entry names: the entry that retained it and its place in that entry's `retain`. */
export interface FactRef {
  seq: number;
  index: number;
}

/**
 * What a purge leaves in `retain` in place of a fact: an id of the text removed (an HMAC under a key the
 * purge then forgets, so equal texts of one purge share it and no guess can be checked against it). Not a
 * string, so every reader (this release's and earlier ones) skips it as a fact, and the other facts keep
 * their places. (Purges before this release wrote the text's SHA-256.)
 */
export interface Tombstone {
  purged: string;
}

export interface LedgerEntry {
  v: number;
  ts: string;
  seq: number;
  kind: EntryKind;
  /** the new digest body, when this entry changed it (`patch`, `external_edit`, `restore`) */
  digest?: string;
  /** retained facts; a purged one is a Tombstone (readers take only the strings) */
  retain: string[];
  /** why (rejected, repair, notes on a partly refused patch); never contains patch text */
  reason?: string;
  /** SHA-256 of the whole digest.md before and after this entry */
  digest_before: string;
  digest_after: string;
  provenance: Provenance | null;
  /** `restore`: the entry whose digest was made current again (0: the empty digest a memory begins with) */
  restored_from?: number;
  /** `forget`: the facts removed from recall and search */
  forgotten?: FactRef[];
  /** `forget`: true when the ledger was also rewritten to remove their text (--purge) */
  purge?: boolean;
  /** set on an entry a purge rewrote: the seq of that purge's `forget` entry */
  purged_by?: number;
}

/** The facts a `forget` entry names (well-formed ones only: the entry is data from disk). */
export function forgottenBy(e: LedgerEntry): FactRef[] {
  if (e.kind !== "forget" || !Array.isArray(e.forgotten)) return [];
  const nat = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  return e.forgotten.filter((r): r is FactRef => typeof r === "object" && r !== null && nat(r.seq) && nat(r.index));
}

/** Chunk size for backward reads. */
const CHUNK = 64 * 1024;
/**
 * Longer than any entry the runtime writes: a digest of at most 100,000 characters (the highest
 * digest_limit) and 20 × 500 retain characters, even at six JSON bytes per character.
 */
export const MAX_ENTRY_BYTES = 2 * 1024 * 1024;

interface TailScan {
  /** file size at the time of the scan */
  size: number;
  /** bytes after the last newline: an interrupted append */
  tornBytes: number;
  /** the last complete, parsable, in-sequence entry */
  last: LedgerEntry | null;
  /** byte offsets of complete lines that are not valid entries, newest first */
  badLines: number[];
}

/** One ledger line as an entry, or null when it is not one (whether it is in sequence is judged apart: SequenceCheck). */
export function parseEntry(line: Buffer): LedgerEntry | null {
  // an entry is a JSON object: a line that cannot be one is told without a parse (a thrown SyntaxError costs
  // ~5 µs, and a damaged ledger can hold hundreds of thousands of such lines)
  if (!looksLikeObject(line)) return null;
  try {
    const x = JSON.parse(line.toString("utf8")) as unknown;
    if (typeof x !== "object" || x === null || Array.isArray(x)) return null;
    // an entry nests a few levels; a value nested thousands deep (a hostile line) would overflow the
    // stack of whatever walks or prints it later, so such a line is unreadable
    if (nestedDeeper(x, MAX_DEPTH)) return null;
    const e = x as Partial<LedgerEntry>;
    if (!Number.isSafeInteger(e.seq) || (e.seq as number) < 1 || (e.seq as number) > MAX_SEQ || typeof e.kind !== "string") return null;
    if (!Array.isArray(e.retain)) e.retain = [];
    return e as LedgerEntry;
  } catch {
    return null;
  }
}

/** Whether the line's first and last bytes other than JSON white space are `{` and `}`. */
function looksLikeObject(line: Buffer): boolean {
  const space = (b: number | undefined) => b === 0x20 || b === 0x09 || b === 0x0d || b === 0x0a;
  let a = 0;
  let z = line.length - 1;
  while (space(line[a])) a++;
  while (z > a && space(line[z])) z--;
  return line[a] === 0x7b && line[z] === 0x7d && z > a;
}

/**
 * The unreadable or out-of-sequence lines at `offsets` (newest first, as a scan lists them), for a warning:
 * one message however many there are (a damaged ledger can hold hundreds of thousands), naming the first few.
 */
export function describeBadLines(offsets: readonly number[]): string {
  if (offsets.length === 1) return `an unreadable or out-of-sequence line at byte ${offsets[0]}`;
  const shown = offsets.slice(-5).reverse().join(", ");
  return `${offsets.length} unreadable or out-of-sequence lines, at bytes ${offsets.length > 5 ? `${shown}, …` : shown}`;
}

/** Deeper than any entry this runtime writes (its deepest value is a provenance field inside the entry). */
const MAX_DEPTH = 16;

/** Whether `v` holds arrays or objects nested more than `max` deep (an explicit stack: no recursion). */
function nestedDeeper(v: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [x, depth] = stack.pop()!;
    if (typeof x !== "object" || x === null) continue;
    if (depth >= max) return true;
    for (const y of Array.isArray(x) ? x : Object.values(x)) if (typeof y === "object" && y !== null) stack.push([y, depth + 1]);
  }
  return false;
}

/** A complete, non-empty line a scan examined: its byte offset and its entry (null: unreadable). */
interface SeenLine {
  start: number;
  entry: LedgerEntry | null;
}

/**
 * What one scan of a ledger learned, kept by a store between calls so that an unchanged ledger is
 * not parsed again. It is used only while the file's bytes [from, end) are byte for byte equal to
 * `bytes` (compared on every call, so an edit of any kind, at any time, is seen); bytes appended
 * after `end` are parsed and added. Every result equals what a fresh scan of the file would return.
 */
export interface TailCache {
  from: number;
  end: number;
  bytes: Buffer;
  /** every non-empty complete line in [from, end) that a fresh scan would examine, oldest first */
  lines: SeenLine[];
  /** `lines` reach as far back as a fresh scan may read (the file's start or the scan cap) */
  complete: boolean;
}

/**
 * The torn tail (`tornBytes` after the last line break) parsed as an entry, when it is one whole entry
 * that only lacks its line break (an editor that drops the final newline); null otherwise.
 */
export async function wholeTail(fs: MemoryFs, file: string, size: number, tornBytes: number): Promise<LedgerEntry | null> {
  if (tornBytes === 0 || tornBytes > MAX_ENTRY_BYTES) return null;
  const h = await fs.openRead(file);
  if (h === null) return null;
  try {
    return parseEntry(await h.read(size - tornBytes, tornBytes));
  } finally {
    await h.close();
  }
}

/** Lowest byte a fresh scan of a file without a torn tail reads. */
function lowestRead(size: number, maxScanBytes: number): number {
  return Math.max(0, size - Math.max(CHUNK, maxScanBytes));
}

function emptyScan(size: number): TailScan {
  return { size, tornBytes: 0, last: null, badLines: [] };
}

/**
 * Scan the ledger backwards for the torn tail, the last entry and unreadable lines near the end. The
 * last entry is judged in sequence (SequenceCheck) against what precedes it in the scan window: every
 * line that starts in the last 32 KiB, and at least one earlier entry (so a planted entry far ahead of the ones
 * before it is out of sequence). Never reads more than `maxScanBytes`. With `caches` (one map per
 * store, keyed by file), a ledger that has not changed since the previous call is not parsed again,
 * and one that only grew has just its new lines parsed. (Retained facts come from the recall index,
 * fact-index.ts.)
 */
export async function scanTail(fs: MemoryFs, file: string, maxScanBytes: number, caches?: Map<string, TailCache>): Promise<TailScan> {
  const h = await fs.openRead(file);
  if (h === null) {
    caches?.delete(file);
    return emptyScan(0);
  }
  try {
    if (caches) {
      const hit = await fromCache(h, caches.get(file), maxScanBytes);
      if (hit) {
        touch(caches, file, hit.cache);
        return hit.scan;
      }
    }
    const { scan, cache } = await freshScan(h, maxScanBytes, caches !== undefined);
    if (caches) {
      if (cache) touch(caches, file, cache);
      else caches.delete(file);
    }
    return scan;
  } finally {
    await h.close();
  }
}

/** Most ledgers, and most window bytes in all, whose tails one store keeps (least recently used dropped first). */
const MAX_CACHED = 64;
const MAX_CACHED_BYTES = 16 * 1024 * 1024;

function touch(caches: Map<string, TailCache>, file: string, cache: TailCache) {
  caches.delete(file);
  caches.set(file, cache);
  let bytes = 0;
  for (const c of caches.values()) bytes += c.bytes.length;
  for (const [oldest, c] of caches) {
    if (caches.size <= MAX_CACHED && bytes <= MAX_CACHED_BYTES) break;
    caches.delete(oldest);
    bytes -= c.bytes.length;
  }
}

/** Half a chunk: the first chunk read holds the line that starts the window, unless a line is longer. */
const JUDGING_WINDOW = CHUNK / 2;

/**
 * The lines a scan examined, newest first. The scan has examined enough once it has seen two entries
 * and reached the start of the judging window (the last 32 KiB of the file): a rule on positions alone,
 * so a scan from the cache stops exactly where a fresh one does. `result` then judges the sequence
 * numbers, oldest first.
 */
class Examined {
  readonly lines: SeenLine[] = [];
  private entries = 0;
  private reached = false;
  /** the window's first byte */
  private readonly floor: number;
  constructor(size: number) {
    this.floor = Math.max(0, size - JUDGING_WINDOW);
  }

  add(start: number, entry: LedgerEntry | null): void {
    this.lines.push({ start, entry });
    if (entry !== null) this.entries++;
    if (start <= this.floor) this.reached = true;
  }

  get enough(): boolean {
    return this.entries >= 2 && this.reached;
  }

  result(size: number, tornBytes: number): TailScan {
    const scan: TailScan = { size, tornBytes, last: null, badLines: [] };
    const inOrder = inSequence(this.lines.map((l) => l.entry).reverse()).reverse();
    this.lines.forEach(({ start }, i) => {
      const entry = inOrder[i];
      if (entry === null) scan.badLines.push(start);
      else scan.last ??= entry;
    });
    return scan;
  }
}

/**
 * Judges entries oldest first: each seq must be greater than the seq of the readable entry before it, by
 * at most MAX_SEQ_STEP. The first entry judged has nothing to follow.
 */
export class SequenceCheck {
  /** `prev`: the seq of the entry before the first one judged, when known */
  constructor(private prev: number | null = null) {}

  /** Whether `e` is in sequence. One that is not is skipped: the next entry is judged against the one before it. */
  accept(e: LedgerEntry): boolean {
    const prev = this.prev;
    if (prev !== null && (e.seq <= prev || e.seq > prev + MAX_SEQ_STEP)) return false;
    this.prev = e.seq;
    return true;
  }
}

/** Entries oldest first, with those out of sequence replaced by null (SequenceCheck). */
function inSequence(entries: (LedgerEntry | null)[]): (LedgerEntry | null)[] {
  const check = new SequenceCheck();
  return entries.map((e) => (e !== null && check.accept(e) ? e : null));
}

/** What a fresh scan would find in these lines, or null when it would need older lines. */
function walk(cache: TailCache, lowest: number): { scan: TailScan; stop: number; early: boolean } | null {
  const seen = new Examined(cache.end);
  const { lines } = cache;
  for (let i = lines.length - 1; i >= 0; i--) {
    const { start, entry } = lines[i];
    // a fresh scan reads no further back than `lowest`, and parses a line only when it also read
    // the newline before it (or the line starts the file)
    if (start === 0 ? lowest !== 0 : start - 1 < lowest) return { scan: seen.result(cache.end, 0), stop: i + 1, early: false };
    seen.add(start, entry);
    if (seen.enough) return { scan: seen.result(cache.end, 0), stop: i, early: true };
  }
  return cache.complete ? { scan: seen.result(cache.end, 0), stop: 0, early: false } : null;
}

async function fromCache(h: ReadHandle, c: TailCache | undefined, maxScanBytes: number): Promise<{ scan: TailScan; cache: TailCache } | null> {
  const size = h.size;
  if (!c || size < c.end || size - c.from > Math.max(CHUNK, maxScanBytes)) return null;
  const buf = await h.read(c.from, size - c.from);
  const known = c.end - c.from;
  if (buf.length !== size - c.from || !buf.subarray(0, known).equals(c.bytes)) return null;
  if (size > c.end && buf[buf.length - 1] !== 0x0a) return null; // a torn tail: the fresh scan measures and reports it
  const lines = c.lines.slice();
  let at = known;
  while (at < buf.length) {
    const nl = buf.indexOf(0x0a, at);
    if (nl > at) lines.push({ start: c.from + at, entry: parseEntry(buf.subarray(at, nl)) });
    at = nl + 1;
  }
  const next: TailCache = { from: c.from, end: size, bytes: buf, lines, complete: c.complete };
  const lowest = lowestRead(size, maxScanBytes);
  const got = walk(next, lowest);
  if (got === null) return null;
  return { scan: got.scan, cache: trim(next, got.stop, got.early, lowest) };
}

/** Drop the lines older than the walk needed; keep the newline before the oldest kept line in the window. */
function trim(c: TailCache, stop: number, early: boolean, lowest: number): TailCache {
  if (stop === 0 && !early) return c;
  const from = early ? Math.max(0, c.lines[stop].start - 1) : Math.max(c.from, lowest);
  // an early stop says nothing about older lines: a later walk that needs them rescans
  return { from, end: c.end, bytes: c.bytes.subarray(from - c.from), lines: c.lines.slice(stop), complete: c.complete && !early };
}

async function freshScan(h: ReadHandle, maxScanBytes: number, keep: boolean): Promise<{ scan: TailScan; cache: TailCache | null }> {
  const seen = new Examined(h.size);
  const chunks: Buffer[] = [];
  const lines = new BackwardLines(h, { maxBytes: maxScanBytes, onChunk: keep ? (chunk) => chunks.push(chunk) : undefined });
  const done = (from: number, complete: boolean) => {
    const scan = seen.result(h.size, lines.tornBytes);
    // a torn tail is never cached (it may be gigabytes, and the next call repairs it)
    if (!keep || lines.tornBytes > 0) return { scan, cache: null };
    const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks.reverse());
    // `all` covers [lines.pos, size): the chunks read, newest first in `chunks`
    return { scan, cache: { from, end: h.size, bytes: Buffer.from(all.subarray(from - lines.pos)), lines: seen.lines.slice().reverse(), complete } };
  };
  for await (const batch of lines) {
    for (const line of batch) {
      seen.add(line.start, line.bytes === null ? null : parseEntry(line.bytes));
      if (seen.enough) return done(Math.max(0, line.start - 1), false);
    }
  }
  return done(lines.pos, true);
}

/** A complete, non-empty line: its byte offset, its length and its bytes without the line break (null: longer than the reader holds). */
export interface RawLine {
  start: number;
  length: number;
  bytes: Buffer | null;
}

/**
 * The complete lines of an open file from its end backwards, in chunks of 64 KiB: one batch per chunk,
 * newest line first. The cost depends on how far the reader goes, never on the file's length. Bytes
 * after the last line break (an interrupted append) are measured, however long, without being held, and
 * are not a line.
 */
export class BackwardLines implements AsyncIterable<RawLine[]> {
  /** bytes after the last line break; known once the first batch is read */
  tornBytes = 0;
  /** the lowest byte read so far */
  pos: number;

  constructor(
    private readonly h: ReadHandle,
    private readonly opts: {
      /** read no further back than this many bytes below the end of the last complete line */
      maxBytes?: number;
      /** lines longer than this are yielded with `bytes: null`, never held */
      maxLineBytes?: number;
      /** every chunk read from the one with the last line break on, newest first */
      onChunk?: (chunk: Buffer) => void;
    } = {},
  ) {
    this.pos = h.size;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<RawLine[]> {
    const { h } = this;
    const maxBytes = this.opts.maxBytes ?? Infinity;
    const maxLine = this.opts.maxLineBytes ?? Infinity;
    let first = true;
    let dataEnd = h.size; // end of the last complete line once known; maxBytes counts from there
    // the end of a line that began in an older chunk, in file order, its line break last
    let pending: Buffer[] = [];
    let pendingLength = 0;
    while (this.pos > 0 && (first || dataEnd - this.pos < maxBytes)) {
      const pos = this.pos;
      const start = Math.max(0, pos - (first ? CHUNK : Math.min(CHUNK, maxBytes - (dataEnd - pos))));
      const chunk = await h.read(start, pos - start);
      this.pos = start;
      let end = chunk.length; // chunk[0, end) is not split into lines yet
      if (first) {
        const nl = chunk.lastIndexOf(0x0a);
        if (nl < 0 && start > 0) continue; // a torn line longer than a chunk: find where it starts
        first = false;
        this.tornBytes = h.size - (start + nl + 1);
        dataEnd = start + nl + 1;
        end = nl + 1;
      }
      this.opts.onChunk?.(chunk);
      const batch: RawLine[] = [];
      while (end > 0) {
        // the line ending at `end` (or running on into `pending`) starts after the line break before it
        const from = pendingLength > 0 ? end - 1 : end - 2;
        const cut = from >= 0 ? chunk.lastIndexOf(0x0a, from) : -1;
        if (cut < 0 && start > 0) {
          pendingLength += end;
          if (pendingLength > maxLine) pending = [];
          else pending.unshift(chunk.subarray(0, end));
          break;
        }
        const lineStart = cut + 1;
        const length = end - lineStart + pendingLength - 1;
        if (length > 0) {
          let bytes: Buffer | null = null;
          if (length <= maxLine) bytes = pendingLength === 0 ? chunk.subarray(lineStart, end - 1) : Buffer.concat([chunk.subarray(lineStart, end), ...pending]).subarray(0, length);
          batch.push({ start: start + lineStart, length, bytes });
        }
        pending = [];
        pendingLength = 0;
        end = lineStart;
      }
      if (batch.length > 0) yield batch;
    }
  }
}

/** Chunk size for reading a whole ledger front to back. */
const FORWARD_CHUNK = 1024 * 1024;

/**
 * The complete lines of an open file from `from` (its start, or the start of a line), in chunks of 1 MiB,
 * oldest first, up to the size the file had when it was opened; then `tornBytes` is what followed the
 * last line break.
 */
export class ForwardLines implements AsyncIterable<RawLine[]> {
  tornBytes = 0;

  constructor(
    private readonly h: ReadHandle,
    /** lines longer than this are yielded with `bytes: null`, never held */
    private readonly maxLineBytes = Infinity,
    private readonly from = 0,
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<RawLine[]> {
    const { h, maxLineBytes } = this;
    let pending: Buffer[] = [];
    let pendingLength = 0;
    let lineStart = this.from;
    for (let pos = this.from; pos < h.size; ) {
      const chunk = await h.read(pos, Math.min(FORWARD_CHUNK, h.size - pos));
      if (chunk.length === 0) break; // cut short since it was opened
      const batch: RawLine[] = [];
      let at = 0;
      for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, at)) {
        const length = pendingLength + nl - at;
        if (length > 0) {
          let bytes: Buffer | null = null;
          if (length <= maxLineBytes) bytes = pendingLength === 0 ? chunk.subarray(at, nl) : Buffer.concat([...pending, chunk.subarray(at, nl)]);
          batch.push({ start: lineStart, length, bytes });
        }
        pending = [];
        pendingLength = 0;
        at = nl + 1;
        lineStart = pos + at;
      }
      pendingLength += chunk.length - at;
      if (pendingLength > maxLineBytes) pending = [];
      else if (at < chunk.length) pending.push(chunk.subarray(at));
      pos += chunk.length;
      if (batch.length > 0) yield batch;
    }
    this.tornBytes = pendingLength;
  }
}

export function serializeEntry(e: LedgerEntry): Buffer {
  // JSON.stringify escapes U+2028/9 and never emits a raw newline, so this is exactly one line
  return Buffer.from(JSON.stringify(e) + "\n", "utf8");
}

/**
 * Every line of an open ledger, oldest first, to `visit`: its byte offset and its entry, or null for a line
 * that is unreadable, out of sequence or longer than `maxLineBytes`. Resolves to the torn tail's length.
 * Reads in chunks, so a long ledger is never held whole.
 */
export async function forEachLine(h: ReadHandle, visit: (start: number, entry: LedgerEntry | null) => void, maxLineBytes = Infinity): Promise<{ tornBytes: number }> {
  const check = new SequenceCheck();
  const lines = new ForwardLines(h, maxLineBytes);
  for await (const batch of lines) {
    for (const { start, bytes } of batch) {
      const e = bytes === null ? null : parseEntry(bytes);
      visit(start, e !== null && check.accept(e) ? e : null);
    }
  }
  return { tornBytes: lines.tornBytes };
}

/** Read the whole ledger (tools and tests; the runtime itself only reads the tail). */
export async function readAll(fs: MemoryFs, file: string): Promise<{ entries: LedgerEntry[]; badLines: number[]; tornBytes: number }> {
  const entries: LedgerEntry[] = [];
  const badLines: number[] = [];
  const h = await fs.openRead(file);
  if (h === null) return { entries, badLines, tornBytes: 0 };
  try {
    const { tornBytes } = await forEachLine(h, (start, e) => (e === null ? badLines.push(start) : entries.push(e)));
    return { entries, badLines, tornBytes };
  } finally {
    await h.close();
  }
}
