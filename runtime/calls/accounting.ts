// Per-run totals for the summary line, and the live progress line on a terminal.
import type { Usage } from "../provider.ts";
import { DEFAULT_PRICES } from "../providers/prices.ts";
import { Costs, JUDGES_ROW } from "./costs.ts";
import { FanOuts } from "./fan-outs.ts";

/** Token counts as trace events name them. */
export function usageFields(u: Usage) {
  return { tokens_in: u.inputTokens, tokens_out: u.outputTokens, cache_read: u.cacheReadTokens, cache_write: u.cacheWriteTokens };
}

export class Accounting {
  /** dollars by agent, and the --max-cost cap (default: the built-in prices, no cap) */
  constructor(readonly costs: Costs = new Costs(DEFAULT_PRICES, null)) {}

  calls = 0;
  failedCalls = 0;
  callAttempts = 0;
  judges = 0;
  failedJudges = 0;
  judgeAttempts = 0;
  inputTokens = 0;
  outputTokens = 0;
  cacheReadTokens = 0;
  cacheWriteTokens = 0;
  /** summed over attempts: time spent waiting on the model */
  latencyMs = 0;
  inFlight = 0;
  /** called whenever `done`/`inFlight` change (the progress line) */
  onChange: (() => void) | null = null;

  attemptStarted(): void {
    this.inFlight++;
    this.onChange?.();
  }

  /** `agent`: the calling agent's name, null for a judge; `model`: the model that billed the tokens. */
  attemptEnded(kind: "call" | "judge", usage: Usage | null, latencyMs: number, agent: string | null, model: string): void {
    this.inFlight--;
    this.costs.request(agent ?? JUDGES_ROW, model, usage);
    if (kind === "call") this.callAttempts++;
    else this.judgeAttempts++;
    if (usage) {
      this.inputTokens += usage.inputTokens;
      this.outputTokens += usage.outputTokens;
      this.cacheReadTokens += usage.cacheReadTokens;
      this.cacheWriteTokens += usage.cacheWriteTokens;
    }
    this.latencyMs += latencyMs;
    this.onChange?.();
  }

  /** failed calls and judges by error kind (`rejected`, `timeout`, …), for the summary line */
  readonly failedCallKinds = new Map<string, number>();
  readonly failedJudgeKinds = new Map<string, number>();

  /** calls and judges stopped by a failed `pmap` sibling or Ctrl-C: neither succeeded nor failed */
  cancelledCalls = 0;
  cancelledJudges = 0;

  /**
   * A call (of `agent`) or judge (agent null) is over: `failedAs` is its error kind, or null when it succeeded.
   * `cancelled` is counted apart: a sibling's failure or Ctrl-C stopped it, nothing went wrong with it.
   */
  finished(kind: "call" | "judge", failedAs: string | null, agent: string | null): void {
    const cancelled = failedAs === "cancelled";
    this.costs.finished(agent ?? JUDGES_ROW, failedAs !== null && !cancelled);
    if (kind === "call") {
      this.calls++;
      if (cancelled) this.cancelledCalls++;
      else if (failedAs !== null) {
        this.failedCalls++;
        this.failedCallKinds.set(failedAs, (this.failedCallKinds.get(failedAs) ?? 0) + 1);
      }
    } else {
      this.judges++;
      if (cancelled) this.cancelledJudges++;
      else if (failedAs !== null) {
        this.failedJudges++;
        this.failedJudgeKinds.set(failedAs, (this.failedJudgeKinds.get(failedAs) ?? 0) + 1);
      }
    }
    this.onChange?.();
  }

  /** The run's totals for the trace's closing `summary` event (same counts as the summary line). */
  traceFields() {
    return {
      calls: this.calls,
      call_attempts: this.callAttempts,
      failed_calls: this.failedCalls,
      failed_call_kinds: Object.fromEntries(byCount(this.failedCallKinds)),
      cancelled_calls: this.cancelledCalls,
      judges: this.judges,
      judge_attempts: this.judgeAttempts,
      failed_judges: this.failedJudges,
      failed_judge_kinds: Object.fromEntries(byCount(this.failedJudgeKinds)),
      cancelled_judges: this.cancelledJudges,
      // the token fields have the names of Usage, so the totals read as one
      ...usageFields(this),
      // null when a model used has no price
      cost_usd: this.costs.unpriced.length === 0 ? this.costs.spent : null,
      model_ms: Math.round(this.latencyMs),
    };
  }

  /** One line: calls, judges (each with its failures by kind), tokens in/out, cache reads/writes, total model latency. */
  summary(provider: string): string {
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
    // "4 calls, 2 failed (1 rejected, 1 timeout; 14 attempts)": the failures are calls, not attempts;
    // "4 calls, 1 failed (1 rejected), 3 cancelled (4 attempts)" when a failure stopped its pmap siblings
    const part = (n: number, word: string, failed: number, kinds: Map<string, number>, attempts: number, cancelled: number) => {
      const tries = plural(attempts, "attempt");
      const why = byCount(kinds).map(([k, c]) => `${c} ${k}`).join(", ");
      if (cancelled === 0) return failed === 0 ? `${plural(n, word)} (${tries})` : `${plural(n, word)}, ${failed} failed (${why}; ${tries})`;
      const failures = failed === 0 ? "" : `, ${failed} failed (${why})`;
      return `${plural(n, word)}${failures}, ${cancelled} cancelled (${tries})`;
    };
    return (
      `vvm: ${part(this.calls, "call", this.failedCalls, this.failedCallKinds, this.callAttempts, this.cancelledCalls)}, ` +
      `${part(this.judges, "judge", this.failedJudges, this.failedJudgeKinds, this.judgeAttempts, this.cancelledJudges)}, ` +
      `tokens ${this.inputTokens} in / ${this.outputTokens} out, ` +
      `cache ${this.cacheReadTokens} read / ${this.cacheWriteTokens} write, ${this.costs.summary()}, ` +
      `model time ${(this.latencyMs / 1000).toFixed(2)}s [${provider}]`
    );
  }
}

/** Error kinds, most frequent first (ties by name), so the line reads the same on every run. */
function byCount(kinds: Map<string, number>): [string, number][] {
  return [...kinds].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** How progress is drawn: redrawn in place, or as plain lines where the cursor cannot move (the CLI decides). */
export type ProgressStyle = "live" | "lines";

/**
 * `vvm: 12 calls, 3 judges done, 2 in flight` on stderr while calls run, led by the outermost pmap's
 * `12/50 items, ~8s left` while one runs. `live` redraws it in place at most every 100 ms and erases it
 * at the end; `lines` (no cursor movement: TERM=dumb, or --progress always off a terminal) writes it as a
 * new line at most once a second and never erases.
 */
export class Progress {
  private last = 0;
  private shown = false;
  private stopped = false;
  /** the draw of a change the interval held back */
  private pending: ReturnType<typeof setTimeout> | null = null;
  /** the run's pmaps, which the interpreter reports through this port (RunContext.progress) */
  readonly fanOuts = new FanOuts(() => this.draw());

  constructor(
    private readonly acc: Accounting,
    private readonly write: (s: string) => void,
    private readonly style: ProgressStyle,
  ) {
    acc.onChange = () => this.draw();
  }

  private draw(): void {
    if (this.stopped) return;
    const now = Date.now();
    const wait = (this.style === "live" ? 100 : 1000) - (now - this.last);
    if (wait > 0) {
      // a change inside the interval is drawn when the interval ends, or the line would show the calls
      // started just after a draw as not in flight until the next change, which may be minutes away
      if (this.pending === null) {
        this.pending = setTimeout(() => {
          this.pending = null;
          this.draw();
        }, wait);
        this.pending.unref();
      }
      return;
    }
    this.last = now;
    const a = this.acc;
    const items = this.fanOuts.text();
    const text = `vvm: ${items === null ? "" : `${items}; `}${a.calls} calls, ${a.judges} judges done, ${a.inFlight} in flight`;
    if (this.style === "lines") {
      this.write(text + "\n");
      return;
    }
    this.shown = true;
    // Cursor back to column 0 afterwards, so any later line overwrites this one.
    this.write(`\r\x1b[K${text}\r`);
  }

  /** Erase the line until the next change redraws it (before another line goes to stderr). */
  erase(): void {
    if (this.pending !== null) clearTimeout(this.pending);
    this.pending = null;
    if (this.shown) this.write("\r\x1b[K");
    this.shown = false;
  }

  /** Erase the line and stop drawing it. */
  clear(): void {
    this.acc.onChange = null;
    this.stopped = true;
    this.erase();
  }
}
