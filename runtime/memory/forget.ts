// `vvm memory forget`: which retained facts a request names, and, for --purge, how a ledger line loses
// their text. The writes themselves are the session's (session.ts: forget, purge), under the lock.
// spec/memory.md §5 (the `forget` entry) and §13.
import { createHmac, randomBytes } from "node:crypto";
import { forEachLine, forgottenBy, MAX_ENTRY_BYTES, parseEntry, type FactRef, type LedgerEntry, type Tombstone } from "./ledger.ts";
import type { MemoryFs } from "./fsio.ts";
import { Refused } from "./session.ts";

/** A fact as the ledger holds it, and whether a `forget` entry has named it since. */
interface RetainedFact extends FactRef {
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

/** A text as written and in both Unicode normal forms (an é typed as one character or as e and an accent). */
const forms = (t: string) => [...new Set([t, t.normalize("NFC"), t.normalize("NFD")])];

/** `--match` compares without regard to case (Unicode-aware) or normal form; the text is never a pattern. */
export function matcher(text: string, flags = "iu"): RegExp {
  return new RegExp(forms(text).map(escape).join("|"), flags);
}

/**
 * The facts a request names, oldest first and each once, and what it names that is not there (`lastSeq`,
 * the ledger's last entry, tells an entry that does not exist from one that retained nothing). Facts
 * forgotten already are included (a purge may still want their text gone); the caller decides.
 */
export function selectFacts(all: RetainedFact[], req: ForgetRequest, lastSeq = Infinity): { targets: RetainedFact[]; missing: string[] } {
  const chosen = new Set<RetainedFact>();
  const missing: string[] = [];
  for (const { seq, index } of req.facts) {
    const hits = all.filter((f) => f.seq === seq && (index === null || f.index === index));
    if (hits.length === 0 && seq > lastSeq) missing.push(`there is no entry ${seq} (the last is ${lastSeq})`);
    else if (hits.length === 0) missing.push(index === null ? `entry ${seq} retained no fact` : `entry ${seq} has no retained fact ${index}`);
    for (const f of hits) chosen.add(f);
  }
  if (req.match !== null) {
    const re = matcher(req.match);
    const hits = all.filter((f) => re.test(f.text));
    if (hits.length === 0) missing.push(`no retained fact contains ${JSON.stringify(req.match)}`);
    for (const f of hits) chosen.add(f);
  }
  // `--fact 4 --fact 4` names one missing fact, said once
  return { targets: all.filter((f) => chosen.has(f)), missing: [...new Set(missing)] };
}

/** Ledger fields that are structure, never text a purge looks into (the digest hashes are renamed, below). */
const STRUCTURE = new Set(["v", "ts", "seq", "kind", "restored_from", "forgotten", "purge", "purged_by"]);
const HASHES = new Set(["digest_before", "digest_after"]);
/** Every field this release writes: its name is never changed, nor the names inside it (provenance's). */
const KNOWN = new Set([...STRUCTURE, ...HASHES, "retain", "digest", "reason", "provenance"]);

/**
 * Removes text from ledger lines for a purge: each fact text in `exact` (as written, in either Unicode
 * normal form), and every occurrence of `match` (without regard to case or normal form), in every field
 * but the structural ones (provenance too, and keys of fields this release does not know). A retain item
 * that is one of the texts, or contains `match`, becomes a Tombstone (the other items keep their places);
 * an occurrence anywhere else becomes `[purged <id>]`. Ids are HMACs under a key this purge makes and
 * forgets: equal texts share one, and nobody can check a guess against it (a plain hash of a phone number
 * is found by trying them all). For the same reason the SHA-256 of a past digest that held the text is
 * replaced, wherever the ledger names it, by such an id: the chain of digest_before/digest_after still links.
 */
export class Scrubber {
  private readonly exact: Set<string>;
  private readonly key = randomBytes(32);
  /** the SHA-256 of each digest version that held the text, and the id that replaces it */
  private readonly hashes = new Map<string, string>();
  /** the exact texts, longest first (a text that contains another is replaced whole), and `match` */
  private readonly texts: RegExp | null;
  private readonly match: RegExp | null;
  /** occurrences removed so far (tombstones included) */
  occurrences = 0;

  constructor(exact: string[], match: string | null) {
    this.exact = new Set(exact.flatMap(forms));
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
        return `[purged ${this.id(m)}]`;
      });
    }
    return out;
  }

  /** An id of `text` under this purge's key (16 hex digits; 64 for a digest hash, which must stay unique). */
  private id(text: string, length = 16): string {
    return createHmac("sha256", this.key).update(text).digest("hex").slice(0, length);
  }

  /**
   * A value without the text; with `renameKeys` (inside fields this release does not know) the names of its
   * members too. (parseEntry refuses values nested deeper than an entry's, so this recursion stays shallow.)
   */
  private scrubValue(v: unknown, renameKeys: boolean): unknown {
    if (typeof v === "string") return this.holds(v) ? this.scrubText(v) : v;
    if (Array.isArray(v)) return v.map((x) => this.scrubValue(x, renameKeys));
    if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [renameKeys && this.holds(k) ? this.scrubText(k) : k, this.scrubValue(x, renameKeys)]));
    return v;
  }

  private scrubItem(item: unknown): unknown {
    if (typeof item !== "string" || !this.holds(item)) return item;
    if (this.match !== null) this.match.lastIndex = 0;
    if (this.exact.has(item) || (this.match !== null && this.match.test(item))) {
      this.occurrences++;
      return { purged: this.id(item) } satisfies Tombstone;
    }
    return this.scrubText(item);
  }

  /** One field of an entry without the text: a digest hash renamed, structure kept, facts tombstoned, the rest scrubbed. */
  private scrubField(k: string, v: unknown): unknown {
    if (HASHES.has(k)) return typeof v === "string" ? (this.hashes.get(v) ?? v) : v;
    if (STRUCTURE.has(k)) return v;
    if (k === "retain" && Array.isArray(v)) return v.map((item: unknown) => this.scrubItem(item));
    return this.scrubValue(v, !KNOWN.has(k));
  }

  /**
   * One ledger line without the text: the same buffer when nothing in it changes. An entry that changes
   * says which purge changed it (`purged_by`); its other bytes are written anew by JSON.stringify. A
   * line that is not an entry is scrubbed as text.
   */
  scrubLine(line: Buffer, purgeSeq: number): Buffer {
    const text = line.toString("utf8");
    // without a backslash, every JSON string in the line is written as it reads
    if (!text.includes("\\") && !this.holds(text) && ![...this.hashes.keys()].some((h) => text.includes(h))) return line;
    const e = parseEntry(line);
    if (e === null) {
      // scrubbed as text, which cannot see the text behind a JSON escape (\n, \", \u00e9)
      if (text.includes("\\")) throw new Refused("ledger.jsonl has a line that is not a readable entry and holds escapes the purge cannot see through (vvm memory doctor names it): mend or remove it by hand first; nothing purged");
      const out = this.scrubText(text);
      return out === text ? line : Buffer.from(out, "utf8");
    }
    // a digest that held the text: its hash is renamed here and in every later entry that names it
    if (typeof e.digest === "string" && typeof e.digest_after === "string" && this.holds(e.digest) && !this.hashes.has(e.digest_after)) {
      this.hashes.set(e.digest_after, this.id(e.digest_after, 64));
    }
    let changed = false;
    const next: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e as unknown as Record<string, unknown>)) {
      const scrubbed = this.scrubField(k, v);
      // a field this release does not know may be named with the text
      const name = KNOWN.has(k) || !this.holds(k) ? k : this.scrubText(k);
      if (name !== k || (scrubbed !== v && JSON.stringify(scrubbed) !== JSON.stringify(v))) changed = true;
      next[name] = scrubbed;
    }
    if (!changed) return line;
    next.purged_by = purgeSeq;
    return Buffer.from(JSON.stringify(next as unknown as LedgerEntry), "utf8");
  }
}
