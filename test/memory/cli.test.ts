// Memory end to end through `vvm run`: the memory examples under a script, the Memory Context reaching
// the Messages API stand-in, dry_run/fresh writing nothing, pmap over one shared key (serialised, no lost
// update) and over per-worker keys (parallel), and error(kind="locked") without a model call.
import { cp, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli, type CliResult } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { callProvenance } from "../../runtime/memory/ledger.ts";
import { digestText, ledger, makeStore, memDir, patchReply, session, plainFacts } from "./helpers.ts";

const base = useTempDir("vvm-mem-cli-");
const standin = useStandin();

async function project(files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(path.join(base, "p-"));
  for (const f of ["shift-handoff.vvm", "tenant-memory.vvm", "replicate-merge.vvm", "memory-script.yaml"]) await cp(path.join(ROOT, "examples", f), path.join(dir, f));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return dir;
}

function ok(res: CliResult): Record<string, unknown> {
  if (res.code !== 0) throw new Error(`exit ${res.code}\n${res.stderr}`);
  return JSON.parse(res.stdout) as Record<string, unknown>;
}

const systemText = (i: number) => ((standin.requests[i].body.system ?? []) as { text: string }[]).map((b) => b.text).join("\n");

describe("memory through vvm run", () => {
  it("shift handoff: continue applies the patch, dry_run and fresh write nothing, blocks never reach the value", async () => {
    const dir = await project();
    const out = ok(await runCli(["run", "shift-handoff.vvm", "--script", "memory-script.yaml"], { cwd: dir, env: { HOME: dir } }));
    for (const v of Object.values(out)) expect(v).not.toContain("vvm-memory");
    expect(out.handover).toMatch(/^Handoff for the next shift/);
    expect(await digestText(dir, "oncall:payments")).toContain("VND-221 card-processor timeouts");
    const { entries } = await ledger(dir, "oncall:payments");
    // one entry: the dry_run reply also carried a patch, and it was ignored
    const calls = entries.map((e) => callProvenance(e.provenance));
    expect(entries.map((e, i) => [e.kind, calls[i]?.mode, calls[i]?.line, calls[i]?.agent])).toEqual([["patch", "continue", 23, "handoff"]]);
    expect(calls[0]?.program).toBe(path.join(dir, "shift-handoff.vvm"));
  });

  it("the next run sends the digest and retained facts in the Memory Context; fresh sends none", async () => {
    const dir = await project();
    ok(await runCli(["run", "shift-handoff.vvm", "--script", "memory-script.yaml"], { cwd: dir, env: { HOME: dir } }));
    await writeFile(path.join(memDir(dir, "oncall:payments"), "digest.md"), (await digestText(dir, "oncall:payments")) + "- hand note: vendor call at 10:00\n");
    standin.setHandler(() => ({ type: "text", text: "ok" }));
    ok(await runCli(["run", "shift-handoff.vvm"], { cwd: dir, env: { ...standin.env(), HOME: dir } }));
    expect(standin.requests).toHaveLength(3);
    const [cont, dry, fresh] = [0, 1, 2].map(systemText);
    for (const s of [cont, dry]) {
      expect(s).toContain("- VND-221 card-processor timeouts, waiting on vendor");
      expect(s).toContain("- hand note: vendor call at 10:00");
      expect(plainFacts(s)).toContain("- B Priya's shift: checkout latency alarm auto-resolved");
      expect(s).toContain("## Memory Update Protocol");
    }
    expect(dry).toContain("read-only (dry_run)");
    expect(fresh).not.toContain("Memory Update Protocol");
    expect(fresh).not.toContain("VND-221");
    const { entries } = await ledger(dir, "oncall:payments");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "external_edit"]);
  });

  it("multi-tenant keys: one memory per tenant, nothing mixed, user scope untouched by dry_run", async () => {
    const dir = await project();
    const home = path.join(dir, "home");
    const out = ok(await runCli(["run", "tenant-memory.vvm", "--script", "memory-script.yaml"], { cwd: dir, env: { HOME: home } }));
    expect(out.replies).toEqual(["Thanks, we are on it.", "Thanks, we are on it.", "Thanks, we are on it."]);
    // the script answers every call of the example, the user-scope assistant's too (not the simulator)
    expect(out.style).toBe("One bullet point per tenant, newest first.");
    const names = (await readdir(path.join(dir, ".vvm", "memory"))).sort();
    expect(names).toEqual(["k-tenant_3aacme", "k-tenant_3aglobex", "k-tenant_3ainitech"]);
    for (const t of ["acme", "globex", "initech"]) {
      const { entries } = await ledger(dir, `tenant:${t}`);
      expect(entries.map((e) => [e.kind, e.retain])).toEqual([["patch", ["B ticket answered; follow up within a day"]]]);
      const meta = JSON.parse(await readFile(path.join(memDir(dir, `tenant:${t}`), "meta.json"), "utf8"));
      expect(meta.key).toBe(`tenant:${t}`);
    }
    // the user-scope dry_run created nothing: only the key recall.jsonl is signed with is in the home
    expect(await readdir(home)).toEqual([".vvm"]);
    expect(await readdir(path.join(home, ".vvm"))).toEqual(["recall.key"]);
  });

  it("pmap over one shared key serialises the calls and loses no update", async () => {
    const dir = await project({
      "shared.vvm": [
        'agent clerk(model="haiku", prompt="Count things.", memory={ scope: "project", key: "team:shared" })',
        "def note(n):",
        "  return @clerk `Record item {n}.`(n)",
        "out = pmap([1, 2, 3, 4, 5, 6], note)",
        "export out",
      ].join("\n"),
    });
    let n = 0;
    standin.setHandler(() => {
      const i = ++n;
      return { type: "text", delayMs: 30, text: patchReply({ digest: `last writer ${i}`, retain: [`item from reply ${i}`] }, `done ${i}`) };
    });
    const out = ok(await runCli(["run", "shared.vvm", "--concurrency", "6"], { cwd: dir, env: standin.env() }));
    expect((out.out as string[]).every((s) => /^done \d$/.test(s))).toBe(true);
    expect(standin.maxInFlight).toBe(1);
    const { entries } = await ledger(dir, "team:shared");
    expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(entries.flatMap((e) => e.retain)).size).toBe(6);
    for (let i = 1; i < 6; i++) expect(entries[i].digest_before).toBe(entries[i - 1].digest_after);
    expect(await digestText(dir, "team:shared")).toBe(entries[5].digest);
  });

  it("a call waiting for the memory lock when its pmap sibling fails is cancelled, not locked", async () => {
    const dir = await project({
      "fail.vvm": [
        'agent clerk(model="haiku", prompt="Count things.", memory={ scope: "project", key: "team:shared" })',
        'agent other(model="haiku", prompt="Check things.")',
        "def note(n):",
        "  if n == 0:",
        "    @other `Check.`()",
        '    raise "boom"',
        "  return @clerk `Record item {n}.`(n)",
        "out = pmap([0, 1, 2, 3], note)",
        "export out",
      ].join("\n"),
      // item 0 fails after 100 ms, while one clerk call holds the memory lock and two wait for it
      "fail.yaml": "- { agent: other, delay: 100ms, reply: checked }\n- { agent: clerk, delay: 5s, reply: noted }\n",
    });
    const res = await runCli(["run", "fail.vvm", "--script", "fail.yaml", "--trace", "t.jsonl"], { cwd: dir });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/vvm: 4 calls, 3 cancelled \(\d attempts?\)/); // (whether the call holding the lock had begun its attempt)
    const kinds = (await readFile(path.join(dir, "t.jsonl"), "utf8")).split("\n").filter((l) => l.includes('"type":"call"')).map((l) => (JSON.parse(l) as { error_kind?: string }).error_kind ?? "ok");
    expect(kinds.sort()).toEqual(["cancelled", "cancelled", "cancelled", "ok"]);
  });

  it("pmap over per-worker keys runs in parallel, then one merge call writes the shared key", async () => {
    const dir = await project();
    // each worker's reply waits until all three workers are in flight (or 5 s pass): if the
    // per-worker keys serialised the calls, maxInFlight would stay 1
    let arrived = 0;
    let release: () => void = () => {};
    const allIn = new Promise<void>((r) => (release = r));
    standin.setHandler(async (req) => {
      const task = String(req.body.messages[0].content[0].text);
      if (task.startsWith("Summarise")) {
        if (++arrived === 3) release();
        await Promise.race([allIn, new Promise((r) => setTimeout(r, 5000))]);
      }
      return { type: "text", text: patchReply({ digest: `notes for ${task.slice(0, 40)}` }, "noted") };
    });
    ok(await runCli(["run", "replicate-merge.vvm"], { cwd: dir, env: standin.env() }));
    expect(standin.maxInFlight).toBe(3);
    const names = await readdir(path.join(dir, ".vvm", "memory"));
    expect(names.sort()).toEqual(["k-loadtest_3aap-south", "k-loadtest_3aeu-west", "k-loadtest_3ashared", "k-loadtest_3aus-east"]);
    expect((await ledger(dir, "loadtest:shared")).entries).toHaveLength(1);
    expect((await ledger(dir, "loadtest:eu-west")).entries).toHaveLength(1);
  });

  it("a held lock yields error(kind=locked) after --lock-timeout, without calling the model", async () => {
    const dir = await project({
      "locked.vvm": ['agent a(model="haiku", memory={ scope: "project", key: "busy" })', "r = @a `Do it.`()", "export r"].join("\n"),
    });
    const { store } = makeStore(dir);
    const held = await session(store, "busy");
    try {
      // the locked error value is the export under test (exporting an error value otherwise exits 1)
      const out = ok(await runCli(["run", "locked.vvm", "--lock-timeout", "200ms", "--allow-error-exports"], { cwd: dir, env: standin.env() }));
      expect(out.r).toEqual({ error: { kind: "locked", message: expect.stringMatching(/memory project:"busy" is in use by another call or process \(held by pid \d+ on [^)]+\); gave up after waiting 200 ms/) } });
      expect(standin.requests).toHaveLength(0);
    } finally {
      await held.release();
    }
  });

  it("a rejected patch: the value is still returned, stderr says why, the ledger records it without the secret", async () => {
    const token = "ghp_" + "aB3dE5gH7jK9mN2pQ4sT6vW8yZ1aB3dE5gH7";
    const dir = await project({
      "secret.vvm": ['agent a(model="haiku", memory={ scope: "project", key: "k" })', "r = @a `Store the deploy token.`()", "export r"].join("\n"),
    });
    standin.setHandler(() => ({ type: "text", text: patchReply({ digest: `deploy token ${token}` }, "I will not keep that.") }));
    const res = await runCli(["run", "secret.vvm"], { cwd: dir, env: standin.env() });
    expect(ok(res).r).toBe("I will not keep that.");
    expect(res.stderr).toMatch(/vvm: warning: secret\.vvm:2: memory project:"k": patch rejected, memory unchanged: likely secret found: github\/GITHUB_TOKEN in digest line 1/);
    expect(res.stderr).not.toContain(token);
    const raw = await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"), "utf8");
    expect(raw).not.toContain(token);
    expect(await digestText(dir, "k")).toBeNull();
  });
});
