// What a library prints to the console on its own reaches stderr as vvm's own lines do: prefixed, its control
// characters escaped, each distinct message once; never stdout, which carries only the command's output.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, ROOT, spawnCli, testEnv } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";
import { startStandin, type Standin } from "../support/standin.ts";

const dir = useTempDir("vvm-console-");

describe("console output of libraries", () => {
  it("goes to stderr with the vvm: prefix, escaped, once per distinct message", () => {
    const noise = 'console.warn("from a library\\nsecond \\u001b[2J line"); console.warn("from a library\\nsecond \\u001b[2J line"); console.log("not for stdout"); console.log(); console.info("  ")';
    const script = `const { start } = await import(${JSON.stringify(path.join(ROOT, "src/start.ts"))}); queueMicrotask(() => { ${noise} }); await start();`;
    const r = spawnSync(process.execPath, ["--import", import.meta.resolve("tsx"), "--input-type=module", "-e", script, "check", "missing.vvm"], { cwd: ROOT, encoding: "utf8", env: testEnv() });
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("vvm: from a library\nvvm: second \\u001b[2J line\n");
    expect(r.stderr.split("from a library").length - 1).toBe(1);
    expect(r.stderr).toContain("vvm: not for stdout\n");
    expect(r.stderr).not.toContain("\u001b");
    // a bare console.log() is no line at all
    expect(r.stderr).not.toMatch(/^vvm: *$/m);
  });

  it("console.dir, which Node writes to stdout itself, goes to stderr too", () => {
    const script = `const { start } = await import(${JSON.stringify(path.join(ROOT, "src/start.ts"))}); queueMicrotask(() => { console.dir({ a: 1 }); }); await start();`;
    const r = spawnSync(process.execPath, ["--import", import.meta.resolve("tsx"), "--input-type=module", "-e", script, "check", "missing.vvm"], { cwd: ROOT, encoding: "utf8", env: testEnv() });
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("vvm: { a: 1 }\n");
  });

  describe("the SDK's warning about a deprecated model id", () => {
    let standin: Standin;
    beforeAll(async () => {
      standin = await startStandin();
    });
    afterAll(async () => {
      await standin.stop();
    });

    it("is said once for a run of three calls", async () => {
      writeFileSync(path.join(dir, "p.vvm"), 'agent a(model="claude-sonnet-4-5")\nxs = [@a `One.`(()), @a `Two.`(()), @a `Three.`(())]\nexport xs\n');
      const r = await collect(spawnCli(["run", "p.vvm", "--provider", "anthropic"], { cwd: dir, env: { ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: standin.url } }));
      expect(r.code, r.stderr).toBe(0);
      expect(standin.requests.length).toBe(3);
      const warnings = r.stderr.split("\n").filter((l) => l.includes("is deprecated"));
      expect(warnings).toEqual([expect.stringMatching(/^vvm: The model 'claude-sonnet-4-5' is deprecated/)]);
      expect(JSON.parse(r.stdout).xs).toHaveLength(3);
    });
  });
});
