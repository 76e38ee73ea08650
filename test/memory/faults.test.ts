// Faults from outside the memory directory: a process out of file descriptors, and one broken memory
// among the items of a pmap.
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { collect, ROOT, runCli, testEnv } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";
import { digestText, ledger, memDir } from "./helpers.ts";

const base = useTempDir("vvm-mem-faults-");

describe("memory faults", () => {
  it("EMFILE under a low ulimit -n: operations wait for descriptors, and every patch is applied", async () => {
    const dir = await mkdtemp(path.join(base, "p-"));
    const fixture = path.join(ROOT, "test", "memory", "fixtures", "emfile.ts");
    const child = spawn("bash", ["-c", `ulimit -n 64 && exec "${process.execPath}" --import tsx "${fixture}" "${dir}"`], { cwd: ROOT, env: testEnv({ HOME: dir }), stdio: ["ignore", "pipe", "pipe"] });
    const res = await collect(child);
    expect(res.stderr).toBe("");
    const out = JSON.parse(res.stdout) as { exhausted: boolean; results: string[]; warnings: string[] };
    expect(out.exhausted).toBe(true);
    expect(out.results).toEqual(["done", "done", "done", "done"]);
    expect(out.warnings).toEqual([]);
    for (const key of ["a", "b", "c", "d"]) {
      expect(await digestText(dir, key)).toBe(`digest of ${key}`);
      expect((await ledger(dir, key)).entries.map((e) => e.retain)).toEqual([[`fact ${key}`]]);
    }
  }, 30_000);

  it("a broken memory in one pmap item is that item's error value; its siblings succeed and keep their patches", async () => {
    const dir = await mkdtemp(path.join(base, "p-"));
    await writeFile(
      path.join(dir, "main.vvm"),
      [
        `agent w(model="haiku", memory={ scope: "project", key: "base" })`,
        `def one(k):`,
        `  worker = w.with(memory={ scope: "project", key: k })`,
        `  r = @worker \`Note {k}.\`(k)`,
        `  match r:`,
        `    case error(e):`,
        `      return e.error.kind + ": " + e.error.message`,
        `    case _:`,
        `      return r`,
        `out = pmap(["a", "bad", "c"], one)`,
        `export out`,
        ``,
      ].join("\n"),
    );
    await writeFile(path.join(dir, "script.yaml"), `rules:\n  - kind: agent\n    reply: "ok\\n\`\`\`vvm-memory\\n{\\"retain\\": [\\"noted\\"]}\\n\`\`\`\\n"\n`);
    await mkdir(path.join(memDir(dir, "bad"), "ledger.jsonl"), { recursive: true });
    const res = await runCli(["run", "main.vvm", "--script", "script.yaml"], { cwd: dir, env: { HOME: dir } });
    expect(res.code).toBe(0);
    const { out } = JSON.parse(res.stdout) as { out: string[] };
    expect([out[0], out[2]]).toEqual(["ok", "ok"]);
    expect(out[1]).toMatch(/^rejected: memory project:"bad": cannot load memory \(ledger\.jsonl is not a regular file\)/);
    for (const key of ["a", "c"]) expect((await ledger(dir, key)).entries.map((e) => e.retain)).toEqual([["noted"]]);
  });
});
