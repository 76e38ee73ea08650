// What a run spends, in dollars, by agent: the summary line's cost, `--usage`'s table, and the
// `--max-cost` cap, which refuses to start a call once the money is spent (spec/agent-calls.md §7).
import type { Usage } from "../provider.ts";
import { estimateTokens } from "../providers/cache-plan.ts";
import { dollars, priceOf, type PriceTable } from "../providers/prices.ts";

/** The `--usage` row that judges (predicates, cases, choose, require) are counted in. */
export const JUDGES_ROW = "(judges)";

/** One row of `--usage`: an agent, or all judges. */
interface CostRow {
  calls: number;
  failed: number;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** dollars of the requests whose model has a price */
  dollars: number;
  /** models this row used that have no price */
  unpriced: Set<string>;
}

export class Costs {
  private readonly rows = new Map<string, CostRow>();
  /** calls and judges refused by --max-cost */
  refused = 0;

  constructor(
    private readonly prices: PriceTable,
    /** `--max-cost`: dollars; null: no cap */
    readonly maxCost: number | null,
  ) {}

  private row(name: string): CostRow {
    let r = this.rows.get(name);
    if (!r) this.rows.set(name, (r = emptyRow()));
    return r;
  }

  /** Dollars for one request's tokens, or null when the model has no price (no tokens cost nothing, priced or not). */
  price(model: string, usage: Usage): number | null {
    const p = priceOf(this.prices, model);
    if (p) return dollars(p, usage);
    return usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens === 0 ? 0 : null;
  }

  /** One request ended with these tokens billed (a failed one too, when the API says what it used). */
  request(name: string, model: string, usage: Usage | null): void {
    const r = this.row(name);
    r.requests++;
    if (!usage) return;
    r.inputTokens += usage.inputTokens;
    r.outputTokens += usage.outputTokens;
    r.cacheReadTokens += usage.cacheReadTokens;
    r.cacheWriteTokens += usage.cacheWriteTokens;
    const d = this.price(model, usage);
    if (d === null) r.unpriced.add(model);
    else r.dollars += d;
  }

  /** One call (or judge) is over. */
  finished(name: string, failed: boolean): void {
    const r = this.row(name);
    r.calls++;
    if (failed) r.failed++;
  }

  /** Dollars spent so far on priced models. */
  get spent(): number {
    let d = 0;
    for (const r of this.rows.values()) d += r.dollars;
    return d;
  }

  /** Models used that have no price, sorted. */
  get unpriced(): string[] {
    const all = new Set<string>();
    for (const r of this.rows.values()) for (const m of r.unpriced) all.add(m);
    return [...all].sort();
  }

  /**
   * Under `--max-cost`, whether a call to `model` with a prompt of `promptChars()` characters may start: null
   * when it may, else why not. It may not once the money spent plus the prompt's estimated price at the
   * uncached input rate (the long-prompt rate past its threshold) passes the cap, nor when the model has no
   * price (nothing could bound it), nor once a reply was billed under a model id that has none (its dollars are not counted).
   */
  admit(model: string, promptChars: () => number): string | null {
    if (this.maxCost === null) return null;
    const p = priceOf(this.prices, model);
    const cap = formatDollars(this.maxCost);
    let why: string | null = null;
    const unpriced = this.unpriced;
    if (!p) why = `model ${model} has no price (VVM_PRICES can give it one), so --max-cost ${cap} cannot bound this call`;
    // a reply billed under a model id the table lacks (a gateway's own name) cost what nobody can count
    else if (unpriced.length > 0) why = `the API billed earlier requests as ${unpriced.join(", ")}, which has no price (VVM_PRICES can give it one), so --max-cost ${cap} cannot tell what was spent; no new calls start`;
    else {
      const estimate = dollars(p, { inputTokens: estimateTokens(promptChars()), outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
      const spent = this.spent;
      if (spent + estimate > this.maxCost) {
        why = `--max-cost ${cap} reached: ${formatDollars(spent)} spent, and this call's prompt alone is about ${formatDollars(estimate)}; no new calls start`;
      }
    }
    if (why !== null) this.refused++;
    return why;
  }

  /**
   * `$0.0123`, or `cost unknown (…)` when a model used has no price, with what the priced ones cost; and
   * when calls already in flight carried the run past `--max-cost`, by how much (the cap admits, it does
   * not stop a call that started).
   */
  summary(): string {
    const unpriced = this.unpriced;
    const spent = this.spent;
    const cost = unpriced.length === 0 ? formatDollars(spent) : `cost unknown (no price for ${unpriced.join(", ")}; ${formatDollars(spent)} for the rest)`;
    if (this.maxCost === null || spent <= this.maxCost) return cost;
    return `${cost}, ${formatDollars(spent - this.maxCost)} past --max-cost ${formatDollars(this.maxCost)} (calls already started finish)`;
  }

  /** `--usage`: one line per agent (judges last), then the total; columns aligned. */
  table(): string[] {
    const names = [...this.rows.keys()].filter((n) => n !== JUDGES_ROW).sort();
    if (this.rows.has(JUDGES_ROW)) names.push(JUDGES_ROW);
    const head = ["agent", "calls", "failed", "requests", "in", "out", "cache read", "cache write", "cost"];
    const cost = (r: CostRow) => (r.unpriced.size > 0 ? `unknown (${[...r.unpriced].sort().join(", ")})` : formatDollars(r.dollars));
    const line = (name: string, r: CostRow) => [name, r.calls, r.failed, r.requests, r.inputTokens, r.outputTokens, r.cacheReadTokens, r.cacheWriteTokens, cost(r)].map(String);
    const body = names.map((n) => line(n, this.rows.get(n)!));
    const total = emptyRow();
    for (const r of this.rows.values()) {
      for (const k of ["calls", "failed", "requests", "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "dollars"] as const) total[k] += r[k];
      for (const m of r.unpriced) total.unpriced.add(m);
    }
    const rows = [head, ...body, line("total", total)];
    const widths = head.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    // names left-aligned, numbers right-aligned
    return rows.map((r) => r.map((c, i) => (i === 0 || i === r.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd());
  }
}

/** Dollars as people read them: cents from a dollar up, up to four places from a cent up, two significant digits below. */
export function formatDollars(d: number): string {
  if (d === 0) return "$0.00";
  if (d >= 1) return `$${d.toFixed(2)}`;
  if (d >= 0.01) return `$${d.toFixed(4).replace(/0{1,2}$/, "")}`;
  if (d < 0.000001) return "<$0.000001";
  return `$${d.toFixed(1 - Math.floor(Math.log10(d)))}`;
}

function emptyRow(): CostRow {
  return { calls: 0, failed: 0, requests: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, dollars: 0, unpriced: new Set() };
}
