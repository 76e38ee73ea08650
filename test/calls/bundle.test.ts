// The installed CLI: bin/vvm.js runs the esbuild bundle `npm install` builds into dist/ (prepare).
// The rest of the suite runs the TypeScript sources; this checks the bundle behaves the same.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli, testEnv } from "../support/cli.ts";

const bin = path.join(ROOT, "bin/vvm.js");
const built = existsSync(path.join(ROOT, "dist/start.js"));
if (!built) console.log("skipped: the bundle tests (dist/ is missing: `npm install` or `npm run build` makes it)");

const installed = (args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd: ROOT, encoding: "utf8", env: testEnv() });

describe.skipIf(!built)("the bundled CLI", () => {
  it("runs an example, offline, with the same exports as the sources", async () => {
    const args = ["run", "examples/calls-judges.vvm", "--script", "examples/calls-judges.yaml"];
    const r = installed(args);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(JSON.parse((await runCli(args)).stdout));
  });

  it("reports a user's mistake in a line, not a stack trace", () => {
    const r = installed(["run", "no-such-program.vvm"]);
    expect(r.status).toBe(64);
    expect(r.stderr).toMatch(/no-such-program\.vvm/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("ships source maps without the sources themselves (stacks still name src/ files; loading a map with every source in it cost 50 ms of each start)", () => {
    const map = JSON.parse(readFileSync(path.join(ROOT, "dist/start.js.map"), "utf8")) as { sources: string[]; sourcesContent?: unknown };
    expect(map.sources.some((s) => s.endsWith("src/start.ts"))).toBe(true);
    expect(map.sourcesContent).toBeUndefined();
  });

  it("loads folder skills (yaml is a chunk of its own there, whose only export is the CommonJS module)", () => {
    const r = installed(["check", "test/conformance/check/W025-skill-not-loaded.vvm"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/internal|\n\s+at /);
    // the loadable skill is silent; each of the others is one W025, the alias bomb included
    expect(r.stderr).not.toContain("skill 'notes'");
    expect(r.stderr.match(/: W025 /g)).toHaveLength(5);
    expect(r.stderr).toContain("skill 'aliases' cannot be loaded");
  });

  it("knows its version", () => {
    expect(installed(["--version"]).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
