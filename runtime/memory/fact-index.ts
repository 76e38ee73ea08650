// recall.jsonl: every retained fact of ledger.jsonl, in ledger order, without the digests that make
// most of a ledger's bytes, so recall never reads past them. It is derived and never authoritative:
// each use checks it against the ledger (the last line it covers must still be there, byte for
// byte), extends it with lines appended since, and rebuilds it from the ledger when it is missing,
// unreadable or no longer matches. Deleting it loses nothing. A `forget` entry removes the facts it names
// (they are never recalled again). Each line is signed (index-key.ts): a line that is not, or not with
// this user's key, makes the index damaged. spec/memory.md §3 "Recall".
import path from "node:path";
import type { MemoryFs, ReadHandle } from "./fsio.ts";
import { sign, verify } from "./index-key.ts";
import { sha256 } from "./keys.ts";
import { forgottenBy, ForwardLines, MAX_ENTRY_BYTES, parseEntry, SequenceCheck } from "./ledger.ts";
import { FactSearch, type Fact } from "./recall.ts";

/**
 * 2: batches carry the facts their range's `forget` entries remove (an index of version 1 knew no
 * forgetting, so it is rebuilt). 3: each line is signed.
 */
const INDEX_VERSION = 3;

/** Where an index stands against its ledger. */
interface Covered {
  /** the ledger file's inode: a ledger rewritten by a tool (sed -i, an editor saving a new file) is a new file */
  ino: number;
  /** ledger bytes [0, end) are covered */
  end: number;
  /** start of the last non-empty line before `end`, and the SHA-256 of its bytes (the check that the ledger is still the one indexed) */
  lastStart: number;
  lastHash: string;
  /** seq of the last in-sequence entry, which the next entry must follow */
  seq: number | null;
}

/** One line of recall.jsonl: the facts of ledger bytes [start, end). */
interface Batch extends Covered {
  v: number;
  start: number;
  facts: [number, number, string, string][];
  /** [seq, index] of the facts the range's `forget` entries remove (facts of this batch or of earlier ones) */
  forget: [number, number][];
}

/** An index as one process holds it between calls (by index file). */
export interface FactIndex {
  covered: Covered;
  search: FactSearch;
  /** recall.jsonl as last read or written: its inode, its size and its last line's signature (null: not on disk) */
  file: { ino: number; size: number; mac: string } | null;
}

const EMPTY: Covered = { ino: 0, end: 0, lastStart: 0, lastHash: "", seq: null };

export interface SyncOptions {
  fs: MemoryFs;
  ledger: string;
  index: string;
  /** the ledger's size now (its complete lines are indexed; a torn tail is not) */
  ledgerSize: number;
  /** one per store */
  cache: Map<string, FactIndex>;
  /** write what was learned to recall.jsonl (under the lock, in `continue`); otherwise only in memory */
  persist: boolean;
  /** what recall.jsonl's lines are signed with (index-key.ts); null: none at hand, so recall.jsonl is neither read nor written */
  key: Buffer | null;
  warn: (message: string) => void;
}

/** The facts of the ledger as it is now, from the cache, recall.jsonl or the ledger itself. */
export async function syncFacts(o: SyncOptions): Promise<FactIndex> {
  const found = await fromDisk(o);
  let idx = found === "foreign" ? null : found;
  let rebuilt = false;
  const ledger = new LedgerOpener(o);
  let batch: Batch | null;
  try {
    if (idx === null || !(await stillMatches(ledger, idx.covered, o.ledgerSize))) {
      idx = { covered: EMPTY, search: new FactSearch(), file: null };
      rebuilt = true;
    }
    batch = await readLedger(ledger, idx.covered, o.ledgerSize);
  } finally {
    await ledger.close();
  }
  if (batch !== null) {
    idx.search.add(batch.facts.map(([seq, i, ts, text]) => ({ seq, i, ts, text })));
    idx.search.remove(batch.forget.map(([seq, index]) => ({ seq, index })));
  }
  if (batch !== null) idx.covered = { ino: batch.ino, end: batch.end, lastStart: batch.lastStart, lastHash: batch.lastHash, seq: batch.seq };
  // written whole when rebuilt, absent or torn; else the new lines' facts are appended
  if (o.persist && (rebuilt || batch !== null || idx.file === null)) idx.file = await write(o, idx, rebuilt ? null : batch);
  o.cache.set(o.index, idx);
  return idx;
}

/**
 * The cached index while recall.jsonl is the file it was read from or written as; else the file read
 * afresh (null: absent or unusable; "foreign": not signed for this memory with this user's key).
 */
async function fromDisk(o: SyncOptions): Promise<FactIndex | null | "foreign"> {
  const cached = o.cache.get(o.index);
  if (o.key === null) return null;
  let id: { ino: number; size: number } | null;
  try {
    id = await o.fs.identity(o.index);
  } catch {
    return null;
  }
  if (cached && (cached.file === null ? id === null : id !== null && id.ino === cached.file.ino && id.size === cached.file.size)) return cached;
  if (id === null) return null;
  const { size } = id;
  const damaged = () => {
    o.warn("recall.jsonl is damaged or does not match ledger.jsonl; it is rebuilt from the ledger (nothing is lost: it is derived)");
    return null;
  };
  // an index is never much larger than its ledger: a bigger one (a planted file) is not even read
  if (size > maxIndexBytes(o.ledgerSize)) return damaged();
  let raw: Buffer | null;
  try {
    raw = await o.fs.readFile(o.index);
  } catch (err) {
    o.warn(`recall.jsonl cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); recall uses the ledger directly`);
    return null;
  }
  if (raw === null) return null;
  if (raw.length > maxIndexBytes(o.ledgerSize)) return damaged();
  let parsed: ReturnType<typeof parseIndex>;
  try {
    parsed = parseIndex(raw, o.key, memoryOf(o.index));
  } catch {
    // whatever a crafted file makes parsing do, it only ever means "rebuild"
    parsed = null;
  }
  // signed by another user's runtime (a shared project), for another memory, or before signatures: rebuilt, nothing to warn about
  if (parsed === "foreign") return "foreign";
  if (parsed === null) return damaged();
  // after a torn append (a killed writer) the next write replaces the whole file rather than add to it
  return { covered: parsed.covered, search: parsed.search, file: parsed.torn ? null : { ino: id.ino, size: raw.length, mac: parsed.mac } };
}

/** Which memory an index belongs to, as its signatures name it: its directory's name (the escaped key), the same wherever the project moves. */
function memoryOf(index: string): string {
  return path.basename(path.dirname(index));
}

/**
 * What a line's signature covers, before the batch's JSON: the memory and the previous line's signature.
 * A line is valid only in its own memory's index, right after the line it followed when written, so lines
 * of other indexes (even this user's) cannot be spliced in.
 */
const context = (memory: string, prev: string) => `${memory}\n${prev}\n`;

/** One line of recall.jsonl: the batch as JSON with its signature as the first member (exported: tests sign crafted batches). */
export function signedLine(key: Buffer, memory: string, prev: string, batch: object): { line: Buffer; mac: string } {
  // encoded once, then signed and written as those bytes (a rebuilt index is one line of ~100 bytes a fact)
  const body = Buffer.from(JSON.stringify(batch), "utf8");
  const mac = sign(key, context(memory, prev), body);
  return { line: Buffer.concat([Buffer.from(`{"mac":"${mac}",`), body.subarray(1), NEWLINE]), mac };
}
const NEWLINE = Buffer.from("\n");

/** `{"mac":"<64 hex digits>",`: how every line starts; the batch's JSON is `{` and the rest of the line. */
const MAC = /^\{"mac":"([0-9a-f]{64})",$/;
const MAC_BYTES = '{"mac":"'.length + 64 + '",'.length;
const OPEN = Buffer.from("{");

/**
 * recall.jsonl parsed; "foreign" when a complete line is not signed with `key` for this memory after the
 * line before it; null when a signed line is not a batch continuing the one before it. Bytes after the last
 * line break are an append a killed writer left unfinished: not an error.
 */
function parseIndex(raw: Buffer, key: Buffer, memory: string): { covered: Covered; search: FactSearch; torn: boolean; mac: string } | "foreign" | null {
  let covered = EMPTY;
  const facts: Fact[] = [];
  const forget: { seq: number; index: number }[] = [];
  let prev = "";
  let start = 0;
  // line by line over the bytes: the signature is checked on them as they are, nothing long is copied
  for (let nl = raw.indexOf(0x0a); nl >= 0; start = nl + 1, nl = raw.indexOf(0x0a, start)) {
    const line = raw.subarray(start, nl);
    const mac = MAC.exec(line.toString("latin1", 0, MAC_BYTES));
    if (mac === null || !verify(key, mac[1], context(memory, prev), OPEN, line.subarray(MAC_BYTES))) return "foreign";
    prev = mac[1];
    let b: Batch;
    try {
      // the signature is one more member, which the checks below pass over
      b = JSON.parse(line.toString("utf8")) as Batch;
    } catch {
      return null;
    }
    if (!isBatch(b) || !continues(covered, b)) return null;
    // indexed loops, no destructuring: an index holds up to a few hundred thousand facts
    for (let k = 0; k < b.facts.length; k++) {
      const f = b.facts[k];
      facts.push({ seq: f[0], i: f[1], ts: f[2], text: f[3] });
    }
    for (let k = 0; k < b.forget.length; k++) forget.push({ seq: b.forget[k][0], index: b.forget[k][1] });
    covered = { ino: b.ino, end: b.end, lastStart: b.lastStart, lastHash: b.lastHash, seq: b.seq };
  }
  const search = new FactSearch();
  search.add(facts);
  // a forget names only facts retained before it, so applying every one after adding every fact is the same
  search.remove(forget);
  return { covered, search, torn: start !== raw.length, mac: prev };
}

function isBatch(b: unknown): b is Batch {
  if (typeof b !== "object" || b === null) return false;
  const x = b as Partial<Batch>;
  const nat = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  return (
    x.v === INDEX_VERSION &&
    nat(x.ino) &&
    nat(x.start) &&
    nat(x.end) &&
    nat(x.lastStart) &&
    typeof x.lastHash === "string" &&
    (x.seq === null || nat(x.seq)) &&
    Array.isArray(x.facts) &&
    x.facts.every((f) => Array.isArray(f) && f.length === 4 && nat(f[0]) && nat(f[1]) && typeof f[2] === "string" && typeof f[3] === "string") &&
    Array.isArray(x.forget) &&
    x.forget.every((f) => Array.isArray(f) && f.length === 2 && nat(f[0]) && nat(f[1]))
  );
}

/**
 * Whether `b` is a batch our writer could have written after `prev`: it starts where `prev` ends and
 * covers bytes (only a whole index of an empty ledger covers none, and then holds nothing), its last line
 * lies in its range, its facts and forgets belong to entries after `prev.seq` and up to its own `seq`, in
 * order. A crafted index that claims more (facts of no ledger entry, a seq that would make every real
 * entry out of sequence) is damaged, and rebuilt.
 */
function continues(prev: Covered, b: Batch): boolean {
  if (b.start !== prev.end) return false;
  if (b.end === b.start) return b.start === 0 && b.seq === null && b.facts.length === 0 && b.forget.length === 0;
  if (b.end < b.start || b.lastStart < b.start || b.lastStart >= b.end) return false;
  if (prev.seq !== null && (b.seq === null || b.seq < prev.seq)) return false;
  let last = prev.seq ?? 0;
  for (const [seq] of b.facts) {
    if (b.seq === null || seq <= (prev.seq ?? 0) || seq > b.seq || seq < last) return false;
    last = seq;
  }
  return b.forget.every(([seq]) => b.seq !== null && seq <= b.seq);
}

/** The largest recall.jsonl a ledger of `ledgerSize` bytes can have (a fact costs the index a few dozen bytes more than the ledger). */
function maxIndexBytes(ledgerSize: number): number {
  return Math.min(8 * ledgerSize + 1024 * 1024, 256 * 1024 * 1024);
}

/**
 * Whether the ledger is the file indexed and still holds, at the same place, the last line the index
 * covers. (An edit in place that keeps both is not seen: deleting recall.jsonl rebuilds it.)
 */
async function stillMatches(ledger: LedgerOpener, c: Covered, ledgerSize: number): Promise<boolean> {
  if (c.end === 0) return true;
  if (c.end > ledgerSize || c.lastStart >= c.end || c.end - c.lastStart > MAX_ENTRY_BYTES + 1) return false;
  const h = await ledger.open();
  if (h === null || h.ino !== c.ino) return false;
  const last = await h.read(c.lastStart, c.end - c.lastStart);
  return last.length === c.end - c.lastStart && last[last.length - 1] === 0x0a && sha256(last.subarray(0, -1)) === c.lastHash;
}

/** The ledger, opened on first need and once for both the check and the read (an open costs more than the read). */
class LedgerOpener {
  private handle: Promise<ReadHandle | null> | null = null;
  constructor(private readonly o: Pick<SyncOptions, "fs" | "ledger">) {}
  open(): Promise<ReadHandle | null> {
    return (this.handle ??= this.o.fs.openRead(this.o.ledger));
  }
  async close(): Promise<void> {
    await (await this.handle?.catch(() => null))?.close();
  }
}

/** The facts of the complete ledger lines after `from.end` (null when there are none). */
async function readLedger(ledger: LedgerOpener, from: Covered, ledgerSize: number): Promise<Batch | null> {
  if (ledgerSize <= from.end) return null;
  const h = await ledger.open();
  if (h === null) return null;
  const batch: Batch = { v: INDEX_VERSION, start: from.end, ...from, ino: h.ino, facts: [], forget: [] };
  const check = new SequenceCheck(from.seq);
  let last: Buffer | null = null;
  for await (const lines of new ForwardLines(h, MAX_ENTRY_BYTES, from.end)) {
    for (const line of lines) {
      batch.end = line.start + line.length + 1;
      batch.lastStart = line.start;
      last = line.bytes;
      const e = line.bytes === null ? null : parseEntry(line.bytes);
      if (e === null || !check.accept(e)) continue;
      batch.seq = e.seq;
      e.retain.forEach((t, i) => {
        if (typeof t === "string") batch.facts.push([e.seq, i, typeof e.ts === "string" ? e.ts : "", t]);
      });
      for (const r of forgottenBy(e)) batch.forget.push([r.seq, r.index]);
    }
  }
  if (batch.end === from.end) return null;
  // only the last line is checked later (hashed once here, not every line on the way); one too long to
  // hold cannot be checked: the next use rebuilds (until a line follows it)
  batch.lastHash = last === null ? "" : sha256(last);
  return batch;
}

/**
 * Write what was learned: a rebuilt index as a whole new file (replacing the old by rename), a
 * continuation as one appended line. Derived, so never fsynced. A file that cannot be written (a
 * link where recall.jsonl belongs, a full disk) is reported and left: recall still works in memory.
 */
async function write(o: SyncOptions, idx: FactIndex, batch: Batch | null): Promise<FactIndex["file"]> {
  const { key } = o;
  if (key === null) return null;
  const memory = memoryOf(o.index);
  try {
    if (batch !== null && idx.file !== null) {
      const { line, mac } = signedLine(key, memory, idx.file.mac, batch);
      await o.fs.append(o.index, line, { sync: false });
      const id = await o.fs.identity(o.index);
      return id === null ? null : { ino: id.ino, size: idx.file.size + line.length, mac };
    }
    // forgotten facts are left out: a whole index holds only what is retained
    const whole: Batch = { v: INDEX_VERSION, start: 0, ...idx.covered, facts: idx.search.live().map((f) => [f.seq, f.i, f.ts, f.text]), forget: [] };
    const { line, mac } = signedLine(key, memory, "", whole);
    const ino = await o.fs.writeAtomic(o.index, line, undefined, { sync: false });
    return { ino, size: line.length, mac };
  } catch (err) {
    o.warn(`recall.jsonl not written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); recall reads the ledger again next time`);
    return null;
  }
}

/**
 * How recall.jsonl stands against the ledger, read without writing (`vvm memory doctor`): `missing` (a
 * `continue` call builds it), `damaged` (`detail` says how), `foreign` (not signed for this memory with this
 * user's key: written by another user's runtime, or changed since), `unchecked` (this user has no key to
 * check it with), `stale` (the ledger is not the one indexed, or was cut or edited), or `ok` (it may cover
 * less than the ledger: the next call adds the rest).
 */
export async function indexState(
  o: Pick<SyncOptions, "fs" | "ledger" | "index" | "ledgerSize" | "key">,
): Promise<{ state: "ok" | "missing" | "damaged" | "foreign" | "unchecked" | "stale"; detail: string | null }> {
  let detail: string | null = null;
  if (o.key === null) {
    const there = await o.fs.identity(o.index).catch(() => null);
    return { state: there === null ? "missing" : "unchecked", detail: null };
  }
  const opts: SyncOptions = { ...o, cache: new Map(), persist: false, warn: (m) => (detail = m) };
  const idx = await fromDisk(opts);
  if (idx === "foreign") return { state: "foreign", detail: null };
  if (idx === null) return detail !== null ? { state: "damaged", detail } : { state: "missing", detail: null };
  const ledger = new LedgerOpener(o);
  try {
    if (!(await stillMatches(ledger, idx.covered, o.ledgerSize))) return { state: "stale", detail: null };
  } finally {
    await ledger.close();
  }
  return { state: "ok", detail: null };
}
