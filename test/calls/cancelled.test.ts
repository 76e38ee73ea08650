// A pmap item that fails cancels its siblings: the summary, the trace and --usage count them as
// cancelled, not failed (runtime/calls/accounting.ts).
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Accounting } from "../../runtime/calls/accounting.ts";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

describe("cancelled siblings", () => {
  const dir = useTempDir("vvm-cancelled-");

  it("are counted as cancelled in the summary line, the trace and --usage", async () => {
    await writeFile(path.join(dir, "fan.vvm"), ['agent w(model="sonnet", prompt="p")', "def f(n):", "  return @w `Item {n}.`(n)", "out = pmap([1, 2, 3, 4], f)", "export out"].join("\n"));
    // item 1 fails at once; the others would answer after 2 s, so they are still in flight when it does
    await writeFile(path.join(dir, "fan.yaml"), 'rules:\n  - kind: agent\n    match: "Item 1."\n    error: { kind: rejected, status: 400 }\n  - kind: agent\n    reply: "ok"\n    delay: "2s"\n');
    const res = await runCli(["run", "fan.vvm", "--script", "fan.yaml", "--trace", "t.jsonl", "--usage"], { cwd: dir });
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout).out.error.kind).toBe("rejected");
    expect(res.stderr).toMatch(/^vvm: 4 calls, 1 failed \(1 rejected\), 3 cancelled \(4 attempts\), 0 judges \(0 attempts\), /m);
    expect(res.stderr).toMatch(/^w\s+4\s+1\s+4\s/m);
    const summary = (await readFile(path.join(dir, "t.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l)).find((e) => e.type === "summary");
    expect(summary).toMatchObject({ calls: 4, failed_calls: 1, failed_call_kinds: { rejected: 1 }, cancelled_calls: 3, cancelled_judges: 0 });
  });

  it("the summary line reads the same with failures, cancellations, both or neither", () => {
    const line = (events: [kind: "call" | "judge", failedAs: string | null][]) => {
      const a = new Accounting();
      for (const [kind, failedAs] of events) {
        a.attemptStarted();
        a.attemptEnded(kind, null, 0, kind === "call" ? "a" : null, "m");
        a.finished(kind, failedAs, kind === "call" ? "a" : null);
      }
      return a.summary("sim").replace(/, tokens .*$/, "");
    };
    expect(line([["call", null]])).toBe("vvm: 1 call (1 attempt), 0 judges (0 attempts)");
    expect(line([["call", "timeout"], ["call", null]])).toBe("vvm: 2 calls, 1 failed (1 timeout; 2 attempts), 0 judges (0 attempts)");
    expect(line([["call", "cancelled"], ["judge", "cancelled"]])).toBe("vvm: 1 call, 1 cancelled (1 attempt), 1 judge, 1 cancelled (1 attempt)");
    expect(line([["call", "rejected"], ["call", "cancelled"], ["call", "cancelled"]])).toBe("vvm: 3 calls, 1 failed (1 rejected), 2 cancelled (3 attempts), 0 judges (0 attempts)");
  });
});
