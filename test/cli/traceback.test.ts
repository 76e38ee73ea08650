// An uncaught raise through the real CLI: the error value, where it was raised, and its way out — each
// function it left with the call site, and the map/pmap item it ended.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const dir = useTempDir("vvm-traceback-");

async function run(source: string) {
  const file = path.join(dir, `p${Math.random().toString(36).slice(2)}.vvm`);
  await writeFile(file, source);
  const r = await runCli(["run", path.basename(file), "--provider", "sim"], { cwd: dir });
  return { ...r, name: path.basename(file) };
}

describe("tracebacks", () => {
  it("name each function left, innermost first, and the map item that failed", async () => {
    const r = await run(["def check(x):", "  if x == 3:", '    raise "three is not allowed"', "  return x", "", "def outer(x):", "  return check(x)", "", "out = map([1, 2, 3, 4], outer)", "export out", ""].join("\n"));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`uncaught error at ${r.name}:3:5:\n`);
    expect(r.stderr).toContain(
      [`traceback, innermost first:`, `  in check(), called at ${r.name}:7:10`, `  in outer(), called at ${r.name}:9:7`, `  in map item 2 of 4 (0-based), at ${r.name}:9:7`].join("\n"),
    );
  });

  it("say which pmap item raised, through an agent call (async functions)", async () => {
    const r = await run(['agent w(model="haiku")', "", "def one(x):", "  r = @w `hi {x}`(x)", "  if x == 2:", '    raise "item two failed"', "  return r", "", "out = pmap([0, 1, 2, 3], one)", "export out", ""].join("\n"));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain([`traceback, innermost first:`, `  in one(), called at ${r.name}:9:7`, `  in pmap item 2 of 4 (0-based), at ${r.name}:9:7`].join("\n"));
  });

  it("a caught error raised again (raise e) starts a new traceback where it is raised again", async () => {
    const r = await run(["def deep():", '  raise "deep"', "", "def middle():", "  deep()", "", "def handler():", "  try:", "    middle()", "  except as e:", "    raise e", "", "handler()", ""].join("\n"));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`uncaught error at ${r.name}:11:5:\n`);
    expect(r.stderr).toContain(`traceback, innermost first:\n  in handler(), called at ${r.name}:13:1\nvvm: 0 calls`);
  });

  it("a raise at the top level has no traceback lines, and deep recursion keeps its 32 innermost and 32 outermost steps", async () => {
    const top = await run(['raise "at the top"', ""].join("\n"));
    expect(top.stderr).toContain(`uncaught error at ${top.name}:1:1:`);
    expect(top.stderr).not.toContain("traceback");
    const deep = await run(["def down(n):", "  if n == 0:", '    raise "bottom"', "  return down(n - 1)", "", "x = down(200)", "export x", ""].join("\n"));
    expect(deep.code).toBe(1);
    expect(deep.stderr.match(/^ {2}in down\(\)/gm)).toHaveLength(64);
    expect(deep.stderr).toContain(`  in down(), called at ${deep.name}:4:10\n  … 137 more steps left out …\n  in down(), called at ${deep.name}:4:10\n`);
    expect(deep.stderr).toContain(`  in down(), called at ${deep.name}:6:5\nvvm: 0 calls`);
    // the outer frames a deep recursion used to hide: the function and the pmap item it started in
    const inner = await run(["def f(n):", "  if n == 0:", '    raise "bottom"', "  return f(n - 1)", "", "def g(x):", "  return f(100)", "", "r = pmap([1, 2, 3], g)", "export r", ""].join("\n"));
    expect(inner.stderr).toMatch(/\n {2}… 39 more steps left out …\n(?: {2}in f\(\), called at .*:4:10\n){29} {2}in f\(\), called at .*:7:10\n {2}in g\(\), called at .*:9:5\n {2}in pmap item 0 of 3 \(0-based\), at .*:9:5\nvvm: 0 calls/);
  });
});
