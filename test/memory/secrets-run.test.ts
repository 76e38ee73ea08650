// Refused secrets end to end: every shape of the corpus, sent by the Messages API stand-in as a
// `vvm-memory` block through `vvm run --trace`, leaves no trace in the ledger, meta.json, the trace
// file, stdout or stderr (the store-level test covers the memory directory alone).
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { ledger, patchReply } from "./helpers.ts";
import { secretCorpus, windows } from "./secret-corpus.ts";

const base = useTempDir("vvm-secrets-run-");
const standin = useStandin();

describe("a secret in a model's memory update", () => {
  it("is refused, and no part of it is written or printed anywhere", async () => {
    const secrets = secretCorpus();
    const dir = await mkdtemp(path.join(base, "p-"));
    const cases = secrets.map((_, i) => `case-${i}`);
    await writeFile(
      path.join(dir, "keep.vvm"),
      [
        'agent keeper(model="haiku", prompt="Keep notes.", memory={ scope: "project", key: "unused" })',
        `cases = ${JSON.stringify(cases)}`,
        "def keep(c):",
        '  a = keeper.with(memory={ scope: "project", key: c })',
        "  return @a `Remember this case.`(c)",
        "replies = pmap(cases, keep)",
        "export replies",
        "",
      ].join("\n"),
    );
    standin.setHandler((req) => {
      const i = Number(/case-(\d+)/.exec(JSON.stringify(req.body.messages))![1]);
      const s = secrets[i];
      return { type: "text", text: patchReply(s.digest === undefined ? { retain: s.retain } : { digest: s.digest, retain: s.retain }, `Noted ${cases[i]}.`) };
    });
    const res = await runCli(["run", "keep.vvm", "--trace", "trace.jsonl"], { cwd: dir, env: { ...standin.env(), HOME: dir } });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout).replies).toEqual(cases.map((c) => `Noted ${c}.`));

    const written: string[] = [res.stdout, res.stderr, await readFile(path.join(dir, "trace.jsonl"), "utf8")];
    for (const c of cases) {
      const { entries } = await ledger(dir, c);
      expect(entries.map((e) => e.kind), c).toEqual(["rejected"]);
      expect(entries[0].reason).toMatch(/likely secret/);
    }
    const root = path.join(dir, ".vvm", "memory");
    const keys = await readdir(root);
    expect(keys).toHaveLength(cases.length);
    for (const key of keys) {
      const files = await readdir(path.join(root, key));
      expect(files).toEqual(expect.arrayContaining(["ledger.jsonl", "meta.json"]));
      for (const f of files) written.push(await readFile(path.join(root, key, f), "utf8"));
    }
    const all = written.join("\n");
    const leaked = secrets.filter((s) => windows(s).some((w) => all.includes(w))).map((s) => s.name);
    expect(leaked).toEqual([]);
  }, 60_000);
});
