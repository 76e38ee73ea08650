// How a filesystem-state run ends up in its state.md, through the real CLI: the status and last trace line
// for each way a run ends, the trace kept short on a long run, and typed calls left out of the bindings
// (spec/state.md §2 and §3).
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useFreshDirs } from "../support/fixtures.ts";

const tmp = useFreshDirs("vvm-run-end-");

/** Run `source` in filesystem state with `args`; the exit code, the exports and the run's state.md. */
async function run(source: string, args: string[] = ["--provider", "sim"], opts: { files?: Record<string, string>; signal?: AbortSignal } = {}) {
  const dir = tmp();
  writeFileSync(path.join(dir, "main.vvm"), source);
  for (const [name, text] of Object.entries(opts.files ?? {})) writeFileSync(path.join(dir, name), text);
  const r = await runCli(["run", "main.vvm", "--state", "filesystem", ...args], { cwd: dir, signal: opts.signal });
  const [id] = readdirSync(path.join(dir, ".vvm", "runs"));
  const runDir = path.join(dir, ".vvm", "runs", id!);
  return { ...r, runDir, state: readFileSync(path.join(runDir, "state.md"), "utf8") };
}

const trace = (state: string) => state.split("## Execution Trace\n\n")[1]!.trimEnd().split("\n");

describe("a filesystem-state run's status", () => {
  it("is completed when the program finished, also with an export that is an error value", async () => {
    const r = await run(['agent a(model="haiku")', "x = @a `t`(1)", "export x", ""].join("\n"), ["--script", "s.yaml"], {
      files: { "s.yaml": "- { error: { kind: timeout } }\n" },
    });
    expect(r.code).toBe(1);
    expect(r.state).toContain("Status: completed");
    expect(trace(r.state).slice(-2)).toEqual([expect.stringMatching(/x = @a failed: error\(kind="timeout"\)$/), expect.stringMatching(/\] Completed with 1 export$/)]);
  });

  it("is failed after an uncaught error, and the last trace line says so", async () => {
    const r = await run(['agent a(model="haiku")', "x = @a `t`(1)", "y = x.nope", ""].join("\n"));
    expect(r.code).toBe(1);
    expect(r.state).toContain("Status: failed");
    expect(trace(r.state).at(-1)).toMatch(/\] Failed: an uncaught error ended the run$/);
  });

  it("is failed after an interruption, and the last trace line says Interrupted", async () => {
    const stop = new AbortController();
    const pending = run(['agent a(model="haiku")', "x = @a `first`(1)", "y = @a `slow`(2)", "export y", ""].join("\n"), ["--script", "s.yaml"], {
      files: { "s.yaml": '- { match: first, reply: "one" }\n- { match: slow, delay: 30s, reply: "late" }\n' },
      signal: stop.signal,
    });
    setTimeout(() => stop.abort(), 1500);
    const r = await pending;
    expect(r.code).toBe(130);
    expect(r.state).toContain("Status: failed");
    expect(r.state).toMatch(/^\| x \| bindings\/b000001\.md \| one \|$/m);
    expect(trace(r.state).at(-1)).toMatch(/\] Interrupted$/);
  }, 20_000);
});

describe("state.md's trace", () => {
  it("keeps its first 20 lines and its last 200, with a line saying how many were left out between", async () => {
    const r = await run(['agent a(model="haiku")', "for i in range(300):", "  y = @a `Item {i}.`(i)", "export y", ""].join("\n"));
    expect(r.code).toBe(0);
    const lines = trace(r.state);
    // Started, 300 bindings, the end: 302 lines, of which 82 are left out
    expect(lines.length).toBe(20 + 1 + 200);
    expect(lines[0]).toMatch(/\] Started$/);
    expect(lines[19]).toMatch(/\] y = @a \(b000019\)$/);
    expect(lines[20]).toBe("- … 82 trace lines left out …");
    expect(lines[21]).toMatch(/\] y = @a \(b000102\)$/);
    expect(lines.at(-1)).toMatch(/\] Completed with 1 export$/);
    // the index is never cut: every binding has its row
    expect(r.state.match(/^\| y \| bindings\/b\d{6}\.md \|/gm)).toHaveLength(300);
  });
});

describe("typed calls in filesystem state", () => {
  it("return their value as data, with no binding; a text call of the same run returns a ref", async () => {
    const r = await run(
      ['agent a(model="haiku")', "n = @a `Count.`(1, returns={count: \"integer\"})", "t = @a `Say.`(2)", "total = n.count + 1", "export total", "export t", ""].join("\n"),
      ["--script", "s.yaml"],
      { files: { "s.yaml": "- { match: Count, reply: '{\"count\": 41}' }\n- { match: Say, reply: hello }\n" } },
    );
    expect(r.code).toBe(0);
    const exports = JSON.parse(r.stdout) as { total: number; t: { ref: string; summary: string } };
    expect(exports.total).toBe(42);
    expect(exports.t).toMatchObject({ ref: expect.stringMatching(/bindings\/b000001\.md$/), summary: "hello" });
    expect(readdirSync(path.join(r.runDir, "bindings"))).toEqual(["b000001.md"]);
    expect(r.state).toMatch(/^\| t \| bindings\/b000001\.md \| hello \|$/m);
    expect(r.state).not.toMatch(/^\| n \|/m);
  });
});

describe("vvm runs cat", () => {
  it("reads b and six or more digits as a binding id, even where a variable has that name", async () => {
    const r = await run(['agent a(model="haiku")', "b000002 = @a `First.`(1)", "other = @a `Second.`(2)", "export other", ""].join("\n"));
    expect(r.code).toBe(0);
    const id = path.basename(r.runDir);
    const cwd = path.dirname(path.dirname(path.dirname(r.runDir)));
    expect(await runCli(["runs", "cat", id, "b000002"], { cwd })).toMatchObject({ code: 0, stdout: "[sim:a] Second.\n" });
    expect(await runCli(["runs", "cat", id, "b000001"], { cwd })).toMatchObject({ code: 0, stdout: "[sim:a] First.\n" });
    expect(await runCli(["runs", "cat", id, "b0000001"], { cwd })).toMatchObject({ code: 1, stderr: expect.stringContaining("no binding file b0000001.md") });
  });
});
