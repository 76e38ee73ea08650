// createModelLayer: provider selection, command-line mistakes, the offline notice, trace file,
// summary line and live progress.
import { existsSync } from "node:fs";
import { link, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createModelLayer, type ModelLayerOptions } from "../../src/commands/model-layer.ts";
import { UsageError, type CliIO } from "../../src/io.ts";
import { runCli, testIO } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { agent, callReq, judgeReq } from "./helpers.ts";

const dir = useTempDir("vvm-layer-");
const standin = useStandin();

function io(env: Record<string, string> = {}, tty = false) {
  const out = { stdout: "", stderr: "" };
  const cli = testIO((stream, s) => (out[stream === "out" ? "stdout" : "stderr"] += s), { env: { HOME: dir, ...env }, cwd: dir, stderrIsTTY: tty });
  return { cli, out };
}

function opts(cli: CliIO, over: Partial<ModelLayerOptions> = {}): ModelLayerOptions {
  return {
    provider: "auto",
    judgeModel: "haiku",
    lockTimeout: 1000,
    memoryBudget: 2000,
    entryPath: path.join(dir, "prog.vvm"),
    io: cli,
    ...over,
  };
}

describe("provider selection", () => {
  it("auto without a key runs offline with one notice line; sim says nothing", async () => {
    const { cli, out } = io();
    const layer = await createModelLayer(opts(cli));
    expect(await layer.agents.call(callReq(agent("a"), "hi", null))).toBe("[sim:a] hi");
    await layer.close();
    const lines = out.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe(
      "vvm: ANTHROPIC_API_KEY is not set, so this run is offline: the simulator answers every call and judge. Set ANTHROPIC_API_KEY to call Claude (--provider sim hides this line)",
    );
    expect(lines).toHaveLength(2);
    expect(out.stdout).toBe("");

    const quiet = io();
    await (await createModelLayer(opts(quiet.cli, { provider: "sim" }))).close();
    expect(quiet.out.stderr).not.toContain("offline");
  });

  it("auto with a key uses the anthropic provider (here pointed at the stand-in)", async () => {
    standin.reset().enqueue({ type: "text", text: "from the stand-in" });
    const { cli, out } = io({ ...standin.env(), VVM_MODEL_SONNET: "claude-sonnet-custom" });
    const layer = await createModelLayer(opts(cli));
    expect(await layer.agents.call(callReq(agent("a"), "hi", null))).toBe("from the stand-in");
    await layer.close();
    // the environment's model override reaches the request (the runtime itself never reads the environment)
    expect(standin.requests[0].body.model).toBe("claude-sonnet-custom");
    expect(out.stderr).toMatch(/^vvm: 1 call \(1 attempt\), 0 judges \(0 attempts\), tokens \d+ in \/ \d+ out, cache 0 read \/ 0 write, cost unknown \(no price for claude-sonnet-custom; \$0\.00 for the rest\), model time \d+\.\d\ds \[anthropic\]\n$/);
  });

  it("command-line mistakes are usage errors", async () => {
    const { cli } = io();
    await expect(createModelLayer(opts(cli, { provider: "anthropic" }))).rejects.toThrow(UsageError);
    await expect(createModelLayer(opts(cli, { provider: "anthropic" }))).rejects.toThrow(/--provider anthropic needs ANTHROPIC_API_KEY/);
    await expect(createModelLayer(opts(cli, { provider: "script" }))).rejects.toThrow("--provider script needs --script FILE");
    await expect(createModelLayer(opts(cli, { provider: "sim", script: "x.yaml" }))).rejects.toThrow("--script cannot be combined with --provider sim");
    await expect(createModelLayer(opts(cli, { script: "missing.yaml" }))).rejects.toThrow("missing.yaml: no such file");
    await writeFile(path.join(dir, "bad.yaml"), "- reply: ok\n- verdict: perhaps\n");
    await expect(createModelLayer(opts(cli, { script: "bad.yaml" }))).rejects.toThrow('bad.yaml:2:12: rule 2: verdict: expected true, false or "uncertain"');
    await expect(createModelLayer(opts(cli, { provider: "sim", trace: "no/such/dir/t.jsonl" }))).rejects.toThrow(/--trace no\/such\/dir\/t.jsonl: cannot write the trace file \(ENOENT\)/);
    await writeFile(path.join(dir, "prog.vvm"), "x = 1\n");
    await expect(createModelLayer(opts(cli, { provider: "sim", trace: "prog.vvm" }))).rejects.toThrow("--trace prog.vvm: that is the program itself");
    expect(await readFile(path.join(dir, "prog.vvm"), "utf8")).toBe("x = 1\n");
    // by identity, not name: a link or a second name of a file the run reads would be emptied by the trace
    await symlink("prog.vvm", path.join(dir, "to-prog.jsonl"));
    await link(path.join(dir, "prog.vvm"), path.join(dir, "prog-too.jsonl"));
    await expect(createModelLayer(opts(cli, { provider: "sim", trace: "to-prog.jsonl" }))).rejects.toThrow("--trace to-prog.jsonl: that is the program itself");
    await expect(createModelLayer(opts(cli, { provider: "sim", trace: "prog-too.jsonl" }))).rejects.toThrow("--trace prog-too.jsonl: that is the program itself");
    await writeFile(path.join(dir, "rules.yaml"), "- reply: ok\n");
    await expect(createModelLayer(opts(cli, { script: "rules.yaml", trace: "rules.yaml" }))).rejects.toThrow("--trace rules.yaml: that is the --script file");
    await writeFile(path.join(dir, "in.json"), "{}");
    await expect(createModelLayer(opts(cli, { provider: "sim", input: "in.json", trace: "./in.json" }))).rejects.toThrow("--trace ./in.json: that is the --input file");
    expect(await readFile(path.join(dir, "prog.vvm"), "utf8")).toBe("x = 1\n");
    expect(await readFile(path.join(dir, "rules.yaml"), "utf8")).toBe("- reply: ok\n");
    expect(await readFile(path.join(dir, "in.json"), "utf8")).toBe("{}");
    // `-` is not standard output (which holds the exports): it would make a file named "-"
    await expect(createModelLayer(opts(cli, { provider: "sim", trace: "-" }))).rejects.toThrow("--trace -: the trace goes to a file");
    expect(existsSync(path.join(dir, "-"))).toBe(false);
    const badUrl = io({ ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: "notaurl" });
    await expect(createModelLayer(opts(badUrl.cli))).rejects.toThrow("ANTHROPIC_BASE_URL=notaurl is not a URL");
    const bad = io({ VVM_MAX_TOKENS: "lots" });
    await expect(createModelLayer(opts(bad.cli, { provider: "sim" }))).rejects.toThrow("VVM_MAX_TOKENS=lots: expected a whole number of at least 1");
  });

  it("--trace never names a module the program imports or a skill's SKILL.md: vvm run would empty it", async () => {
    const files: Record<string, string> = {
      "app/lib.vvm": "def f(x):\n  return x\nexport f\n",
      "app/notes/SKILL.md": "---\nname: notes\ndescription: notes helps.\n---\nWrite notes.\n",
      "app/main.vvm": 'from "./lib.vvm" import f\nimport "notes" from "./notes"\nagent w(model="haiku", prompt="p", skills=["notes"])\ny = f(1)\nexport y\n',
    };
    for (const [rel, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await writeFile(path.join(dir, rel), text);
    }
    for (const [trace, what] of [["app/lib.vvm", "a module of the program (app/lib.vvm)"], ["app/notes/SKILL.md", "the SKILL.md of skill 'notes'"]]) {
      const r = await runCli(["run", "app/main.vvm", "--provider", "sim", "--trace", trace], { cwd: dir });
      expect([r.code, r.stdout, r.stderr]).toEqual([64, "", `vvm: --trace ${trace}: that is ${what}; choose another file\n`]);
    }
    for (const [rel, text] of Object.entries(files)) expect(await readFile(path.join(dir, rel), "utf8")).toBe(text);
  });

  it("--script implies the script provider", async () => {
    await writeFile(path.join(dir, "ok.yaml"), "- reply: scripted\n");
    const { cli, out } = io();
    const layer = await createModelLayer(opts(cli, { script: "ok.yaml" }));
    expect(await layer.agents.call(callReq(agent("a"), "hi", null))).toBe("scripted");
    await layer.close();
    expect(out.stderr).toContain("[script]");
    expect(out.stderr).not.toContain("offline");
  });
});

describe("trace and summary", () => {
  it("writes one JSON line per attempt and result, plus run and summary events", async () => {
    await writeFile(
      path.join(dir, "t.yaml"),
      "- { kind: agent, times: 1, error: { kind: spawn_failed, status: 529 } }\n- { kind: agent, reply: ok, usage: { input_tokens: 7, output_tokens: 3, cache_write_tokens: 5 } }\n- { verdict: true }\n",
    );
    const { cli, out } = io({ VVM_RETRY_BASE_MS: "1" });
    const layer = await createModelLayer(opts(cli, { script: "t.yaml", trace: "trace.jsonl" }));
    expect(layer.trace.enabled).toBe(true);
    await layer.agents.call(callReq(agent("a"), "hi", null, { retry: 1, name: "first" }));
    await layer.agents.judge(judgeReq("predicate", "p", 1));
    layer.trace.emit({ type: "stmt", line: 3 });
    await layer.close();
    const events = (await readFile(path.join(dir, "trace.jsonl"), "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(events.map((e) => e.type)).toEqual(["run", "call_attempt", "call_attempt", "call", "judge_attempt", "judge", "stmt", "summary"]);
    expect(events.every((e) => typeof e.t === "number")).toBe(true);
    expect(events[0]).toMatchObject({ provider: "script", judge_model: "claude-haiku-5-5" });
    expect(events[1]).toMatchObject({ agent: "a", name: "first", attempt: 1, ok: false, error_kind: "spawn_failed", status: 529 });
    expect(events[2]).toMatchObject({ attempt: 2, ok: true, tokens_in: 7, tokens_out: 3, cache_write: 5 });
    expect(events[3]).toMatchObject({ type: "call", attempts: 2, ok: true, reply_chars: 2, site: "/tmp/prog.vvm:1:1" });
    expect(events[5]).toMatchObject({ type: "judge", kind: "predicate", verdict: true, uncertain: false });
    expect(events[7]).toMatchObject({ calls: 1, call_attempts: 2, judges: 1, tokens_in: 7, tokens_out: 3, cache_write: 5 });
    expect(out.stderr).toMatch(/^vvm: 1 call \(2 attempts\), 1 judge \(1 attempt\), tokens 7 in \/ 3 out, cache 0 read \/ 5 write, \$0\.00005\d, model time \d+\.\d\ds \[script\]\n$/);
  });

  it("a trace file that stops accepting writes (a full disk) warns once and the run goes on", async () => {
    const { cli, out } = io();
    const layer = await createModelLayer(opts(cli, { provider: "sim", trace: "/dev/full" }));
    for (let i = 0; i < 2000; i++) layer.trace.emit({ type: "stmt", line: i });
    expect(await layer.agents.call(callReq(agent("a"), "hi", null))).toMatch(/^\[sim:a\]/);
    await layer.close();
    expect(out.stderr.match(/--trace \/dev\/full: cannot write \(ENOSPC\); the trace stops here/g)).toHaveLength(1);
    // named as the user gave it, not as the absolute path it resolves to
    await symlink("/dev/full", path.join(dir, "full.jsonl"));
    const given = io();
    const relative = await createModelLayer(opts(given.cli, { provider: "sim", trace: "full.jsonl" }));
    for (let i = 0; i < 2000; i++) relative.trace.emit({ type: "stmt", line: i });
    await relative.close();
    expect(given.out.stderr).toContain("vvm: warning: --trace full.jsonl: cannot write (ENOSPC); the trace stops here\n");
  });

  it("without --trace the sink is disabled", async () => {
    const { cli } = io();
    const layer = await createModelLayer(opts(cli, { provider: "sim" }));
    expect(layer.trace.enabled).toBe(false);
    await layer.close();
  });

  it("shows live progress only on a terminal, and erases it at the end", async () => {
    const tty = io({}, true);
    const layer = await createModelLayer(opts(tty.cli, { provider: "sim" }));
    await layer.agents.call(callReq(agent("a"), "hi", null));
    await layer.close();
    expect(tty.out.stderr).toContain("in flight");
    expect(tty.out.stderr).toContain("\r\u001b[Kvvm: 1 call");

    const pipe = io();
    const l2 = await createModelLayer(opts(pipe.cli, { provider: "sim" }));
    await l2.agents.call(callReq(agent("a"), "hi", null));
    await l2.close();
    expect(pipe.out.stderr).not.toContain("in flight");
  });
});
