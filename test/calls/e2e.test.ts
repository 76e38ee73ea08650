// End to end through `vvm run`: every reference example under sim, under a script and against the
// Messages API stand-in; conformance programs for call options, judges, `.with`, inline agents and `it`.
import { cp, mkdir, mkdtemp, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MODEL_ALIASES } from "../../runtime/providers/models.ts";
import { collect, ROOT, runCli, spawnCli, type CliResult } from "../support/cli.ts";
import { REFERENCE_EXAMPLES, referenceExamples } from "../support/examples.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { defaultHandler } from "../support/standin.ts";

const dir = useTempDir("vvm-e2e-calls-");
const standin = useStandin();

/**
 * A fresh copy of the reference examples (memory writes land beside the program), and the HOME to run them
 * with: its ~/.vvm/skills holds the github: skill 06-modules imports, so its agent gets the skill.
 */
async function examplesCopy(): Promise<{ root: string; programs: string[]; HOME: string }> {
  const root = await mkdtemp(path.join(dir, "examples-"));
  // Leave out any memory state someone's run left beside the examples.
  await cp(referenceExamples(), root, { recursive: true, filter: (src) => path.basename(src) !== ".vvm" });
  const programs = (await readdir(root)).filter((f) => /^[^.].*\.vvm$/.test(f)).sort();
  const HOME = await mkdtemp(path.join(dir, "home-"));
  await mkdir(path.join(HOME, ".vvm/skills/web-search"), { recursive: true });
  await writeFile(path.join(HOME, ".vvm/skills/web-search/SKILL.md"), "---\nname: web-search\ndescription: Find sources on the web.\n---\nSearch, then cite each source.\n");
  return { root, programs, HOME };
}

function expectCleanRun(res: CliResult, label: string): Record<string, unknown> {
  if (res.code !== 0) throw new Error(`${label}: exit ${res.code}\n${res.stderr}`);
  // stdout is exactly one JSON document and nothing else.
  const parsed = JSON.parse(res.stdout) as Record<string, unknown>;
  expect(res.stdout).toBe(JSON.stringify(parsed, null, 2) + "\n");
  return parsed;
}

/**
 * A run that finished but exported error values: exit 1 (the default without --allow-error-exports), the exports
 * still printed as one JSON document, and one stderr line naming exactly these keys.
 */
function expectErrorExports(res: CliResult, label: string, keys: string[]): Record<string, unknown> {
  if (res.code !== 1) throw new Error(`${label}: exit ${res.code}, expected 1 for error exports\n${res.stderr}`);
  const parsed = JSON.parse(res.stdout) as Record<string, unknown>;
  expect(res.stdout).toBe(JSON.stringify(parsed, null, 2) + "\n");
  const failed = Object.keys(parsed).filter((k) => (parsed[k] as { error?: unknown } | null)?.error instanceof Object);
  expect(failed).toEqual(keys);
  const line = keys.length === 1 ? `vvm: export '${keys[0]}' is an error value (` : `vvm: ${keys.length} exports are error values: `;
  expect(res.stderr).toContain(line);
  return parsed;
}

/** Rules exercising every call form the examples use; what they do not match falls back to sim. */
const EXAMPLES_SCRIPT = `
rules:
  - { kind: agent, agent: fetcher, times: 2, error: { kind: spawn_failed, status: 529, message: "overloaded" } }
  - { kind: agent, agent: fetcher, reply: "payments: operational" }
  - { kind: case, match: money, verdict: true }
  - { kind: choose, label: facts }
  - { kind: predicate, match: angry, verdict: true }
  - { kind: predicate, match: approves, verdict: true }
  - { kind: require, match: fsync, verdict: true }
  - { kind: require, verdict: false }
  - { kind: predicate, match: disk, input: disk, verdict: true }
  - { kind: predicate, match: "is a list", verdict: false }
  - kind: agent
    agent: notebook
    match: "Record today"
    reply: |
      Recorded batch 7.
      \`\`\`vvm-memory
      {"digest": "## Stable\\n- batch 7: activity fell 12% at 37C", "retain": ["W batch 7 assayed"]}
      \`\`\`
`;

// 07-errors exports error values on purpose; these runs are about calls, so they accept that (the exit code an
// error export gets by default is pinned in test/cli/strict.test.ts).
const ALLOW = ["--allow-error-exports"];

describe.skipIf(!REFERENCE_EXAMPLES)("the reference examples", () => {
  it("all run under sim: exit 0, JSON only on stdout, offline notice and summary on stderr", async () => {
    const { root, programs, HOME } = await examplesCopy();
    expect(programs.length).toBeGreaterThanOrEqual(9);
    for (const p of programs) {
      const res = await runCli(["run", p, ...ALLOW], { cwd: root, env: { HOME } });
      expectCleanRun(res, `sim ${p}`);
      expect(res.stderr).toContain("this run is offline");
      expect(res.stderr).toMatch(/vvm: \d+ calls? \(.*\[sim\]\n$/);
    }
  });

  it("all run under a script", async () => {
    const { root, programs, HOME } = await examplesCopy();
    await writeFile(path.join(root, "examples.yaml"), EXAMPLES_SCRIPT);
    const outputs: Record<string, Record<string, unknown>> = {};
    for (const p of programs) {
      const res = await runCli(["run", p, "--script", "examples.yaml", ...ALLOW], { cwd: root, env: { VVM_RETRY_BASE_MS: "1", HOME } });
      outputs[p] = expectCleanRun(res, `script ${p}`);
      expect(res.stderr).toContain("[script]");
    }
    // The scripted answers reached the programs.
    expect(outputs["02-triage.vvm"]).toMatchObject({ queue: "billing-priority", style: "facts" });
    expect(outputs["03-resilient-fetch.vvm"]).toEqual({ status: "payments: operational" });
    expect(outputs["05-fanout.vvm"].disk_lines).toEqual(["12:01 disk 91% full on db-2", "12:07 disk 97% full on db-2"]);
    expect(outputs["08-memory-journal.vvm"].entry).toBe("Recorded batch 7.");
    const digest = await readFile(path.join(root, ".vvm/memory"), "utf8").catch(() => null);
    expect(digest).toBeNull(); // a directory, not a file
    const keys = await readdir(path.join(root, ".vvm/memory"));
    const assay = keys.find((k) => k.includes("enzyme"))!;
    expect(await readFile(path.join(root, ".vvm/memory", assay, "digest.md"), "utf8")).toContain("batch 7: activity fell 12% at 37C");
  });

  it("all run against the Messages API stand-in through the real SDK", async () => {
    const { root, programs, HOME } = await examplesCopy();
    for (const p of programs) {
      // The default answers (verdicts true, choose the last option), except that a string is not a list.
      standin.reset().setHandler((req, i) =>
        /is a list/.test(req.body.messages?.[0]?.content?.[0]?.text ?? "") ? { type: "tool", input: { verdict: false } } : defaultHandler(req, i),
      );
      const res = await runCli(["run", p, ...ALLOW], { cwd: root, env: { ...standin.env(), HOME } });
      expectCleanRun(res, `stand-in ${p}`);
      expect(res.stderr).not.toContain("offline");
      expect(res.stderr).toContain("[anthropic]");
    }
  });
});

async function program(name: string, source: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, source);
  return file;
}

describe("conformance through vvm run", () => {
  it("the system prompt, the task and the input reach the API apart; `it` is the implicit input", async () => {
    const file = await program(
      "input.vvm",
      [
        'agent a(model="opus", prompt="Sys prompt.")',
        'doc = { title: "T", body: "B" }',
        "x = @a `Explicit.`(doc)",
        "y = @a `Top-level it.`()",
        "z = @a `Unit.`(())",
        "with input doc:",
        "  w = @a `Implicit it.`()",
        "export x",
        "",
      ].join("\n"),
    );
    const res = await runCli(["run", file], { cwd: dir, env: standin.env() });
    expectCleanRun(res, "input.vvm");
    const bodies = standin.requests.map((r) => r.body);
    expect(bodies.map((b) => b.model)).toEqual(Array(4).fill(MODEL_ALIASES.opus));
    expect(bodies[0].system).toEqual([{ type: "text", text: "Sys prompt." }]);
    const docBlock = 'Input:\n---\n{\n  "body": "B",\n  "title": "T"\n}\n---';
    expect(bodies[0].messages[0].content).toEqual([{ type: "text", text: "Explicit." }, { type: "text", text: docBlock }]);
    expect(bodies[1].messages[0].content).toEqual([{ type: "text", text: "Top-level it." }]);
    expect(bodies[2].messages[0].content).toEqual([{ type: "text", text: "Unit." }]);
    expect(bodies[3].messages[0].content).toEqual([{ type: "text", text: "Implicit it." }, { type: "text", text: docBlock }]);
  });

  it(".with merges (scalars replace, objects merge one level) and inline agents are agents", async () => {
    const file = await program(
      "with.vvm",
      [
        'agent base(model="sonnet", prompt="Base.", memory={ scope: "project", key: "base-key" })',
        'derived = base.with(prompt="Derived.")',
        'a = @base.with(model="haiku") `One.`(())',
        "b = @derived `Two.`(())",
        'c = @{model="opus", prompt="Inline."} `Three.`(())',
        'd = @base.with(memory={ key: "other-key" }) `Four.`(())',
        "export a",
        "",
      ].join("\n"),
    );
    const res = await runCli(["run", file], { cwd: dir, env: standin.env() });
    expectCleanRun(res, "with.vvm");
    const bodies = standin.requests.map((r) => r.body);
    expect(bodies.map((b) => [b.model, b.system[0].text])).toEqual([
      [MODEL_ALIASES.haiku, "Base."],
      [MODEL_ALIASES.sonnet, "Derived."],
      [MODEL_ALIASES.opus, "Inline."],
      [MODEL_ALIASES.sonnet, "Base."],
    ]);
    // The memory object merged one level deep: scope kept from the base, key replaced.
    const keys = await readdir(path.join(dir, ".vvm/memory"));
    expect(keys.some((k) => k.includes("other-key"))).toBe(true);
    expect(keys.some((k) => k.includes("base-key"))).toBe(true);
    expect(bodies[3].system).toHaveLength(2); // system prompt + memory context
  });

  it("retry, backoff, timeout and name options; error values flow into match", async () => {
    await writeFile(
      path.join(dir, "opts.yaml"),
      `
- { kind: agent, match: flaky, times: 2, error: { kind: rejected, status: 429, retry_after: 20ms } }
- { kind: agent, match: flaky, reply: recovered }
- { kind: agent, match: slow, delay: 2s, reply: late }
- { kind: agent, match: refused, error: { kind: rejected, status: 403, message: "no access" } }
`,
    );
    const file = await program(
      "opts.vvm",
      [
        'agent a(model="haiku", prompt="P.")',
        'r1 = @a `flaky`((), retry=2, backoff="fixed", name="flaky-one")',
        'r2 = @a `slow`((), timeout="100ms", retry=1)',
        "r3 = @a `refused`((), retry=3, colour=\"blue\")",
        "match r2:",
        '  case error(kind="timeout"):',
        '    k2 = "timeout"',
        "  case _:",
        '    k2 = "other"',
        "export r1",
        "export k2",
        "export r3",
        "",
      ].join("\n"),
    );
    const res = await runCli(["run", file, "--script", path.join(dir, "opts.yaml"), "--trace", "opts-trace.jsonl"], { cwd: dir });
    const out = expectErrorExports(res, "opts.vvm", ["r3"]);
    expect(out.r1).toBe("recovered");
    expect(out.k2).toBe("timeout");
    expect(out.r3).toEqual({ error: { kind: "rejected", message: "no access", data: { status: 403, request_id: "script-rule-4", attempts: 1, model: MODEL_ALIASES.haiku } } });
    // reported once, by the validator, with its position; the run then ignores it
    expect(res.stderr).toMatch(/opts\.vvm:4:\d+: W050 unknown agent-call option 'colour'/);
    expect(res.stderr).not.toMatch(/warning .*colour/);
    expect(res.stderr).toMatch(/vvm: 3 calls, 2 failed \(1 rejected, 1 timeout; 6 attempts\)/);
    const events = (await readFile(path.join(dir, "opts-trace.jsonl"), "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(events.find((e) => e.type === "call" && e.name === "flaky-one")).toMatchObject({ attempts: 3, ok: true });
    expect(events.filter((e) => e.type === "call_attempt" && e.name === "flaky-one").map((e) => e.retry_in_ms)).toEqual([20, 20, undefined]);
  });

  it("a bad option value raises thrown at the call site", async () => {
    const file = await program("bad-opt.vvm", ['agent a(model="haiku")', "r = @a `x`((), retry=\"two\")", "export r", ""].join("\n"));
    const res = await runCli(["run", file, "--provider", "sim"], { cwd: dir });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe("");
    expect(res.stderr).toContain('retry= expects a whole number of at least 0, got \\"two\\"');
  });

  it("judges of every form, answered by the model through the stand-in", async () => {
    standin.setHandler((req) => {
      const text: string = req.body.messages[0].content[0].text;
      if (req.body.tool_choice?.name === "choose_option") return { type: "tool", input: { label: "second" } };
      if (text.includes("never sure")) return { type: "no_tool" };
      if (req.body.tool_choice) return { type: "tool", input: { verdict: text.includes("yes") } };
      return { type: "text", text: "reply" };
    });
    const file = await program(
      "judges.vvm",
      [
        'v = "value"',
        "p1 = ?`say yes`(v)",
        "p2 = ?`say no`(v)",
        "p3 = ?`never sure`(v)",
        "match v:",
        "  case ?`no match`:",
        '    m = "first"',
        "  case ?`yes match`:",
        '    m = "second"',
        "  case _:",
        '    m = "default"',
        "choose v by ?`pick` as picked:",
        '  option "first":',
        '    c = "ran first"',
        '  option "second":',
        '    c = "ran second"',
        "kept = v",
        "constrain kept():",
        "  require ?`yes it is`",
        "broken = v",
        "constrain broken():",
        "  require ?`yes fine`",
        "  require ?`no way`",
        "export pack(p1, p2, p3, m, picked, c, kept)",
        "export broken",
        "",
      ].join("\n"),
    );
    const res = await runCli(["run", file, "--judge-model", "opus"], { cwd: dir, env: standin.env() });
    const out = expectErrorExports(res, "judges.vvm", ["broken"]);
    expect(out).toMatchObject({ p1: true, p2: false, p3: false, m: "second", picked: "second", c: "ran second", kept: "value" });
    expect((out.broken as { error: { kind: string } }).error.kind).toBe("constraint_violation");
    expect(standin.requests.every((r) => r.body.model === MODEL_ALIASES.opus)).toBe(true);
    expect(res.stderr).toMatch(/vvm: 0 calls \(0 attempts\), 9 judges \(9 attempts\)/);
  });

  it("a failed judge raises thrown, catchable with try/except, with the HTTP status in data", async () => {
    standin.setHandler(() => ({ type: "error", status: 401, message: "invalid x-api-key" }));
    const file = await program(
      "judge-fail.vvm",
      ["try:", "  ok = ?`anything`(1)", "except as err:", "  caught = err", "export caught", ""].join("\n"),
    );
    const res = await runCli(["run", file], { cwd: dir, env: standin.env() });
    const out = expectErrorExports(res, "judge-fail.vvm", ["caught"]);
    const e = (out.caught as { error: { kind: string; message: string; data: Record<string, unknown> } }).error;
    expect(e.kind).toBe("thrown");
    expect(e.message).toContain("invalid x-api-key");
    expect(e.data).toMatchObject({ kind: "rejected", status: 401, attempts: 1 });
  });

  it("pmap runs calls concurrently up to --concurrency, results in input order", async () => {
    // later items answer sooner, so finishing order is not input order
    standin.setHandler((req) => {
      const text: string = req.body.messages[0].content[0].text;
      return { type: "text", text: `done ${text}`, delayMs: 200 - 30 * Number(text.split(" ")[1]) };
    });
    const file = await program(
      "fan.vvm",
      ['agent w(model="haiku")', "def one(i):", "  return @w `item {i}`(i)", "out = pmap(range(6), one)", "export out", ""].join("\n"),
    );
    const res = await runCli(["run", file, "--concurrency", "3"], { cwd: dir, env: standin.env() });
    const out = expectCleanRun(res, "fan.vvm");
    expect(out.out).toEqual([0, 1, 2, 3, 4, 5].map((i) => `done item ${i}`));
    // the server saw exactly three requests at once: concurrent, and never past --concurrency
    // (wall-clock speed-up is measured in bench/, not asserted here)
    expect(standin.maxInFlight).toBe(3);
  });

  it("pmap cancels calls still in flight when one raises", async () => {
    standin.setHandler((req) => (req.body.messages[0].content[0].text === "item 0" ? { type: "text", text: "boom" } : { type: "hang" }));
    const file = await program(
      "cancel.vvm",
      [
        'agent w(model="haiku")',
        "def one(i):",
        "  r = @w `item {i}`(i)",
        '  if r == "boom":',
        '    raise "first failed"',
        "  return r",
        "out = pmap(range(4), one)",
        "export out",
        "",
      ].join("\n"),
    );
    const t0 = performance.now();
    const res = await runCli(["run", file], { cwd: dir, env: standin.env() });
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("first failed");
    expect(res.stdout).toBe("");
  });

  it("Ctrl-C cancels a call in flight and the run ends as interrupted", async () => {
    standin.setHandler(() => ({ type: "hang" }));
    const file = await program("hang.vvm", ['agent w(model="haiku")', "r = @w `wait`(())", "export r", ""].join("\n"));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const res = await runCli(["run", file], { cwd: dir, env: standin.env(), signal: ac.signal });
    expect(res.code).toBe(130);
    expect(res.stdout).toBe("");
  });

  it("a 429 storm under pmap recovers with retry= and honours retry-after", async () => {
    const seen = new Map<string, number>();
    standin.setHandler((req) => {
      const task: string = req.body.messages[0].content[0].text;
      const n = (seen.get(task) ?? 0) + 1;
      seen.set(task, n);
      return n <= 2 ? { type: "error", status: 429, retryAfterMs: 30 } : { type: "text", text: `ok ${task}` };
    });
    const file = await program(
      "storm.vvm",
      ['agent w(model="haiku")', "def one(i):", "  return @w `job {i}`(i, retry=2)", "out = pmap(range(8), one)", "export out", ""].join("\n"),
    );
    const res = await runCli(["run", file], { cwd: dir, env: standin.env() });
    const out = expectCleanRun(res, "storm.vvm");
    expect(out.out).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `ok job ${i}`));
    expect(standin.requests.length).toBe(24);
    expect(res.stderr).toMatch(/vvm: 8 calls \(24 attempts\)/);
  });

  it("the call examples in examples/ run offline and with their scripts", async () => {
    const examples = path.join(ROOT, "examples");
    const copy = await mkdtemp(path.join(dir, "own-"));
    for (const f of ["calls-retry.vvm", "calls-retry.yaml", "calls-judges.vvm", "calls-judges.yaml"]) await cp(path.join(examples, f), path.join(copy, f));
    expectCleanRun(await runCli(["run", "calls-retry.vvm"], { cwd: copy }), "calls-retry sim");
    // offline every requirement is violated: reply is error(kind="constraint_violation"), so the run exits 1
    expectErrorExports(await runCli(["run", "calls-judges.vvm"], { cwd: copy }), "calls-judges sim", ["reply"]);
    const retry = await runCli(["run", "calls-retry.vvm", "--script", "calls-retry.yaml"], { cwd: copy, env: { VVM_RETRY_BASE_MS: "1" } });
    expect(expectCleanRun(retry, "calls-retry script")).toEqual({ health: "search in eu-west is healthy after a short overload.", advice: "none needed" });
    expect(retry.stderr).toContain("1 call (3 attempts)");
    const judges = await runCli(["run", "calls-judges.vvm", "--script", "calls-judges.yaml"], { cwd: copy });
    expect(expectCleanRun(judges, "calls-judges script")).toEqual({
      frustrated: true,
      area: "discoverability",
      plan: "explain",
      reply: "The export button now sits in the top bar, next to Share.",
    });
  });

  it("SIGINT to a real `vvm run` with a request in flight ends it promptly with exit 130", async () => {
    let arrived: () => void = () => {};
    const inFlight = new Promise<void>((r) => (arrived = r));
    standin.setHandler(() => {
      arrived();
      return { type: "hang" };
    });
    const file = await program("sigint.vvm", ['agent w(model="haiku")', "r = @w `wait forever`(())", "export r", ""].join("\n"));
    // spawnCli resolves tsx from its working directory: keep the default (the repository).
    const child = spawnCli(["run", file], { env: standin.env() });
    const done = collect(child);
    const early = await Promise.race([inFlight.then(() => null), done]);
    if (early) throw new Error(`vvm exited before calling the model: ${early.code}\n${early.stderr}`);
    const t0 = performance.now();
    child.kill("SIGINT");
    const res = await done;
    expect(res.code).toBe(130);
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(res.stdout).toBe("");
  });

  it("writes the trace file with the interpreter's events and ours", async () => {
    const file = await program("traced.vvm", ['agent w(model="haiku")', "r = @w `hello`(())", "ok = ?`fine`(r)", "export r", ""].join("\n"));
    const res = await runCli(["run", file, "--provider", "sim", "--trace", "t.jsonl"], { cwd: dir });
    expectCleanRun(res, "traced.vvm");
    const types = (await readFile(path.join(dir, "t.jsonl"), "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l).type);
    expect(types[0]).toBe("run");
    expect(types.at(-1)).toBe("summary");
    for (const t of ["call_attempt", "call", "judge_attempt", "judge"]) expect(types).toContain(t);
    expect((await stat(path.join(dir, "t.jsonl"))).size).toBeGreaterThan(0);
  });
});
