// What Claude models cost, in US dollars per million tokens, for the run summary, `--usage` and
// `--max-cost` (spec/agent-calls.md §7, "Cost"). A model missing here has no price: its cost is reported
// as unknown, never guessed. VVM_PRICES (a JSON file) adds models or replaces these rates for a run.
import type { Usage } from "../provider.ts";

/** When the rates below were last checked against Anthropic's model and pricing pages. */
export const PRICES_AS_OF = "2026-11-25";

/** Dollars per million tokens of each kind: uncached input, output, 5-minute cache writes, cache reads. */
export interface Rates {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

/** A model's rates; some bill a whole request at higher rates once its prompt passes a size. */
export interface ModelPrice extends Rates {
  /** rates for a request whose prompt (input + cache reads + cache writes) is over `aboveTokens` */
  longPrompt?: Rates & { aboveTokens: number };
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

export const DEFAULT_PRICES: PriceTable = {
  "claude-opus-5-5": { input: 4, output: 20, cacheWrite: 5, cacheRead: 0.2 },
  // cache reads cut from $0.20 to $0.10 on 2026-10-07
  "claude-sonnet-5-5": { input: 2, output: 10, cacheWrite: 2.5, cacheRead: 0.1 },
  "claude-haiku-5-5": {
    input: 0.1,
    output: 0.5,
    cacheWrite: 0.125,
    cacheRead: 0.01,
    longPrompt: { aboveTokens: 100_000, input: 0.5, output: 2.5, cacheWrite: 0.625, cacheRead: 0.05 },
  },
  "claude-opus-5": { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  "claude-sonnet-5": { input: 2, output: 10, cacheWrite: 2.5, cacheRead: 0.2 },
  "claude-opus-4-6": { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  "claude-opus-4-5": { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  "claude-sonnet-4-6": { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  "claude-sonnet-4-5": { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  "claude-haiku-4-5": { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
};

/** A model's price: its id as written, else without a date suffix (`claude-haiku-4-5-20251001`); null when unknown. */
export function priceOf(table: PriceTable, model: string): ModelPrice | null {
  if (Object.hasOwn(table, model)) return table[model]!;
  const undated = model.replace(/-\d{8}$/, "");
  return undated !== model && Object.hasOwn(table, undated) ? table[undated]! : null;
}

/** Dollars for one request's tokens at a model's price. */
export function dollars(price: ModelPrice, u: Usage): number {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  const r: Rates = price.longPrompt && prompt > price.longPrompt.aboveTokens ? price.longPrompt : price;
  return (u.inputTokens * r.input + u.outputTokens * r.output + u.cacheWriteTokens * r.cacheWrite + u.cacheReadTokens * r.cacheRead) / 1_000_000;
}
