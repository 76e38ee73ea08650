// Helpers shared by the bench scripts.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Accounting } from "../runtime/calls/accounting.ts";
import { CallRuntime } from "../runtime/calls/runtime.ts";
import { AnthropicProvider } from "../runtime/providers/anthropic.ts";
import { noTrace } from "../runtime/trace.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Median of a sample; runs are few, so one outlier must not decide. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The installed CLI entry point; benches measure the built JavaScript, as users run it. */
export function builtCli(): string {
  if (!existsSync(path.join(ROOT, "dist/start.js"))) throw new Error("dist/ is missing: run `npm run build` first");
  return path.join(ROOT, "bin/vvm.js");
}

/**
 * `n` calls of each side per round, interleaved call by call (alternating which goes first) so load from other
 * processes on the machine falls on both sides alike. The first round warms up and is not counted; the result
 * is each side's total milliseconds per counted round.
 */
export async function interleaved(n: number, rounds: number, a: (i: number) => Promise<void>, b: (i: number) => Promise<void>): Promise<{ a: number[]; b: number[] }> {
  const out = { a: [] as number[], b: [] as number[] };
  for (let r = -1; r < rounds; r++) {
    let ta = 0;
    let tb = 0;
    for (let i = 0; i < n; i++) {
      for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const t0 = performance.now();
        await (side === 0 ? a(i) : b(i));
        if (side === 0) ta += performance.now() - t0;
        else tb += performance.now() - t0;
      }
    }
    if (r < 0) continue;
    out.a.push(ta);
    out.b.push(tb);
  }
  return out;
}

/** The call layer as `vvm run` builds it, talking to a stand-in at `url` (no memory, no trace). */
export function standinRuntime(url: string, programDir?: string): CallRuntime {
  return new CallRuntime({
    provider: new AnthropicProvider({ apiKey: "sk-ant-bench", baseURL: url, log: () => {} }),
    memory: null,
    judgeModel: "haiku",
    models: {},
    trace: noTrace,
    accounting: new Accounting(),
    ...(programDir === undefined ? {} : { programDir }),
  });
}
