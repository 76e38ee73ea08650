// Every reference example runs under the fake agents, with checks on what each one computes and sends.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REFERENCE_EXAMPLES, referenceExamples } from "../support/examples.ts";
import { programsIn } from "../support/programs.ts";
import { runWithFakes } from "../support/fake-agents.ts";

const file = (name: string) => path.join(referenceExamples(), name);

describe.skipIf(!REFERENCE_EXAMPLES)("reference examples under fake agents", () => {
  it("runs every example to completion", async () => {
    const programs = programsIn(referenceExamples());
    expect(programs.length).toBeGreaterThanOrEqual(9);
    for (const p of programs) {
      const r = await runWithFakes(p);
      expect({ program: path.basename(p), kind: r.outcome.kind }).toEqual({ program: path.basename(p), kind: "ok" });
    }
  });

  it("01: `()` uses it, `(())` sends unit", async () => {
    const r = await runWithFakes(file("01-release-notes.vvm"), { replies: [["release notes", "NOTES"]] });
    expect(r.exports).toEqual({ draft: "NOTES", headline: "reply to: Write a one-line headline for these notes." });
    const calls = r.agents.calls();
    expect(calls.map((c) => c.input)).toEqual([calls[0]?.input, "NOTES", null]);
    expect(calls[0]?.input).toHaveLength(3);
  });

  it("02: semantic cases in order, choose, predicates", async () => {
    const r = await runWithFakes(file("02-triage.vvm"), {
      verdicts: [["money", true], ["angry", true]],
      choices: [["reply style", "facts"]],
    });
    expect(r.exports).toEqual({ queue: "billing-priority", style: "facts", reply: "reply to: State the facts and the resolution." });
    // the bug case was never judged: the money case matched first
    expect(r.agents.log.filter((x) => x.type === "judge").map((x) => (x as { kind: string }).kind)).toEqual(["case", "predicate"]);
  });

  it("02: error values route to error cases", async () => {
    const r = await runWithFakes(file("02-triage.vvm"), {
      replies: [["Summarise the ticket", new Map([["error", new Map([["kind", "timeout"], ["message", "slow"]])]])]],
    });
    expect(r.exports?.queue).toBe("retry-later");
    // error(kind="timeout") matched first: no semantic case was judged
    expect(r.agents.log.filter((x) => x.type === "judge").map((x) => (x as { kind: string }).kind)).toEqual(["predicate"]);
  });

  it("03: member paths render, options reach the call", async () => {
    const r = await runWithFakes(file("03-resilient-fetch.vvm"));
    const c = r.agents.calls()[0];
    expect(c?.task).toBe("Summarise the status of payments from https://status.example.com/payments.");
    expect([...(c?.options ?? new Map())]).toEqual([
      ["retry", 2],
      ["backoff", "exponential"],
      ["timeout", "45s"],
      ["name", "status-check"],
    ]);
  });

  it("04: refine stops when done, constrain violation feeds the fix", async () => {
    const r = await runWithFakes(file("04-review-loop.vvm"), {
      verdicts: [["approves", true], ["fsync", true]],
      replies: [["Fix these gaps", "FIXED"]],
    });
    expect(r.exports).toEqual({ final: "FIXED", history: ["violated"] });
    const fix = r.agents.calls().find((c) => c.task.startsWith("Fix these gaps"));
    expect(fix?.task).toContain("explains what happens after a crash");
  });

  it("05: pmap keeps order, filter/reduce/closures", async () => {
    const r = await runWithFakes(file("05-fanout.vvm"), {
      verdicts: [["disk", false]],
      replies: [["What does this line", (req) => `finding for ${String(req.input)}`]],
      delayMs: (req) => (String(req.input).includes("12:01") ? 30 : 1),
    });
    expect(r.exports?.first_finding).toBe("finding for 12:01 disk 91% full on db-2");
    expect(r.exports?.total).toBe(4);
    expect(r.exports?.report).toEqual({
      risk: "reply to: Incident with several signals. Summarise from the angle of risk.",
      cause: "reply to: Incident with several signals. Summarise from the angle of root cause.",
      lines: 4,
    });
    expect(r.agents.maxInFlight).toBeGreaterThan(1);
  });

  it("06: imported functions and agents", async () => {
    const r = await runWithFakes(file("06-modules.vvm"));
    expect(r.agents.calls().map((c) => c.agent)).toEqual(["scout", "librarian", "librarian", "librarian", "librarian"]);
    const scout = r.agents.calls()[0];
    expect(scout?.config.get("permissions")).toEqual(
      new Map<string, unknown>([["read", ["docs/**"]], ["write", []], ["execute", []], ["bash", "deny"], ["network", "allow"]]),
    );
  });

  it("07: errors", async () => {
    const r = await runWithFakes(file("07-errors.vvm"));
    expect(r.exports).toEqual({
      log: ["caught", "cleanup"],
      reason: { error: { kind: "thrown", message: "expected a list" } },
      outer: { error: { kind: "thrown", message: "inner" } },
      handled: "as a value",
    });
  });

  it("08: memory options and per-worker derived agents", async () => {
    const r = await runWithFakes(file("08-memory-journal.vvm"));
    const calls = r.agents.calls();
    expect(calls.map((c) => c.options.get("memory_mode") ?? null)).toEqual([null, "dry_run", "fresh", null, null, null, null]);
    const keys = calls.slice(3, 6).map((c) => (c.config.get("memory") as Map<string, unknown>).get("key"));
    expect(keys.sort()).toEqual(["lab:replicate-r1", "lab:replicate-r2", "lab:replicate-r3"]);
    // objects merge one level deep: the scope survives the override of the key
    expect((calls[3]?.config.get("memory") as Map<string, unknown>).get("scope")).toBe("project");
  });

  it("09: derived agents, inline agents, template escapes, export of an expression", async () => {
    const r = await runWithFakes(file("09-agent-values.vvm"));
    expect(Object.keys(r.exports ?? {})).toEqual(["security", "speed", "verdict", "ship"]);
    const calls = r.agents.calls();
    expect(calls[0]?.task).toBe("Review app/db.py. Quote the line with `code` formatting and {braces}.");
    expect(calls[1]?.config.get("model")).toBe("haiku");
    expect(calls[2]?.config.get("prompt")).toBe("One sentence only.");
    expect(calls[2]?.input).toEqual(new Map([["a", calls[0] && r.exports?.security], ["b", r.exports?.speed]]));
    expect(calls[3]?.agent).toBe("<inline>");
  });
});
