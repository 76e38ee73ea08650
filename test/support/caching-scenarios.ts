// Two memory programs run through `vvm run` against the stand-in, measuring what prompt caching costs:
// a conversation whose every reply patches the memory (the context changes each call), and a `dry_run`
// fan-out over one unchanged memory. "before" replays the very same requests with every system block
// marked, as the runtime marked them until the marks followed reuse (runtime/providers/cache-plan.ts).
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { patchReply } from "../memory/helpers.ts";
import { runCli } from "./cli.ts";
import type { Standin } from "./standin.ts";
import { PromptCache } from "./standin-cache.ts";

interface CacheTotals {
  requests: number;
  input: number;
  write: number;
  read: number;
  /** input-token equivalents: writes bill 1.25x, reads 0.1x */
  billed: number;
}

export interface CacheMeasure {
  after: CacheTotals;
  before: CacheTotals;
}

/** An agent prompt of about 1,500 tokens, as a real one with instructions and examples is. */
const PROMPT = Array.from({ length: 60 }, (_, i) => `Rule ${i + 1}: keep the notes short, dated and about one thing each; never repeat a fact.`).join("\n");

const agentDecl = (key: string) => `agent scribe(model="sonnet", prompt=${JSON.stringify(PROMPT)}, memory={ scope: "project", key: ${JSON.stringify(key)} })`;
const items = (n: number) => `[${Array.from({ length: n }, (_, i) => i + 1).join(", ")}]`;

type Counts = { input: number; write: number; read: number };

function totals(requests: number, c: Counts): CacheTotals {
  return { requests, ...c, billed: Math.round(c.input + 1.25 * c.write + 0.1 * c.read) };
}

function sum(usages: Counts[]): CacheTotals {
  const c = { input: 0, write: 0, read: 0 };
  for (const u of usages) {
    c.input += u.input;
    c.write += u.write;
    c.read += u.read;
  }
  return totals(usages.length, c);
}

/**
 * "after": the token counts of the run's own summary (what the stand-in reported for the marks the runtime
 * sent); "before": the requests since `start` replayed with every system block marked, counted from `from`.
 */
function measure(standin: Standin, start: number, from: number, after: CacheTotals): CacheMeasure {
  const replay = new PromptCache();
  replay.minTokens = standin.cache.minTokens;
  const before = standin.requests.slice(start).map((r, i) => {
    const b = r.body;
    const u = replay.usage({ ...b, system: (b.system ?? []).map((s: object) => ({ ...s, cache_control: { type: "ephemeral" } })) });
    return { counted: start + i >= from, input: u.input_tokens, write: u.cache_creation_input_tokens, read: u.cache_read_input_tokens };
  });
  return { after, before: sum(before.filter((u) => u.counted)) };
}

/** Runs the program and returns the token totals of its trace's summary event. */
async function run(dir: string, file: string, source: string, standin: Standin): Promise<CacheTotals> {
  await writeFile(path.join(dir, file), source);
  const trace = path.join(dir, `${file}.trace.jsonl`);
  const res = await runCli(["run", file, "--trace", trace], { cwd: dir, env: standin.env() });
  if (res.code !== 0) throw new Error(`vvm run ${file} exited ${res.code}\n${res.stderr}`);
  const events = (await readFile(trace, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as Record<string, number>);
  const s = events.find((e) => (e.type as unknown) === "summary")!;
  return totals(s.call_attempts + s.judge_attempts, { input: s.tokens_in, write: s.cache_write, read: s.cache_read });
}

/** `calls` calls in a row, each reply patching the digest and retaining a fact: the context is new every call. */
export async function conversation(dir: string, standin: Standin, calls: number): Promise<CacheMeasure> {
  const start = standin.requests.length;
  let n = 0;
  standin.setHandler(() => {
    const i = ++n;
    const lines = Array.from({ length: i }, (_, k) => `- item ${k + 1} recorded and checked by the night shift`).join("\n");
    return { type: "text", text: patchReply({ digest: `## Items\n${lines}\n`, retain: [`item ${i} recorded`] }, `done ${i}`) };
  });
  const source = [agentDecl("talk"), "def note(n):", "  return @scribe `Record item {n}.`(n)", `out = map(${items(calls)}, note)`, "export out"].join("\n");
  const after = await run(dir, "talk.vvm", source, standin);
  return measure(standin, start, start, after);
}

/** One call that writes the memory, then `count` `dry_run` calls over it through `pmap`: the same context each time. */
export async function fanOut(dir: string, standin: Standin, count: number): Promise<CacheMeasure> {
  const start = standin.requests.length;
  standin.setHandler(() => ({ type: "text", text: patchReply({ digest: "## Open\n- VND-221 card-processor timeouts\n", retain: ["VND-221 opened"] }, "seeded") }));
  await run(dir, "seed.vvm", [agentDecl("fan"), "r = @scribe `Seed the memory.`()", "export r"].join("\n"), standin);
  const from = standin.requests.length;
  standin.setHandler(() => ({ type: "text", text: "nothing to add" }));
  const source = [
    agentDecl("fan"),
    "def ask(n):",
    '  return @scribe `Which open item matters most? Answer in one line.`((), memory_mode="dry_run")',
    `out = pmap(${items(count)}, ask)`,
    "export out",
  ].join("\n");
  const after = await run(dir, "fan.vvm", source, standin);
  return measure(standin, start, from, after);
}
