// vvm run --partial-exports: after an uncaught raise, the exports computed before it on stdout as JSON,
// which are missing on stderr, and still exit 1.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const dir = useTempDir("vvm-partial-");

async function run(source: string, args: string[] = ["--partial-exports"], files: Record<string, string> = {}) {
  for (const [name, text] of Object.entries({ "main.vvm": source, ...files })) await writeFile(path.join(dir, name), text);
  return runCli(["run", "main.vvm", "--provider", "sim", ...args], { cwd: dir });
}

const FAILS_MIDWAY = [
  'agent w(model="sonnet", prompt="p")',
  "a = @w `First.`()",
  "b = {n: 1, text: a}",
  "c = ()",
  "d = b.missing",
  "export a",
  "export b",
  "export c",
  "export d",
  "export pack(e=a)",
  "export @w",
].join("\n");

describe("--partial-exports", () => {
  it("prints the exports bound before the raise, in export order, and names the missing ones; exit 1", async () => {
    const res = await run(FAILS_MIDWAY);
    expect(res.code).toBe(1);
    // c is unit (null), not missing; d and the expression export are left out
    expect(JSON.parse(res.stdout)).toEqual({ a: "[sim:w] First.", b: { n: 1, text: "[sim:w] First." }, c: null });
    expect(Object.keys(JSON.parse(res.stdout))).toEqual(["a", "b", "c"]);
    expect(res.stderr).toContain("uncaught error at main.vvm:5:7:");
    expect(res.stderr).toContain("vvm: --partial-exports: 3 of 5 exports were computed before the error (on stdout); missing: 'd', 'pack(e=a)'\n");
  });

  it("prints nothing on stdout without the flag", async () => {
    const res = await run(FAILS_MIDWAY, []);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe("");
    expect(res.stderr).not.toContain("--partial-exports");
  });

  it("never evaluates an expression export after the failure", async () => {
    // the export expression would call the model: the simulator's call count shows it was not evaluated
    const res = await run(['agent w(model="sonnet")', "x = 1", "y = x.nope", "export x", "export @w `Late.`()"].join("\n"));
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout)).toEqual({ x: 1 });
    expect(res.stderr).toContain("missing: '@w `Late.`()'");
    expect(res.stderr).toMatch(/vvm: 0 calls/);
  });

  it("a raise while the exports themselves are computed keeps the names already bound", async () => {
    const res = await run(["x = 1", "export x", "export len(5)"].join("\n"));
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout)).toEqual({ x: 1 });
    expect(res.stderr).toContain("1 of 2 exports were computed before the error (on stdout); missing: 'len(5)'");
  });

  it("prints {} when the raise comes before the program's own statements (in an imported module)", async () => {
    const res = await run(['from "./lib.vvm" import y', "x = y", "export x"].join("\n"), ["--partial-exports"], { "lib.vvm": "z = {a: 1}\ny = z.nope\nexport y\n" });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe("{}\n");
    expect(res.stderr).toContain("vvm: --partial-exports: the error came before the program's own statements ran: no export was computed ({} on stdout)\n");
  });

  it("says so when every export was computed before the raise", async () => {
    const res = await run(["x = 1", "export x", "y = x.nope"].join("\n"));
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout)).toEqual({ x: 1 });
    expect(res.stderr).toContain("vvm: --partial-exports: all 1 export was computed before the error (on stdout)\n");
  });
});
