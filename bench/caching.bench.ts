// Prompt caching that pays, measured with the stand-in's prompt cache (test/support/standin-cache.ts):
//  1. a 30-call memory conversation, every reply patching the memory (the context is new each call);
//  2. a 50-item `dry_run` pmap over one unchanged memory.
// "before" replays the same requests with every system block marked (the old rule); "after" is what the run
// itself reported. Billed = input + 1.25 x cache writes + 0.1 x cache reads, in input-token equivalents.
// Target: the conversation bills at most 0.9x of before; the fan-out at most 1.05x (the first sight of a
// context is sent unmarked, so one send more is billed at the full rate).

import { conversation, fanOut, type CacheMeasure } from "../test/support/caching-scenarios.ts";
import { startStandin } from "../test/support/standin.ts";
import { scratchDir } from "./support.ts";

function report(label: string, m: CacheMeasure, target: number): void {
  const ratio = m.after.billed / m.before.billed;
  const t = (x: CacheMeasure["after"]) => `${x.write} write / ${x.read} read / ${x.input} uncached, billed ${x.billed}`;
  process.stdout.write(`${label}: ${ratio.toFixed(2)}x of before (target <= ${target}x) ${ratio <= target ? "ok" : "MISSED"}\n`);
  process.stdout.write(`  before: ${t(m.before)}\n  after:  ${t(m.after)}\n`);
}

export async function run(): Promise<void> {
  const standin = await startStandin();
  const dir = scratchDir("caching");
  try {
    report("30-call memory conversation", await conversation(dir, standin, 30), 0.9);
    report("50-item dry_run pmap", await fanOut(dir, standin, 50), 1.05);
  } finally {
    await standin.stop();
  }
}
