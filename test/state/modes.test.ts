// Programs run in both state modes (test/state/programs/*.vvm): the same program gives its in-context
// exports, and in filesystem mode ref values for every agent call, a binding file per call and a state.md
// that lists them. Expectations live in each program's comments:
//   # expect-exports: {...}      in-context exports
//   # expect-fs-exports: {...}   filesystem exports; "<run>" stands for the run id, a "ref" of "<any>" for any ref path
//   # expect-bindings: a, b      the names in state.md's binding index (in any order)
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Accounting } from "../../runtime/calls/accounting.ts";
import { CallRuntime } from "../../runtime/calls/runtime.ts";
import { runProgram } from "../../runtime/interpreter/index.ts";
import { nodeFs, type MemoryFs } from "../../runtime/memory/fsio.ts";
import { SimProvider } from "../../runtime/providers/sim.ts";
import { RunDirectory } from "../../runtime/state/run-dir.ts";
import { noTrace } from "../../runtime/trace.ts";
import { toJSON } from "../../runtime/values.ts";
import { checkProgram } from "../../src/check.ts";
import { ROOT, runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const PROGRAMS = path.join(ROOT, "test/state/programs");
const tmp = useTempDir("vvm-modes-");

function expectations(source: string) {
  const out: { exports?: unknown; fsExports?: unknown; bindings?: string[] } = {};
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = /^# (expect-exports|expect-fs-exports|expect-bindings):\s*(.*)$/.exec(lines[i]!);
    if (!m) continue;
    let rest = m[2]!;
    while (m[1] !== "expect-bindings" && i + 1 < lines.length && /^# {2}/.test(lines[i + 1]!)) rest += lines[++i]!.slice(1);
    if (m[1] === "expect-bindings") out.bindings = rest.split(",").map((s) => s.trim());
    else if (m[1] === "expect-exports") out.exports = JSON.parse(rest);
    else out.fsExports = JSON.parse(rest);
  }
  return out;
}

/** `value` with the run id replaced by <run>, and ref paths the expectation leaves open replaced by <any>. */
function normalize(value: unknown, expected: unknown, runId: string): unknown {
  if (typeof value === "string") return value.split(runId).join("<run>");
  if (Array.isArray(value)) return value.map((v, i) => normalize(v, (expected as unknown[] | undefined)?.[i], runId));
  if (value !== null && typeof value === "object") {
    const exp = (expected ?? {}) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === "ref" && exp.ref === "<any>" ? "<any>" : normalize(v, exp[k], runId)]));
  }
  return value;
}

const files = readdirSync(PROGRAMS).filter((f) => f.endsWith(".vvm")).sort();

describe("programs in both state modes", () => {
  it("has programs", () => expect(files.length).toBeGreaterThanOrEqual(3));
  for (const name of files) {
    it(name, async () => {
      const exp = expectations(readFileSync(path.join(PROGRAMS, name), "utf8"));
      const dir = mkdtempSync(path.join(tmp, "p-"));
      copyFileSync(path.join(PROGRAMS, name), path.join(dir, name));

      const inContext = await runCli(["run", name, "--provider", "sim"], { cwd: dir });
      expect(inContext.code, inContext.stderr).toBe(0);
      expect(JSON.parse(inContext.stdout)).toEqual(exp.exports);
      expect(existsSync(path.join(dir, ".vvm"))).toBe(false);

      const fs = await runCli(["run", name, "--provider", "sim", "--state", "filesystem"], { cwd: dir });
      expect(fs.code, fs.stderr).toBe(0);
      const [runId] = readdirSync(path.join(dir, ".vvm", "runs"));
      expect(fs.stderr).toContain(`filesystem state: .vvm/runs/${runId}`);
      const run = path.join(dir, ".vvm", "runs", runId!);
      expect(normalize(JSON.parse(fs.stdout), exp.fsExports, runId!)).toEqual(exp.fsExports);
      const state = readFileSync(path.join(run, "state.md"), "utf8");
      expect(state).toContain("Status: completed");
      const rows = [...state.matchAll(/^\| (\S+) \| bindings\/(b\d{6})\.md \| /gm)];
      expect(rows.map((r) => r[1]).sort()).toEqual([...exp.bindings!].sort());
      // one file per binding, numbered from 1, each holding a whole reply, none of it in state.md
      expect(readdirSync(path.join(run, "bindings")).sort()).toEqual(rows.map((r) => `${r[2]}.md`).sort());
      expect(rows.map((r) => r[2]).sort()).toEqual(rows.map((_, i) => `b${String(i + 1).padStart(6, "0")}`));
      expect(readFileSync(path.join(run, "program.vvm"), "utf8")).toBe(readFileSync(path.join(PROGRAMS, name), "utf8"));
      for (const v of Object.values(JSON.parse(fs.stdout) as Record<string, { ref?: string; bytes?: number }>)) {
        if (typeof v === "object" && v?.ref) expect(statSync(path.join(dir, v.ref)).size).toBe(v.bytes);
      }
    });
  }
});

/** A binding layer whose first `n` binding writes fail with ENOSPC. */
function failingBindings(n: number): MemoryFs {
  let left = n;
  return {
    ...nodeFs,
    writeAtomic: (file, data, ...rest) =>
      /b\d{6}\.md$/.test(file) && left-- > 0 ? Promise.reject(Object.assign(new Error("disk full"), { code: "ENOSPC" })) : nodeFs.writeAtomic(file, data, ...rest),
  };
}

describe("binding_failed", () => {
  const program = [
    'agent a(model="haiku")',
    "first = @a `One.`(retry=1)",
    "match first:",
    '  case error(kind="binding_failed"):',
    '    outcome = "failed: " + first.error.message',
    "  case _:",
    '    outcome = "bound: " + first.summary',
    "second = @a `Two.`()",
    "export outcome",
    "second_summary = second.summary",
    "export second_summary",
    "",
  ].join("\n");

  async function run(failures: number) {
    const dir = mkdtempSync(path.join(tmp, "bf-"));
    const entry = path.join(dir, "main.vvm");
    await nodeFs.writeAtomic(entry, program);
    const runState = await RunDirectory.create({ entryPath: entry, source: program, warn: () => {}, fs: failingBindings(failures) });
    const agents = new CallRuntime({ provider: new SimProvider(), memory: null, judgeModel: "haiku", models: {}, trace: noTrace, accounting: new Accounting(), programDir: dir, runState, retry: { baseMs: 1, maxMs: 5, maxRetryAfterMs: 5 } });
    const outcome = await runProgram(await checkProgram(entry), { agents, trace: noTrace, signal: new AbortController().signal, concurrency: 4 });
    if (outcome.kind !== "ok") throw new Error(JSON.stringify(outcome));
    await runState.finish("completed", "Completed");
    return { exports: Object.fromEntries([...outcome.exports].map(([k, v]) => [k, toJSON(v)])), state: readFileSync(path.join(runState.dir, "state.md"), "utf8") };
  }

  it("is the value of a call whose binding cannot be written after its retries; the program goes on", async () => {
    const r = await run(2);
    expect(r.exports.outcome).toMatch(/^failed: the reply could not be written to \.vvm\/runs\/.+\/bindings\/b000001\.md \(ENOSPC\)$/);
    expect(r.exports.second_summary).toBe("[sim:a] Two.");
    expect(r.state).toMatch(/first = @a failed: b000001 could not be written \(ENOSPC\)/);
    expect(r.state).toContain("| second | bindings/b000002.md |");
  });

  it("is retried under retry=", async () => {
    const r = await run(1);
    expect(r.exports.outcome).toBe("bound: [sim:a] One.");
    expect(r.state).toContain("| first | bindings/b000001.md |");
  });
});
