// Typed results: what `returns=` adds to a call. 200 sequential calls with returns= vs 200 without, through the
// runtime against the stand-in (in a worker thread), which gives both the same JSON reply; interleaved call by
// call so machine load falls on both alike. Target: a typed call takes ≤ 1.1x the time of an untyped one.
// Also printed: the typed work alone (read the reply's JSON, validate it, fill optional fields) per reply.
import { decodeReply, prepareTyped } from "../runtime/calls/typed.ts";
import { fromJSON, VAgent, type Value } from "../runtime/values.ts";
import { RemoteStandin } from "./remote-standin.ts";
import { interleaved, median, standinRuntime } from "./support.ts";

const N = 200;
const ROUNDS = 5;
const TARGET = 1.1;
const SHAPE = { vendor: "string", amount: "number", date: "string", category: "travel|meals|supplies|other", tags: ["string"], note: "string?", lines: [{ sku: "string", qty: "integer" }] };
const REPLY = JSON.stringify({ vendor: "Cervejaria Ramiro", amount: 118, date: "2026-03-02", category: "meals", tags: ["team", "lisbon"], lines: [{ sku: "A-1", qty: 2 }, { sku: "B-7", qty: 1 }] });

export async function run(): Promise<void> {
  const standin = await RemoteStandin.start();
  try {
    await standin.configure(0, REPLY);
    const site = { path: "bench.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };
    const agent = new VAgent("bookkeeper", new Map<string, Value>([["model", "haiku"], ["prompt", "You read receipts."]]), site);
    const runtime = standinRuntime(standin.url);
    const signal = new AbortController().signal;
    const untyped = new Map<string, Value>();
    const typed = new Map<string, Value>([["returns", fromJSON(SHAPE)]]);
    const call = async (i: number, options: Map<string, Value>) => {
      const out = await runtime.call({ agent, task: `Read receipt ${i}.`, input: "Dinner at Cervejaria Ramiro, 118.00 EUR", options, site, signal });
      const ok = options.size === 0 ? typeof out === "string" : out instanceof Map && out.get("amount") === 118;
      if (!ok) throw new Error(`call ${i} failed: ${JSON.stringify(out)}`);
    };
    // (the warm-up round also loads and compiles the validator)
    const { a, b } = await interleaved(N, ROUNDS, (i) => call(i, typed), (i) => call(i, untyped));
    const ma = median(a);
    const mb = median(b);
    const ratio = ma / mb;
    process.stdout.write(
      `${N} sequential calls, typed (returns=) vs untyped: ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? "ok" : "MISSED"} — ` +
        `typed ${(ma / N).toFixed(3)} ms, untyped ${(mb / N).toFixed(3)} ms per call (median of ${ROUNDS})\n`,
    );
    const spec = (await prepareTyped(fromJSON(SHAPE), false, site))!;
    const reps = 20_000;
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) if (!decodeReply(spec, REPLY).ok) throw new Error("the reply does not fit");
    process.stdout.write(`decode and validate one reply: ${(((performance.now() - t0) / reps) * 1000).toFixed(1)} µs\n`);
  } finally {
    await standin.stop();
  }
}
