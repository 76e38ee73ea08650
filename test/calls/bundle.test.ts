// The installed CLI: bin/vvm.js runs the esbuild bundle `npm install` builds into dist/ (prepare).
// The rest of the suite runs the TypeScript sources; this checks the bundle behaves the same.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
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

  it("says in one line, not a stack, that too few open files were left to load it (ulimit -n)", () => {
    // below some limit Node cannot read bin/vvm.js itself; above it vvm's own handlers say it; between, bin/vvm.js must
    const said: number[] = [];
    for (let n = 17; n <= 26; n++) {
      const r = spawnSync("sh", ["-c", `ulimit -n ${n} && exec "$0" "$@"`, process.execPath, bin, "run", "examples/release-notes.vvm", "--provider", "sim"], { cwd: ROOT, encoding: "utf8", env: testEnv() });
      if (r.status === null || r.stderr.includes("bin/vvm.js'")) continue;
      expect(r.stderr, `ulimit -n ${n}`).not.toMatch(/\n\s+at /);
      if (r.stderr.startsWith("vvm: cannot start:")) {
        expect(r.stderr).toBe("vvm: cannot start: this process's limit on open files (ulimit -n) was reached (EMFILE) while loading vvm; raise it and run again\n");
        expect(r.status).toBe(71);
        said.push(n);
      }
    }
    expect(said.length).toBeGreaterThan(0);
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

  it("maps an internal error's stack to the sources only when it is printed (Node's own source maps are off: they cost every start)", async () => {
    const { mappedStack } = await import("../../src/stack-map.ts");
    expect(readFileSync(bin, "utf8")).not.toContain("setSourceMapsEnabled(true)");
    // the internal-error message, where the bundle has it and where src/start.ts does
    const marker = "vvm: internal error (this is a bug in vvm";
    const at = (file: string) => {
      const lines = readFileSync(path.join(ROOT, file), "utf8").split("\n");
      const line = lines.findIndex((l) => l.includes(marker));
      return { line: line + 1, column: lines[line]!.indexOf(marker) + 1 };
    };
    const bundled = at("dist/start.js");
    const source = at("src/start.ts");
    const url = pathToFileURL(path.join(ROOT, "dist/start.js")).href;
    const stack = `Error: x\n    at start (${url}:${bundled.line}:${bundled.column})\n    at node:internal/main:1:1`;
    const mapped = mappedStack(stack).split("\n");
    // (the column is the mapping's nearest before the position: the string's opening quote)
    expect(mapped[1]).toBe(`    at start (${path.join(ROOT, "src/start.ts")}:${source.line}:${source.column - 1})`);
    expect(mappedStack(`    at f (${url}:1:1)`)).toBe(`    at f (${url}:1:1)`);
    expect(mapped[2]).toBe("    at node:internal/main:1:1");
  });

  it("knows its version", () => {
    expect(installed(["--version"]).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
