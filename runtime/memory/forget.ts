// `vvm memory forget`: which retained facts a request names, and, for --purge, how a ledger line loses
// their text. The writes themselves are the session's (session.ts: forget, purge), under the lock.
// spec/memory.md §5 (the `forget` entry) and §13.
import { sha256 } from "./keys.ts";
import { forEachLine, forgottenBy, MAX_ENTRY_BYTES, parseEntry, type FactRef, type LedgerEntry, type Tombstone } from "./ledger.ts";
import type { MemoryFs } from "./fsio.ts";

/** A fact as the ledger holds it, and whether a `forget` entry has named it since. */
export interface RetainedFact extends FactRef {
  ts: string;
  text: string;
  forgotten: boolean;
}

/** Every fact of the ledger's readable, in-sequence entries, oldest first (null: no ledger). */
export async function retainedFacts(fs: MemoryFs, ledger: string): Promise<RetainedFact[] | null> {
  const h = await fs.openRead(ledger);
  if (h === null) return null;
  const facts: RetainedFact[] = [];
  const byRef = new Map<string, RetainedFact>();
  try {
    await forEachLine(
      h,
      (_start, e) => {
        if (e === null) return;
        for (const r of forgottenBy(e)) {
          const f = byRef.get(`${r.seq}:${r.index}`);
          if (f) f.forgotten = true;
        }
        e.retain.forEach((text, index) => {
          if (typeof text !== "string") return;
          const f = { seq: e.seq, index, ts: typeof e.ts === "string" ? e.ts : "", text, forgotten: false };
          facts.push(f);
          byRef.set(`${e.seq}:${index}`, f);
        });
      },
      MAX_ENTRY_BYTES,
    );
  } finally {
    await h.close();
  }
  return facts;
}

/** What a `forget` names: facts by `SEQ` (all of an entry's) or `SEQ:INDEX`, and facts whose text contains `match`. */
export interface ForgetRequest {
  facts: { seq: number; index: number | null }[];
  match: string | null;
}

/** `text` as a pattern that matches exactly it. */
const escape = (t: string) => t.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");

/** `--match` compares without regard to case (Unicode-aware); the text is never a pattern. */
export function matcher(text: string, flags = "iu"): RegExp {
  return new RegExp(escape(text), flags);
}

/**
 * The facts a request names, oldest first and each once, and what it names that is not there. Facts
 * forgotten already are included (a purge may still want their text gone); the caller decides.
 */
export function selectFacts(all: RetainedFact[], req: ForgetRequest): { targets: RetainedFact[]; missing: string[] } {
  const chosen = new Set<RetainedFact>();
  const missing: string[] = [];
  for (const { seq, index } of req.facts) {
    const hits = all.filter((f) => f.seq === seq && (index === null || f.index === index));
    if (hits.length === 0) missing.push(index === null ? `entry ${seq} retained no fact` : `entry ${seq} has no retained fact ${index}`);
    for (const f of hits) chosen.add(f);
  }
  if (req.match !== null) {
    const re = matcher(req.match);
    const hits = all.filter((f) => re.test(f.text));
    if (hits.length === 0) missing.push(`no retained fact contains ${JSON.stringify(req.match)}`);
    for (const f of hits) chosen.add(f);
  }
  return { targets: all.filter((f) => chosen.has(f)), missing };
}

/** Ledger fields that are structure, never text a purge looks into. */
const STRUCTURE = new Set(["v", "ts", "seq", "kind", "digest_before", "digest_after", "provenance", "restored_from", "forgotten", "purge", "purged_by"]);

/**
 * Removes text from ledger lines for a purge: each fact text in `exact` (as written), and every
 * occurrence of `match` (without regard to case). A retain item that is one of the texts, or contains
 * `match`, becomes a Tombstone with the SHA-256 of the item (the other items keep their places); an
 * occurrence anywhere else (a digest, a reason, an item that merely contains a fact's text) becomes
 * `[purged sha256:<SHA-256 of the occurrence>]`.
 */
export class Scrubber {
  private readonly exact: Set<string>;
  /** the exact texts, longest first (a text that contains another is replaced whole), and `match` */
  private readonly texts: RegExp | null;
  private readonly match: RegExp | null;
  /** occurrences removed so far (tombstones included) */
  occurrences = 0;

  constructor(exact: string[], match: string | null) {
    this.exact = new Set(exact);
    const sorted = [...this.exact].sort((a, b) => b.length - a.length);
    this.texts = sorted.length > 0 ? new RegExp(sorted.map(escape).join("|"), "gu") : null;
    this.match = match !== null ? matcher(match, "giu") : null;
  }

  /** Whether `text` holds anything this scrubber removes. */
  holds(text: string): boolean {
    return [this.texts, this.match].some((p) => {
      if (p === null) return false;
      p.lastIndex = 0;
      return p.test(text);
    });
  }

  /** `text` with every occurrence replaced by its mark. */
  scrubText(text: string): string {
    let out = text;
    for (const p of [this.texts, this.match]) {
      if (p === null) continue;
      out = out.replace(p, (m) => {
        this.occurrences++;
        return `[purged sha256:${sha256(m)}]`;
      });
    }
    return out;
  }

  private scrubValue(v: unknown): unknown {
    if (typeof v === "string") return this.holds(v) ? this.scrubText(v) : v;
    if (Array.isArray(v)) return v.map((x) => this.scrubValue(x));
    if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.scrubValue(x)]));
    return v;
  }

  private scrubItem(item: unknown): unknown {
    if (typeof item !== "string" || !this.holds(item)) return item;
    if (this.match !== null) this.match.lastIndex = 0;
    if (this.exact.has(item) || (this.match !== null && this.match.test(item))) {
      this.occurrences++;
      return { purged: sha256(item) } satisfies Tombstone;
    }
    return this.scrubText(item);
  }

  /**
   * One ledger line without the text: the same buffer when nothing in it changes. An entry that changes
   * says which purge changed it (`purged_by`); its other bytes are written anew by JSON.stringify. A
   * line that is not an entry is scrubbed as text.
   */
  scrubLine(line: Buffer, purgeSeq: number): Buffer {
    const text = line.toString("utf8");
    // without a backslash, every JSON string in the line is written as it reads
    if (!text.includes("\\") && !this.holds(text)) return line;
    const e = parseEntry(line);
    if (e === null) {
      const out = this.scrubText(text);
      return out === text ? line : Buffer.from(out, "utf8");
    }
    let changed = false;
    const next: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e as unknown as Record<string, unknown>)) {
      const scrubbed = STRUCTURE.has(k) ? v : k === "retain" && Array.isArray(v) ? v.map((item: unknown) => this.scrubItem(item)) : this.scrubValue(v);
      if (scrubbed !== v && JSON.stringify(scrubbed) !== JSON.stringify(v)) changed = true;
      next[k] = scrubbed;
    }
    if (!changed) return line;
    next.purged_by = purgeSeq;
    return Buffer.from(JSON.stringify(next as unknown as LedgerEntry), "utf8");
  }
}
