// Which retained facts a call sees. The newest come first, up to a share of the budget (continuity);
// the rest of the budget goes to the facts most relevant to the call's task and input, ranked by BM25
// (minisearch), so an old fact comes back when it matters. spec/memory.md §3 "Recall".
import MiniSearch from "minisearch";
import type { RecallMode } from "./patch.ts";
import { clipped, wellFormed } from "../text.ts";

/** One retained fact: the ledger entry it came with (`seq`, `ts`) and its place in that entry's `retain`. */
export interface Fact {
  seq: number;
  i: number;
  ts: string;
  text: string;
}

export interface Recalled {
  /** the facts to show, oldest first */
  shown: Fact[];
  /** how many retained facts exist beyond those shown */
  hidden: number;
}

/** The line a fact takes in the Memory Context (after "- "): its seq and day, so the model can tell old from new. */
export function factLine(f: Fact): string {
  // one pass over each run of white space (a lazy `\s*\n\s*` is quadratic in a long run of spaces)
  return `[#${f.seq} ${f.ts.slice(0, 10)}] ${f.text.replace(/\s+/g, (ws) => (ws.includes("\n") ? " " : ws))}`;
}

/**
 * Longest fact text kept, in characters. A patch's retain items are at most 500; only a ledger written
 * by hand (or by a hostile repository) holds longer ones, which are cut here so that no single fact can
 * fill a budget or slow every call down.
 */
export const MAX_FACT_CHARS = 2000;

/**
 * Characters a fact costs against the budget: its line and the list markup around it. Computed without
 * building the line (a call weighs up to a thousand facts): only a run of white space with a line break
 * in it changes length in factLine, and most facts have none.
 */
export function cost(f: Fact): number {
  const line = f.text.includes("\n") ? factLine(f).length : `[#${f.seq} `.length + Math.min(10, f.ts.length) + "] ".length + f.text.length;
  return line + 3;
}

/**
 * A fact as the Memory Context may show it: at most MAX_FACT_CHARS, cut between characters, and with any half
 * of a surrogate pair as U+FFFD, which a ledger written by hand (or by a release that let a patch's `\ud83d`
 * escape through) can hold.
 */
function shownText(text: string): string {
  return wellFormed(clipped(text, MAX_FACT_CHARS));
}

/** Hits considered per call: enough to fill any budget, few enough to stay well under a millisecond. */
const MAX_HITS = 200;
/** Query terms kept from the task and input (the first ones, once each): a long input must not make a search slow. */
const MAX_QUERY_TERMS = 64;
/** Characters of the task and input a query reads (the first ones). */
const MAX_QUERY_CHARS = 20_000;
/** Facts the fill-up step looks at before it gives up on a budget that no older fact fits. */
const MAX_FILL_TRIES = 1000;
/** The shortest line a fact can take: once less budget than this is left, nothing more fits. */
const MIN_LINE = "[#1 2026-01-01] x".length + 3;
/** Two facts with the same entities and at least this share of their words in common are versions of one fact. */
const SAME_FACT = 0.4;

const STOP = new Set(
  "a an and are as at be been but by can did do does for from had has have he her his how i if in into is it its me my no not of on or our she so than that the their them then there these they this to was we were what when where which who why will with you your".split(" "),
);
/** `W `, `B `, `N `, `O(c=0.8) `: the retain conventions of spec/memory.md, not words of the fact. */
const PREFIX = /^\s*(?:[WBN]|O(?:\(c=([01](?:\.\d+)?)\))?)\s+/;
const ENTITY = /@([\p{L}\p{N}_][\p{L}\p{N}_.-]*[\p{L}\p{N}_]|[\p{L}\p{N}_])/gu;

/** Lower case, without stop words and one-character words. */
function term(t: string): string | null {
  const w = t.toLowerCase();
  return w.length < 2 || STOP.has(w) ? null : w;
}

interface Doc {
  id: number;
  text: string;
}

/** The fact without its retain prefix: the words that are indexed. */
function body(f: Fact): string {
  const m = PREFIX.exec(f.text);
  return m ? f.text.slice(m[0].length) : f.text;
}

/** The fact's words and its `@Entity` names. */
function parts(f: Fact): { text: string; entities: string[] } {
  return { text: body(f), entities: [...f.text.matchAll(ENTITY)].map((e) => e[1].toLowerCase()) };
}

/** An opinion's confidence `c` scales its score by 0.75 + c/2; every other fact counts 1. */
function weightOf(prefix: RegExpExecArray | null): number {
  return prefix?.[1] !== undefined ? 0.75 + 0.5 * Number(prefix[1]) : 1;
}

/** The distinct terms of a text, in order of first appearance (at most `limit`). */
export function terms(text: string, limit = Infinity): string[] {
  const out = new Set<string>();
  for (const t of text.split(WORD_BREAK)) {
    const w = t === "" ? null : term(t);
    if (w !== null) out.add(w);
    if (out.size >= limit) break;
  }
  return [...out];
}
const WORD_BREAK = /[^\p{L}\p{N}_]+/u;

/** minisearch's index, asked how many facts hold a term (BM25 reads the same count from it). */
class TermIndex extends MiniSearch<Doc> {
  /** Facts indexed with `term`; a forgotten fact still counts until it is vacuumed (autoVacuum is off), which only makes a word look a little more common. */
  factsWith(term: string): number {
    return this._index.get(term)?.get(this._fieldIds.text)?.size ?? 0;
  }
}

/**
 * A search over a growing list of facts (ids are positions in `facts`, oldest first). A query keeps
 * only its words that few facts share: a word in most facts says little about any of them (BM25 gives
 * it almost no weight) and would make every search score every fact.
 */
export class FactSearch {
  /** every fact added, oldest first; those forgotten since stay in place (see `removed`) so positions never move */
  readonly facts: Fact[] = [];
  /** positions of the facts a `forget` entry removed: never searched, recalled or counted */
  readonly removed = new Set<number>();
  private readonly weights: number[] = [];
  /** how many facts have a weight other than 1 (none: ranking skips the weights) */
  private weighted = 0;
  /**
   * Facts [0, indexed) are in the search index and `weights`. The rest are indexed on the first
   * search: a call whose recall needs no search (recency, an empty query, `vvm memory show`) never pays for it.
   */
  private indexed = 0;
  private readonly index = new TermIndex({
    fields: ["text"],
    tokenize: (text) => text.split(WORD_BREAK),
    processTerm: term,
    searchOptions: { combineWith: "OR" },
    // forgetting is rare: discarded facts are left out of results at once, and the index is never compacted behind our back
    autoVacuum: false,
  });

  /** How many facts are retained (added and not forgotten). */
  get size(): number {
    return this.facts.length - this.removed.size;
  }

  /** The facts retained, oldest first. */
  live(): Fact[] {
    return this.removed.size === 0 ? this.facts : this.facts.filter((_, k) => !this.removed.has(k));
  }

  /**
   * Forget facts by the entry that retained them and their place in its `retain` (a `forget` entry's
   * list). Facts not here, or forgotten already, are passed over. Resolves to how many were removed.
   */
  remove(refs: readonly { seq: number; index: number }[]): number {
    if (refs.length === 0) return 0;
    const wanted = new Set(refs.map((r) => `${r.seq}:${r.index}`));
    let n = 0;
    // forgetting is rare and names few facts: one pass, no lookup table kept for every fact
    this.facts.forEach((f, k) => {
      if (this.removed.has(k) || !wanted.has(`${f.seq}:${f.i}`)) return;
      this.removed.add(k);
      n++;
      // a fact not indexed yet is simply never indexed
      if (k >= this.indexed) return;
      this.index.discard(k);
    });
    return n;
  }

  add(added: Fact[]): void {
    for (const fact of added) {
      const text = shownText(fact.text);
      this.facts.push(text !== fact.text ? { ...fact, text } : fact);
    }
  }

  /** Index the facts added since the last search (and weigh them: only a search needs the weights). */
  private catchUp(): void {
    const docs: Doc[] = [];
    for (let k = this.indexed; k < this.facts.length; k++) {
      const w = weightOf(PREFIX.exec(this.facts[k].text));
      this.weights.push(w);
      if (w !== 1) this.weighted++;
      if (this.removed.has(k)) continue;
      docs.push({ id: k, text: body(this.facts[k]) });
    }
    this.indexed = this.facts.length;
    this.index.addAll(docs);
  }

  /** Positions of the facts most relevant to `text`, best first. */
  search(query: string): number[] {
    const text = query.slice(0, MAX_QUERY_CHARS);
    if (text.trim() === "") return [];
    this.catchUp();
    const entities = new Set([...text.matchAll(ENTITY)].map((e) => e[1].toLowerCase()));
    const common = Math.max(MIN_COMMON, this.size * COMMON_SHARE);
    const df = new Map(terms(text, MAX_QUERY_TERMS).map((t) => [t, this.index.factsWith(t)]));
    const all = [...df.keys()].filter((t) => df.get(t)! > 0);
    let kept = all.filter((t) => df.get(t)! <= common);
    // only common words: the rarest of them still rank something
    if (kept.length === 0) kept = all.sort((a, b) => df.get(a)! - df.get(b)!).slice(0, 2);
    if (kept.length === 0) return [];
    const results = this.index.search(kept.join(" "), {
      // an `@Entity` the call names is the strongest sign that a fact is about it
      boostTerm: (t) => (entities.has(t) ? 2 : 1),
    });
    // An opinion's weight scales its score. It is applied here rather than as minisearch's boostDocument,
    // which costs a callback and two map lookups per matching fact (7-26% of a search over 100,000 facts).
    if (this.weighted > 0) {
      for (const r of results) r.score *= this.weights[r.id as number]!;
      results.sort((a, b) => b.score - a.score);
    }
    return results.slice(0, MAX_HITS).map((r) => r.id as number);
  }
}

/** A word in more than this share of the facts (and more than MIN_COMMON of them) is left out of queries. */
const COMMON_SHARE = 0.05;
const MIN_COMMON = 200;

/** The words and entities that make two facts versions of one another. */
function shape(f: Fact): { entities: string; words: Set<string> } {
  const p = parts(f);
  return { entities: [...new Set(p.entities)].sort().join(" "), words: new Set(terms(p.text)) };
}

function similar(a: ReturnType<typeof shape>, b: ReturnType<typeof shape>): boolean {
  if (a.entities === "" || a.entities !== b.entities) return false;
  let both = 0;
  for (const w of a.words) if (b.words.has(w)) both++;
  return both / (a.words.size + b.words.size - both) >= SAME_FACT;
}

/**
 * The facts for one call within `budgetChars`: newest first until `recentShare` of the budget is
 * spent (all of it with `recent` recall), then by relevance to `query`. A relevant fact that a newer
 * version among the hits updates (same `@Entity` mentions, mostly the same words) comes only with that
 * newer version, so the model never sees an old value without the new one.
 */
export function recall(search: FactSearch, query: string, budgetChars: number, mode: RecallMode, recentShare: number): Recalled {
  const { facts } = search;
  const chosen = new Set<number>();
  let used = 0;
  /** Show fact `k` if it fits within `limit` characters in all (the whole budget unless said). */
  const take = (k: number, limit = budgetChars): boolean => {
    if (chosen.has(k)) return true;
    const c = cost(facts[k]);
    if (used + c > limit) return false;
    chosen.add(k);
    used += c;
    return true;
  };
  const recentBudget = mode === "recent" ? budgetChars : Math.floor(budgetChars * recentShare);
  const { removed } = search;
  let k = facts.length - 1;
  for (; k >= 0; k--) {
    if (removed.has(k)) continue;
    if (!take(k, recentBudget)) break;
  }
  if (mode === "relevant" && k >= 0) {
    const hits = search.search(query);
    const shapes = new Map<number, ReturnType<typeof shape>>();
    const shapeOf = (k: number) => shapes.get(k) ?? shapes.set(k, shape(facts[k])).get(k)!;
    // newest first: the first similar one is the newest version
    const byAge = [...hits].sort((a, b) => b - a);
    for (const h of hits) {
      if (budgetChars - used < MIN_LINE) break;
      if (chosen.has(h)) continue;
      const mine = shapeOf(h);
      const newest = mine.entities === "" ? h : (byAge.find((j) => j <= h || similar(mine, shapeOf(j))) ?? h);
      if (newest > h && !take(newest)) continue;
      take(h);
    }
    // budget that relevance left unused (few or no hits) goes on with the newest facts that fit
    for (let tries = 0; k >= 0 && tries < MAX_FILL_TRIES && budgetChars - used >= MIN_LINE; k--) {
      if (removed.has(k) || chosen.has(k)) continue;
      take(k);
      tries++;
    }
  }
  const shown = [...chosen].sort((a, b) => a - b).map((k) => facts[k]);
  return { shown, hidden: search.size - shown.length };
}
