// Cost in dollars: the price table's arithmetic, the summary line and `--usage`, the `--max-cost` cap,
// VVM_PRICES, and the trace's cost fields (runtime/providers/prices.ts, runtime/calls/costs.ts).
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Costs, formatDollars, JUDGES_ROW } from "../../runtime/calls/costs.ts";
import { DEFAULT_PRICES, dollars, priceOf } from "../../runtime/providers/prices.ts";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const u = (inputTokens: number, outputTokens: number, cacheReadTokens = 0, cacheWriteTokens = 0) => ({ inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens });

describe("the price table", () => {
  it("prices each kind of token at its own rate, per million", () => {
    // sonnet 5.5: $2 in, $10 out, $2.50 cache write, $0.10 cache read
    expect(dollars(DEFAULT_PRICES["claude-sonnet-5-5"]!, u(1_000_000, 0))).toBeCloseTo(2, 10);
    expect(dollars(DEFAULT_PRICES["claude-sonnet-5-5"]!, u(100_000, 20_000, 50_000, 10_000))).toBeCloseTo(0.2 + 0.2 + 0.005 + 0.025, 10);
    expect(dollars(DEFAULT_PRICES["claude-opus-5-5"]!, u(1000, 1000))).toBeCloseTo(0.004 + 0.02, 10);
  });

  it("bills a whole request at the long-prompt rates once its prompt, cache included, passes the threshold", () => {
    const haiku = DEFAULT_PRICES["claude-haiku-5-5"]!;
    expect(dollars(haiku, u(100_000, 1000))).toBeCloseTo((100_000 * 0.1 + 1000 * 0.5) / 1e6, 12);
    // 60,000 uncached + 50,000 read = 110,000 prompt tokens: every token at the higher rates, output too
    expect(dollars(haiku, u(60_000, 1000, 50_000))).toBeCloseTo((60_000 * 0.5 + 1000 * 2.5 + 50_000 * 0.05) / 1e6, 12);
  });

  it("finds a dated model id by its undated name, and nothing for an unknown model", () => {
    expect(priceOf(DEFAULT_PRICES, "claude-haiku-4-5-20251001")).toBe(DEFAULT_PRICES["claude-haiku-4-5"]);
    expect(priceOf(DEFAULT_PRICES, "my-model-7")).toBeNull();
    expect(priceOf(DEFAULT_PRICES, "toString")).toBeNull();
  });

  it("writes dollars as people read them", () => {
    expect([0, 1.234, 0.9, 0.0123, 0.00015, 0.0000049, 1e-9].map(formatDollars)).toEqual(["$0.00", "$1.23", "$0.90", "$0.0123", "$0.00015", "$0.0000049", "<$0.000001"]);
  });
});

describe("costs by agent", () => {
  it("says cost unknown, never a guess, when a model has no price; tokenless requests cost nothing", () => {
    const c = new Costs(DEFAULT_PRICES, null);
    c.request("a", "claude-sonnet-5-5", u(1_000_000, 0));
    expect(c.summary()).toBe("$2.00");
    c.request("b", "my-model-7", u(0, 0));
    expect(c.summary()).toBe("$2.00");
    c.request("b", "my-model-7", u(10, 10));
    expect(c.summary()).toBe("cost unknown (no price for my-model-7; $2.00 for the rest)");
    expect(c.price("my-model-7", u(10, 10))).toBeNull();
  });

  it("--usage: one row per agent, judges last, then the total", () => {
    const c = new Costs(DEFAULT_PRICES, null);
    c.request("writer", "claude-sonnet-5-5", u(1000, 100, 0, 2000));
    c.finished("writer", false);
    c.request("writer", "claude-sonnet-5-5", null);
    c.request("writer", "claude-sonnet-5-5", u(1000, 100, 2000));
    c.finished("writer", true);
    c.request(JUDGES_ROW, "claude-haiku-5-5", u(200, 10));
    c.finished(JUDGES_ROW, false);
    c.request("another", "my-model-7", u(5, 5));
    c.finished("another", false);
    const rows = c.table().map((l) => l.split(/\s{2,}/));
    expect(rows).toEqual([
      ["agent", "calls", "failed", "requests", "in", "out", "cache read", "cache write", "cost"],
      ["another", "1", "0", "1", "5", "5", "0", "0", "unknown (my-model-7)"],
      ["writer", "2", "1", "3", "2000", "200", "2000", "2000", "$0.0112"],
      ["(judges)", "1", "0", "1", "200", "10", "0", "0", "$0.000025"],
      ["total", "4", "1", "5", "2205", "215", "2000", "2000", "unknown (my-model-7)"],
    ]);
  });

  it("--max-cost refuses a call once spent plus the prompt's estimate passes the cap, and any call to an unpriced model", () => {
    const c = new Costs(DEFAULT_PRICES, 1);
    expect(c.admit("claude-sonnet-5-5", () => 4000)).toBeNull();
    c.request("a", "claude-sonnet-5-5", u(0, 99_900));
    // $0.999 spent; 4,000 characters are about 1,000 tokens, $0.002 at $2 per million
    expect(c.admit("claude-sonnet-5-5", () => 4000)).toBe("--max-cost $1.00 reached: $0.999 spent, and this call's prompt alone is about $0.0020; no new calls start");
    expect(c.admit("claude-sonnet-5-5", () => 40)).toBeNull();
    expect(c.admit("my-model-7", () => 1)).toMatch(/model my-model-7 has no price/);
    expect(c.refused).toBe(2);
    // a prompt past the long-prompt threshold is estimated at the long-prompt rate, as it is billed
    const haiku = new Costs(DEFAULT_PRICES, 0.05);
    expect(haiku.admit("claude-haiku-5-5", () => 4 * 99_000)).toBeNull();
    expect(haiku.admit("claude-haiku-5-5", () => 4 * 200_000)).toBe("--max-cost $0.05 reached: $0.00 spent, and this call's prompt alone is about $0.10; no new calls start");
    // within the cap the summary is the dollars alone; past it (calls in flight finish), by how much
    expect(c.summary()).toBe("$0.999");
    c.request("a", "claude-sonnet-5-5", u(0, 1000));
    expect(c.summary()).toBe("$1.01, $0.0090 past --max-cost $1.00 (calls already started finish)");
    // a reply billed under a model id without a price (a gateway's own name) spent what the cap cannot count
    const gateway = new Costs(DEFAULT_PRICES, 1);
    gateway.request("a", "claude-sonnet-5-5", u(100, 10));
    expect(gateway.admit("claude-sonnet-5-5", () => 40)).toBeNull();
    gateway.request("a", "us.anthropic.claude-sonnet", u(400_000, 90_000));
    expect(gateway.admit("claude-sonnet-5-5", () => 40)).toBe(
      "the API billed earlier requests as us.anthropic.claude-sonnet, which has no price (VVM_PRICES can give it one), so --max-cost $1.00 cannot tell what was spent; no new calls start",
    );
    // no cap: nothing is refused and the prompt is never measured
    expect(new Costs(DEFAULT_PRICES, null).admit("my-model-7", () => { throw new Error("measured"); })).toBeNull();
  });
});

describe("cost through vvm run", () => {
  const dir = useTempDir("vvm-costs-");
  const program = [
    'agent writer(model="sonnet", prompt="You write short notes.")',
    "def note(n):",
    "  return @writer `Write note {n}.`(n)",
    "def judged(x):",
    "  try:",
    "    return ?`the notes are fine`(x)",
    "  except as e:",
    "    return e",
    "notes = pmap([1, 2, 3, 4], note)",
    "ok = judged(notes)",
    "export notes",
    "export ok",
  ].join("\n");
  // each writer call: 100,000 in, 20,000 out, 50,000 read, 10,000 written = $0.43 at sonnet 5.5's rates
  const script = [
    "rules:",
    "  - kind: agent",
    "    agent: writer",
    '    reply: "a note"',
    "    usage: { input_tokens: 100000, output_tokens: 20000, cache_read_tokens: 50000, cache_write_tokens: 10000 }",
    "  - kind: predicate",
    "    verdict: true",
    "    usage: { input_tokens: 1000, output_tokens: 100 }",
  ].join("\n");
  const files = async () => {
    await writeFile(path.join(dir, "cost.vvm"), program);
    await writeFile(path.join(dir, "cost.yaml"), script);
  };

  it("the summary line shows dollars and --usage a row per agent; stdout is only the exports", async () => {
    await files();
    const res = await runCli(["run", "cost.vvm", "--script", "cost.yaml", "--usage", "--trace", "t.jsonl"], { cwd: dir });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ notes: ["a note", "a note", "a note", "a note"], ok: true });
    const lines = res.stderr.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^vvm: 4 calls \(4 attempts\), 1 judge \(1 attempt\), tokens 401000 in \/ 80100 out, cache 200000 read \/ 40000 write, \$1\.72, model time \d+\.\d\ds \[script\]$/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/))).toEqual([
      ["agent", "calls", "failed", "requests", "in", "out", "cache read", "cache write", "cost"],
      ["writer", "4", "0", "4", "400000", "80000", "200000", "40000", "$1.72"],
      // the judge model (haiku 5.5): 1,000 x $0.10 + 100 x $0.50 per million
      ["(judges)", "1", "0", "1", "1000", "100", "0", "0", "$0.00015"],
      ["total", "5", "0", "5", "401000", "80100", "200000", "40000", "$1.72"],
    ]);
    const events = (await readFile(path.join(dir, "t.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === "call_attempt").map((e) => e.cost_usd)).toEqual(Array(4).fill(0.43));
    expect(events.find((e) => e.type === "judge_attempt").cost_usd).toBeCloseTo(0.00015, 10);
    expect(events.find((e) => e.type === "summary").cost_usd).toBeCloseTo(1.72015, 10);
  });

  it("--max-cost: no call starts once the money is spent, the refused ones are error(kind=\"rejected\"), and the run exits 1", async () => {
    await files();
    const res = await runCli(["run", "cost.vvm", "--script", "cost.yaml", "--max-cost", "$0.80", "--concurrency", "1"], { cwd: dir });
    expect(res.code).toBe(1);
    // $0.43 after the first call, $0.86 after the second: the third and the judge are refused
    const out = JSON.parse(res.stdout);
    expect(out.notes.error.kind).toBe("rejected");
    expect(out.notes.error.message).toMatch(/^--max-cost \$0\.80 reached: \$0\.86 spent/);
    // shaped like a failed call's and a failed judge's data, with no attempt made
    expect(out.notes.error.data).toEqual({ status: null, request_id: null, attempts: 0, model: expect.any(String) });
    expect(out.ok.error.kind).toBe("thrown");
    expect(out.ok.error.data).toEqual({ status: null, request_id: null, attempts: 0, model: "claude-haiku-5-5", kind: "rejected" });
    expect(res.stderr).toContain("vvm: --max-cost refused 2 of this run's calls and judges: exit 1\n");
    expect(res.stderr).toMatch(/tokens 200000 in \/ 40000 out, .*\$0\.86, \$0\.06 past --max-cost \$0\.80 \(calls already started finish\), model time/);
  });

  it("a judge --max-cost refuses has its judge trace event and narration line, as the summary counts it", async () => {
    await files();
    const res = await runCli(["run", "cost.vvm", "--script", "cost.yaml", "--max-cost", "0.5", "--trace", "refused.jsonl", "--narrate"], { cwd: dir });
    expect(res.code).toBe(1);
    const events = (await readFile(path.join(dir, "refused.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
    expect(events.find((e) => e.type === "summary")).toMatchObject({ judges: 1, failed_judges: 1, failed_judge_kinds: { rejected: 1 } });
    expect(events.filter((e) => e.type === "judge")).toEqual([expect.objectContaining({ kind: "predicate", attempts: 0, ok: false, error_kind: "rejected", site: expect.stringMatching(/cost\.vvm:6:12$/) })]);
    expect(res.stderr).toMatch(/\? predicate \(claude-haiku-5-5\) → error\(kind=rejected\)/);
  });

  it("--max-cost lets the calls already in flight finish", async () => {
    await files();
    // all four start together, while nothing is spent: all four finish, and only the judge is refused
    const res = await runCli(["run", "cost.vvm", "--script", "cost.yaml", "--max-cost", "0.5"], { cwd: dir });
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout).notes).toEqual(["a note", "a note", "a note", "a note"]);
    expect(res.stderr).toContain("vvm: --max-cost refused 1 of this run's calls and judges: exit 1\n");
    // the summary line says how far past the cap they went
    expect(res.stderr).toMatch(/, \$1\.72, \$1\.22 past --max-cost \$0\.50 \(calls already started finish\), model time/);
  });

  it("refuses a bad --max-cost as a usage error", async () => {
    await files();
    for (const bad of ["0", "-1", "abc", "$", "0x10", "1e3", "Infinity", "$-2", "9".repeat(400)]) {
      const res = await runCli(["run", "cost.vvm", "--script", "cost.yaml", "--max-cost", bad], { cwd: dir });
      expect(res.code).toBe(64);
      expect(res.stderr).toContain("expected an amount of dollars above 0");
      expect(res.stdout).toBe("");
    }
  });

  it("VVM_PRICES prices a model the table lacks, or changes one; a bad file is a usage error", async () => {
    await writeFile(path.join(dir, "own.vvm"), 'agent a(model="my-model-7")\nr = @a `Hi.`()\nexport r');
    await writeFile(path.join(dir, "own.yaml"), 'rules:\n  - kind: agent\n    reply: "hi"\n    usage: { input_tokens: 1000000, output_tokens: 1000000 }\n');
    const unknown = await runCli(["run", "own.vvm", "--script", "own.yaml"], { cwd: dir });
    expect(unknown.code).toBe(0);
    expect(unknown.stderr).toContain("cost unknown (no price for my-model-7; $0.00 for the rest)");
    await writeFile(path.join(dir, "prices.json"), JSON.stringify({ "my-model-7": { input: 1, output: 3, cache_write: 1.25, cache_read: 0.1 } }));
    const priced = await runCli(["run", "own.vvm", "--script", "own.yaml"], { cwd: dir, env: { VVM_PRICES: "prices.json" } });
    expect(priced.code).toBe(0);
    expect(priced.stderr).toContain(", $4.00, model time");
    // a model id that every object has a slot for is priced like any other
    await writeFile(path.join(dir, "proto.vvm"), 'agent a(model="__proto__")\nr = @a `Hi.`()\nexport r');
    await writeFile(path.join(dir, "prices.json"), JSON.stringify(JSON.parse('{"__proto__": {"input": 1, "output": 3, "cache_write": 1.25, "cache_read": 0.1}}')));
    const proto = await runCli(["run", "proto.vvm", "--script", "own.yaml"], { cwd: dir, env: { VVM_PRICES: "prices.json" } });
    expect(proto.stderr).toContain(", $4.00, model time");
    for (const [body, message] of [
      ["{", /VVM_PRICES=prices\.json:1:2: not JSON: /],
      // a file named by mistake: where it is not JSON, never its text
      ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", /^vvm: VVM_PRICES=prices\.json:1:1: not JSON: expected a JSON value, found 'aws_secret_access_key'\n$/],
      ['{"m": {"input": 1, "output": 1, "cache_write": 1, "cache_read": 1},\n "m": {}}', /VVM_PRICES=prices\.json:2:2: not JSON: the field "m" is given twice in this object/],
      ["[]", /expected an object of model ids/],
      ['{"m": {"input": 1}}', /"m": missing output, cache_write, cache_read/],
      ['{"m": {"input": -1, "output": 1, "cache_write": 1, "cache_read": 1}}', /"m"\.input: expected dollars per million tokens/],
      ['{"m": {"inputs": 1}}', /"m": unknown field "inputs"/],
      ['{"m": {"input": 1e400, "output": 1, "cache_write": 1, "cache_read": 1}}', /VVM_PRICES=prices\.json:1:17: not JSON: the number 1e400 is too large/],
    ] as const) {
      await writeFile(path.join(dir, "prices.json"), body);
      const res = await runCli(["run", "own.vvm", "--script", "own.yaml"], { cwd: dir, env: { VVM_PRICES: "prices.json" } });
      expect(res.code).toBe(64);
      expect(res.stderr).toMatch(message);
    }
    // a device named by mistake is refused at once, never read without end
    const device = await runCli(["run", "own.vvm", "--script", "own.yaml"], { cwd: dir, env: { VVM_PRICES: "/dev/zero" } });
    expect(device.code).toBe(64);
    expect(device.stderr).toContain("VVM_PRICES=/dev/zero: not a regular file");
  });
});
