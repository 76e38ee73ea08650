// A memory's past, read from its ledger without the lock and without writing: the entries (`vvm memory
// log`), the digest's versions (`history`, `diff`) and everything ever retained (`search`). A query that
// wants the newest entries reads the ledger backwards from its end and stops as soon as it has them;
// the others read it front to back in chunks, never holding it whole. spec/memory.md §13.
import type { MemoryFs } from "./fsio.ts";
import { BackwardLines, callProvenance, forEachLine, forgottenBy, MAX_ENTRY_BYTES, parseEntry, SequenceCheck, type EntryKind, type LedgerEntry } from "./ledger.ts";
import { EMPTY_HASH } from "./state.ts";
import { FactSearch } from "./recall.ts";

/** A ledger line as a reader met it: an entry, or a line skipped (unreadable, out of sequence, over the size of any entry). */
export interface LogLine {
  start: number;
  entry: LedgerEntry | null;
}

interface LogQuery {
  /** only these kinds */
  kinds?: readonly string[];
  /** only entries written by calls of this agent */
  agent?: string;
  /** only entries written at or after this time (ms since the epoch); reading stops at the first older one */
  since?: number;
  /** only the newest this many matching entries */
  last?: number;
}

export interface Log {
  /** oldest first: the matching entries, and the skipped lines among them (only when no kind or agent filter is given) */
  lines: LogLine[];
  tornBytes: number;
  /** bytes of the ledger, and how many of them were read */
  size: number;
  bytesRead: number;
}

function matches(e: LedgerEntry, q: LogQuery): boolean {
  if (q.kinds !== undefined && !q.kinds.includes(e.kind)) return false;
  if (q.agent !== undefined && callProvenance(e.provenance)?.agent !== q.agent) return false;
  if (q.since !== undefined && !(Date.parse(e.ts) >= q.since)) return false;
  return true;
}

/**
 * The ledger entries a query asks for, oldest first; null when there is no ledger. With `last` or `since`
 * the ledger is read backwards from its end, only as far as needed: the cost of `--last 20` does not
 * depend on the ledger's length. Sequence numbers are judged as a call judges them (§5), from the oldest
 * entry read, one entry before the first one shown.
 */
export async function readLog(fs: MemoryFs, file: string, q: LogQuery): Promise<Log | null> {
  const h = await fs.openRead(file);
  if (h === null) return null;
  let bytesRead = 0;
  const counted = { ...h, size: h.size, read: (start: number, length: number) => ((bytesRead += length), h.read(start, length)) };
  const filtered = q.kinds !== undefined || q.agent !== undefined;
  const keep = (l: LogLine) => (l.entry === null ? !filtered : matches(l.entry, q));
  try {
    if (q.last === undefined && q.since === undefined) {
      const lines: LogLine[] = [];
      const { tornBytes } = await forEachLine(counted, (start, entry) => {
        if (keep({ start, entry })) lines.push({ start, entry });
      }, MAX_ENTRY_BYTES);
      return { lines, tornBytes, size: h.size, bytesRead };
    }
    // newest first, until enough entries match and one more readable entry is known to judge the oldest against
    const window: LogLine[] = [];
    const reader = new BackwardLines(counted, { maxLineBytes: MAX_ENTRY_BYTES });
    /**
     * The window judged oldest first, from its oldest readable entry (the anchor, when `anchored`), or null
     * when it cannot stand for a whole read yet: fewer in-sequence entries than asked for (an out-of-sequence
     * line took a place), or the entry after the anchor refused, since then the anchor may be the line out of
     * sequence (a planted seq of 900000000 would make every real entry after it look out of sequence).
     */
    const judge = (anchored: boolean): LogLine[] | null => {
      const oldest = [...window].reverse();
      const check = new SequenceCheck();
      const judged = oldest.map(({ start, entry }) => ({ start, entry: entry !== null && check.accept(entry) ? entry : null }));
      if (!anchored) return judged;
      const anchor = oldest.findIndex((l) => l.entry !== null);
      const next = oldest.findIndex((l, i) => i > anchor && l.entry !== null);
      if (next !== -1 && judged[next].entry === null) return null;
      // the anchor only serves to judge the entry after it
      const shown = judged.slice(anchor + 1);
      const bySince = q.since !== undefined && Date.parse(oldest[anchor].entry!.ts) < q.since;
      if (q.last !== undefined && !bySince && shown.filter((l) => l.entry !== null && matches(l.entry, q)).length < q.last) return null;
      return shown;
    };
    let matching = 0;
    // after a window that cannot stand, judged again only once it has twice the lines: bounded work however many lines are out of sequence
    let judgeAt = 0;
    let result: LogLine[] | null = null;
    read: for await (const batch of reader) {
      for (const { start, bytes } of batch) {
        const entry = bytes === null ? null : parseEntry(bytes);
        window.push({ start, entry });
        if (entry === null) continue;
        const enough = (q.last !== undefined && matching >= q.last) || (q.since !== undefined && Date.parse(entry.ts) < q.since);
        if (enough && window.length >= judgeAt) {
          result = judge(true);
          if (result !== null) break read;
          judgeAt = window.length * 2;
        }
        if (matches(entry, q)) matching++;
      }
    }
    const shown = (result ?? judge(false)!).filter(keep);
    let lines = shown;
    if (q.last !== undefined) {
      let n = 0;
      let from = shown.length;
      while (from > 0 && n < q.last) if (shown[--from].entry !== null) n++;
      lines = shown.slice(from);
    }
    return { lines, tornBytes: reader.tornBytes, size: h.size, bytesRead };
  } finally {
    await h.close();
  }
}

/**
 * Every readable entry of a ledger, oldest first, to `visit`; null when there is no ledger. Resolves to
 * the torn tail's length and how many lines were skipped (unreadable, out of sequence, or longer than
 * any entry).
 */
async function eachEntry(fs: MemoryFs, file: string, visit: (e: LedgerEntry) => void): Promise<{ tornBytes: number; skipped: number } | null> {
  const h = await fs.openRead(file);
  if (h === null) return null;
  let skipped = 0;
  try {
    const { tornBytes } = await forEachLine(h, (_start, e) => (e === null ? skipped++ : visit(e)), MAX_ENTRY_BYTES);
    return { tornBytes, skipped };
  } finally {
    await h.close();
  }
}

/** A version of the digest: an entry that changed it. */
export interface DigestVersion {
  seq: number;
  ts: string;
  kind: EntryKind;
  /** the agent's call or the `vvm memory` command that wrote it, null for a person's edit (an external_edit) */
  agent: LedgerEntry["provenance"];
  /** a `restore`: the entry whose digest it made current again */
  restoredFrom: number | null;
  /** SHA-256 of digest.md with this version */
  hash: string;
  /** the body's length in characters, null when the ledger does not hold it */
  chars: number | null;
  /** why the content is not held, or the entry's note */
  reason: string | null;
}

interface Versions {
  /** oldest first; the first is the empty digest (seq 0) when the memory started without one */
  versions: DigestVersion[];
  /** for each seq asked for, the version in effect after that entry and its body (null when the ledger does not hold it) */
  at: Map<number, { version: DigestVersion; body: string | null }>;
  tornBytes: number;
  /** lines skipped as unreadable or out of sequence */
  skipped: number;
  /** the last entry's seq (0: none) */
  last: number;
}

/**
 * The digest's versions, front to back. `want` lists the sequence numbers whose digest is needed: each
 * names the version in effect after that entry (the newest version at or before it), whose body is kept.
 */
export async function digestVersions(fs: MemoryFs, file: string, want: readonly number[] = []): Promise<Versions | null> {
  const versions: DigestVersion[] = [];
  const at = new Map<number, { version: DigestVersion; body: string | null }>();
  const wanted = [...want].sort((a, b) => a - b);
  let current: { version: DigestVersion; body: string | null } | null = null;
  let last = 0;
  // a wanted seq is settled by the first entry after it: the version in effect then is the current one
  const settle = (upTo: number) => {
    while (wanted.length > 0 && wanted[0] < upTo) {
      const seq = wanted.shift()!;
      if (current !== null) at.set(seq, current);
    }
  };
  const read = await eachEntry(fs, file, (e) => {
    if (last === 0 && e.digest_before === EMPTY_HASH) {
      // the memory began with no digest: version 0 is the empty one
      const empty: DigestVersion = { seq: 0, ts: e.ts, kind: e.kind, agent: null, restoredFrom: null, hash: EMPTY_HASH, chars: 0, reason: null };
      versions.push(empty);
      current = { version: empty, body: "" };
    }
    settle(e.seq);
    last = e.seq;
    if (e.digest_after === e.digest_before) return;
    const body = typeof e.digest === "string" ? e.digest : null;
    const version: DigestVersion = {
      seq: e.seq,
      ts: e.ts,
      kind: e.kind,
      agent: e.kind === "external_edit" ? null : e.provenance,
      restoredFrom: e.kind === "restore" && Number.isSafeInteger(e.restored_from) ? (e.restored_from as number) : null,
      hash: e.digest_after,
      chars: body === null ? null : body.length,
      reason: e.reason ?? null,
    };
    versions.push(version);
    current = { version, body };
  });
  if (read === null) return null;
  settle(Infinity);
  return { versions, at, ...read, last };
}

/** A search hit: a retained fact, or a line of the digest as it was from one version until another. */
export type Hit =
  | { kind: "fact"; seq: number; index: number; ts: string; text: string }
  | {
      kind: "digest";
      /** the version that brought the line */
      seq: number;
      ts: string;
      text: string;
      /** the version that took it out (null: still in the last version) */
      until: number | null;
    };

interface Found {
  /** best first */
  hits: Hit[];
  /** how many facts and distinct digest lines were searched */
  facts: number;
  digestLines: number;
  tornBytes: number;
  skipped: number;
}

/**
 * Retained facts and every line any version of the digest held, ranked by relevance to `query` with the
 * ranking recall uses (BM25 over words, `@Entity` names weighing double; recall.ts). Facts a `forget` entry
 * names are left out, as recall leaves them out. The ledger is read once, front to back in chunks: past
 * digests are only there.
 */
export async function searchLedger(fs: MemoryFs, file: string, query: string, limit: number): Promise<Found | null> {
  let docs: Hit[] = [];
  // each distinct digest line, by its text: the hit it is, while it is in the digest
  const live = new Map<string, Extract<Hit, { kind: "digest" }>>();
  let digestLines = 0;
  const forgotten = new Set<string>();
  const read = await eachEntry(fs, file, (e) => {
    for (const r of forgottenBy(e)) forgotten.add(`${r.seq}:${r.index}`);
    e.retain.forEach((text, index) => {
      if (typeof text === "string") docs.push({ kind: "fact", seq: e.seq, index, ts: e.ts, text });
    });
    if (e.digest_after === e.digest_before || typeof e.digest !== "string") return;
    const lines = new Set(e.digest.split("\n").map((l) => l.trim()).filter((l) => l !== ""));
    for (const [text, hit] of live) {
      if (lines.has(text)) continue;
      hit.until = e.seq;
      live.delete(text);
    }
    for (const text of lines) {
      if (live.has(text)) continue;
      const hit = { kind: "digest" as const, seq: e.seq, ts: e.ts, text, until: null };
      live.set(text, hit);
      docs.push(hit);
      digestLines++;
    }
  });
  if (read === null) return null;
  if (forgotten.size > 0) docs = docs.filter((d) => d.kind !== "fact" || !forgotten.has(`${d.seq}:${d.index}`));
  const search = new FactSearch();
  search.add(docs.map((d) => ({ seq: d.seq, i: d.kind === "fact" ? d.index : -1, ts: d.ts, text: d.text })));
  const hits = search.search(query).slice(0, limit).map((k) => docs[k]);
  return { hits, facts: docs.length - digestLines, digestLines, ...read };
}
