// Helpers shared by the bench scripts.
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, writeSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Accounting } from "../runtime/calls/accounting.ts";
import { CallRuntime } from "../runtime/calls/runtime.ts";
import { AnthropicProvider } from "../runtime/providers/anthropic.ts";
import { noTrace } from "../runtime/trace.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Every bench's files live under one folder that run.ts removes after the last bench, not bench by bench:
 * on ext4 without a journal (the machine these were measured on) the kernel passes over every inode freed
 * in the last 5-10 minutes when it makes a file, so a bench's clean-up of thousands of files would slow
 * every file a later bench makes (a file costs 30-60 µs to make on a quiet disk there, 150-450 µs after).
 * run.ts makes the folder and names it to each bench's process.
 */
let scratch: string | null = null;

export function useScratchRoot(dir: string): void {
  scratch = dir;
}

/** A new directory for one bench's files, inside the folder run.ts named. */
export function scratchDir(name: string): string {
  if (scratch === null) throw new Error("no scratch folder: run benches through bench/run.ts");
  return mkdtempSync(path.join(scratch, `${name}-`));
}

/** What making a small file costs on this disk right now (median µs of 200, kept until run.ts removes the scratch folder): context for benches that make files. */
export function fileCreateMicros(): number {
  const dir = path.join(scratchDir("probe"), "files");
  mkdirSync(dir);
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    const fd = openSync(path.join(dir, `f${i}`), "wx");
    writeSync(fd, "x".repeat(900));
    closeSync(fd);
    times.push((performance.now() - t0) * 1000);
  }
  return median(times);
}

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
