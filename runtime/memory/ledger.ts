// ledger.jsonl: one JSON object per line, appended under the lock. Read from the end in chunks so
// the cost of a call does not depend on how long the ledger has grown.
import type { MemoryFs } from "./fsio.ts";
import type { MemoryMode } from "../memory-port.ts";

export const LEDGER_VERSION = 1;

export type EntryKind = "patch" | "rejected" | "external_edit" | "repair";

export interface Provenance {
  program: string;
  line: number;
  agent: string;
  model: string;
  mode: MemoryMode;
}

export interface LedgerEntry {
  v: number;
  ts: string;
  seq: number;
  kind: EntryKind;
  /** the new digest body, when this entry changed it */
  digest?: string;
  retain: string[];
  /** why (rejected, repair, notes on a partly refused patch); never contains patch text */
  reason?: string;
  /** SHA-256 of the whole digest.md before and after this entry */
  digest_before: string;
  digest_after: string;
  provenance: Provenance | null;
}

/** Chunk size for backward reads. */
const CHUNK = 64 * 1024;

export interface TailScan {
  /** file size at the time of the scan */
  size: number;
  /** bytes after the last newline: an interrupted append */
  tornBytes: number;
  /** the last complete, parsable entry */
  last: LedgerEntry | null;
  /** retained facts, newest first, within the character budget */
  retains: string[];
  /** byte offsets of complete lines that are not valid entries */
  badLines: number[];
}

function parseEntry(line: Buffer): LedgerEntry | null {
  try {
    const x = JSON.parse(line.toString("utf8")) as unknown;
    if (typeof x !== "object" || x === null || Array.isArray(x)) return null;
    const e = x as Partial<LedgerEntry>;
    if (typeof e.seq !== "number" || typeof e.kind !== "string") return null;
    if (!Array.isArray(e.retain)) e.retain = [];
    return e as LedgerEntry;
  } catch {
    return null;
  }
}

/**
 * Scan the ledger backwards: the torn tail, the last entry, and the newest `retain` facts whose
 * total length (plus 3 characters of list markup each) fits `retainChars`. Stops as soon as both
 * are known, and never reads more than `maxScanBytes`.
 */
export async function scanTail(fs: MemoryFs, file: string, retainChars: number, maxScanBytes: number): Promise<TailScan> {
  const scan: TailScan = { size: 0, tornBytes: 0, last: null, retains: [], badLines: [] };
  const h = await fs.openRead(file);
  if (h === null) return scan;
  try {
    scan.size = h.size;
    let pos = h.size;
    let carry: Buffer = Buffer.alloc(0);
    let first = true;
    let used = 0;
    let budgetFull = retainChars <= 0;
    // the cap does not apply while looking for the end of the last complete line: a torn tail must
    // be measured exactly, however long
    let dataEnd = h.size; // end of the last complete line once known; the cap counts from there
    while (pos > 0 && (first || dataEnd - pos < maxScanBytes)) {
      const start = Math.max(0, pos - (first ? CHUNK : Math.min(CHUNK, maxScanBytes - (dataEnd - pos))));
      const chunk = await h.read(start, pos - start);
      let buf = carry.length ? Buffer.concat([chunk, carry]) : chunk;
      if (first) {
        const nl = buf.lastIndexOf(0x0a);
        if (nl < 0 && start > 0) {
          // a torn line longer than a chunk: keep reading to find where it starts
          pos = start;
          continue;
        }
        first = false;
        scan.tornBytes = h.size - (start + nl + 1);
        dataEnd = start + nl + 1;
        buf = buf.subarray(0, nl + 1);
      }
      // buf = [partial line of an earlier chunk…] + complete lines ending in "\n"
      let end = buf.length;
      let cut = end >= 2 ? buf.lastIndexOf(0x0a, end - 2) : -1;
      while (end > 0) {
        const lineStart = cut + 1;
        if (cut < 0 && start > 0) break; // the line continues in the previous chunk
        const line = buf.subarray(lineStart, end - 1);
        if (line.length > 0) {
          const entry = parseEntry(line);
          if (entry === null) {
            scan.badLines.push(start + lineStart);
          } else {
            if (scan.last === null) scan.last = entry;
            if (!budgetFull) {
              for (let i = entry.retain.length - 1; i >= 0; i--) {
                const fact = entry.retain[i];
                if (typeof fact !== "string") continue;
                if (used + fact.length + 3 > retainChars) {
                  budgetFull = true;
                  break;
                }
                used += fact.length + 3;
                scan.retains.push(fact);
              }
            }
          }
        }
        if (scan.last !== null && budgetFull) return scan;
        end = lineStart;
        if (end === 0) break;
        cut = end >= 2 ? buf.lastIndexOf(0x0a, end - 2) : -1;
      }
      carry = Buffer.from(buf.subarray(0, end));
      pos = start;
    }
    return scan;
  } finally {
    await h.close();
  }
}

export function serializeEntry(e: LedgerEntry): Buffer {
  // JSON.stringify escapes U+2028/9 and never emits a raw newline, so this is exactly one line
  return Buffer.from(JSON.stringify(e) + "\n", "utf8");
}

/** Read the whole ledger (tools and tests; the runtime itself only reads the tail). */
export async function readAll(fs: MemoryFs, file: string): Promise<{ entries: LedgerEntry[]; badLines: number[]; tornBytes: number }> {
  const buf = (await fs.readFile(file)) ?? Buffer.alloc(0);
  const entries: LedgerEntry[] = [];
  const badLines: number[] = [];
  let start = 0;
  while (start < buf.length) {
    const nl = buf.indexOf(0x0a, start);
    if (nl < 0) return { entries, badLines, tornBytes: buf.length - start };
    if (nl > start) {
      const e = parseEntry(buf.subarray(start, nl));
      if (e === null) badLines.push(start);
      else entries.push(e);
    }
    start = nl + 1;
  }
  return { entries, badLines, tornBytes: 0 };
}
