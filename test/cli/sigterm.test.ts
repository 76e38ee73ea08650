// SIGTERM (kill, timeout, a CI job or a container being stopped) stops vvm as cleanly as Ctrl-C does. Killed
// outright, a run left its state.md saying "running", its memory locks in place, and vvm test its copy of the
// program (and the test's HOME) in the temporary folder.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { collect, spawnCli } from "../support/cli.ts";
import { useFreshDirs } from "../support/fixtures.ts";

const fresh = useFreshDirs("vvm-sigterm-");

const PROGRAM = 'agent a(model="haiku", prompt="p", memory={ scope: "project", key: "k" })\nx = @a `slow`()\nexport x\n';
const SCRIPT = "rules:\n  - { agent: a, reply: late, delay: 60s }\n";

/** Until `ready()` holds (polled), then SIGTERM; the child's result. */
async function termWhen(child: ReturnType<typeof spawnCli>, ready: () => boolean) {
  const done = collect(child);
  const t0 = Date.now();
  while (!ready() && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 20));
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  return done.finally(() => clearTimeout(killer));
}

describe("SIGTERM", () => {
  it("stops vvm run cleanly: exit 143, the memory lock released, the run no longer running", async () => {
    const dir = fresh();
    writeFileSync(path.join(dir, "p.vvm"), PROGRAM);
    writeFileSync(path.join(dir, "s.yaml"), SCRIPT);
    const lock = path.join(dir, ".vvm", "memory", "k-k", "lock");
    const r = await termWhen(spawnCli(["run", "p.vvm", "--script", "s.yaml", "--state", "filesystem"], { cwd: dir }), () => existsSync(lock));
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).toContain("vvm: interrupted");
    expect(r.stdout).toBe("");
    expect(existsSync(lock)).toBe(false);
    const [run] = readdirSync(path.join(dir, ".vvm", "runs"));
    expect(readFileSync(path.join(dir, ".vvm", "runs", run, "state.md"), "utf8")).not.toMatch(/^Status: running$/m);
  }, 40_000);

  it("stops vvm test cleanly: exit 143, no copy of the program left in the temporary folder", async () => {
    const dir = fresh();
    const tmp = path.join(dir, "tmp");
    mkdirSync(tmp);
    mkdirSync(path.join(dir, "proj"));
    writeFileSync(path.join(dir, "proj", "p.vvm"), PROGRAM);
    writeFileSync(path.join(dir, "proj", "p.test.yaml"), `tests:\n  - name: slow\n    script:\n      - { agent: a, reply: late, delay: 60s }\n    expect:\n      exports: { x: late }\n`);
    const child = spawnCli(["test"], { cwd: path.join(dir, "proj"), env: { TMPDIR: tmp } });
    const r = await termWhen(child, () => readdirSync(tmp).some((n) => n.startsWith("vvm-test-") && existsSync(path.join(tmp, n, "project", ".vvm", "memory", "k-k", "lock"))));
    expect(r.code, r.stderr).toBe(143);
    expect(readdirSync(tmp).filter((n) => n.startsWith("vvm-test-"))).toEqual([]);
  }, 40_000);
});
