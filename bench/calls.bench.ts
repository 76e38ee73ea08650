// Call-layer overhead and pmap concurrency, both against the local Messages API stand-in.
//  1. 200 sequential agent calls through the runtime vs the same 200 calls made directly with the SDK (target ≤ 1.1x).
//  2. 32 calls of 200 ms each through `pmap` at --concurrency 8 vs the ideal 800 ms (target ≤ 1.25x).
import Anthropic from "@anthropic-ai/sdk";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { inputBlock } from "../runtime/providers/anthropic.ts";
import { resolveModel } from "../runtime/providers/models.ts";
import { serializeInput } from "../runtime/json-text.ts";
import { VAgent, type Value } from "../runtime/values.ts";
import { runCli } from "../test/support/cli.ts";
import { RemoteStandin } from "./remote-standin.ts";
import { interleaved, median, scratchDir, standinRuntime } from "./support.ts";

const N = 200;
const ROUNDS = 5;


function line(label: string, ratio: number, target: number, detail: string): void {
  process.stdout.write(`${label}: ${ratio.toFixed(2)}x (target <= ${target}x) ${ratio <= target ? "ok" : "MISSED"} — ${detail}\n`);
}

export async function run(): Promise<void> {
  const standin = await RemoteStandin.start();
  try {
    await standin.configure(0);
    await sequential(standin.url);
    await parallel(standin);
  } finally {
    await standin.stop();
  }
}

async function sequential(url: string): Promise<void> {
  const site = { path: "bench.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };
  const agent = new VAgent("bencher", new Map<string, Value>([["model", "haiku"], ["prompt", "You answer briefly."]]), site);
  const input = new Map<string, Value>([["id", 7], ["text", "a short input value"]]);
  const runtime = standinRuntime(url);
  const client = new Anthropic({ apiKey: "sk-ant-bench", baseURL: url, maxRetries: 0 });
  const signal = new AbortController().signal;

  const viaRuntime = async (i: number) => {
    const out = await runtime.call({ agent, task: `Task ${i}`, input, options: new Map(), site, signal });
    if (typeof out !== "string") throw new Error(`call ${i} failed: ${JSON.stringify(out)}`);
  };
  // The same request the provider builds, made by hand (no abort signal: the SDK's cheapest path).
  const direct = async (i: number) => {
    await client.messages.create(
      {
        model: resolveModel("haiku", {}),
        max_tokens: 8192,
        system: [{ type: "text", text: "You answer briefly.", cache_control: { type: "ephemeral" } }],
        messages: [{ role: "user", content: [{ type: "text", text: `Task ${i}` }, { type: "text", text: inputBlock(serializeInput(input)) }] }],
      },
    );
  };
  // Each round makes 200 calls each way, interleaved call by call
  const { a, b } = await interleaved(N, ROUNDS, viaRuntime, direct);
  const ma = median(a);
  const mb = median(b);
  line(`${N} sequential calls, runtime vs direct SDK`, ma / mb, 1.1, `runtime ${ma.toFixed(0)} ms, SDK ${mb.toFixed(0)} ms (median of ${ROUNDS})`);
}

async function parallel(standin: RemoteStandin): Promise<void> {
  const dir = scratchDir("calls");
  const prog = path.join(dir, "fan.vvm");
  await writeFile(
    prog,
    [
      'agent worker(model="haiku", prompt="You handle one item.")',
      "def handle(item):",
      "  return @worker `Handle item {item}.`(item)",
      "results = pmap(range(32), handle)",
      "export results",
      "",
    ].join("\n"),
  );
  const times: number[] = [];
  for (let r = 0; r < 3; r++) {
    await standin.configure(200);
    const t0 = performance.now();
    const res = await runCli(["run", prog, "--provider", "anthropic", "--concurrency", "8"], { cwd: dir, env: standin.env() });
    const ms = performance.now() - t0;
    if (res.code !== 0) throw new Error(`pmap run failed (exit ${res.code}): ${res.stderr}`);
    const { maxInFlight, requests } = await standin.stats();
    if (maxInFlight !== 8 || requests !== 32) throw new Error(`expected 32 requests, at most 8 in flight; saw ${requests}, ${maxInFlight}`);
    times.push(ms);
  }
  const m = median(times);
  line("32 x 200 ms calls through pmap at concurrency 8 vs ideal 800 ms", m / 800, 1.25, `${m.toFixed(0)} ms (median of 3, whole vvm run)`);
}
