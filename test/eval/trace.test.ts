// `--trace`: the evaluator's module and statement events go through the run's TraceSink.
import { describe, expect, it } from "vitest";
import { runProgram } from "../../runtime/interpreter/index.ts";
import type { TraceEvent, TraceSink } from "../../runtime/trace.ts";
import { checkProgram } from "../../src/check.ts";
import { FakeAgents } from "../support/fake-agents.ts";
import { programFile } from "../support/program.ts";

describe("trace events", () => {
  it("emits module boundaries, one event per executed statement and one per binding (its type and size, never its text)", async () => {
    const file = programFile(`def f(x):\n  return x\nfor i in [1, 2]:\n  y = f(i)\nexport y\n`);
    const events: Omit<TraceEvent, "t">[] = [];
    const trace: TraceSink = { enabled: true, emit: (e) => events.push(e) };
    const out = await runProgram(await checkProgram(file), {
      agents: new FakeAgents(),
      trace,
      signal: new AbortController().signal,
      concurrency: 1,
    });
    expect(out.kind).toBe("ok");
    const at = (line: number) => `${file}:${line}:${line === 2 ? 3 : line === 4 ? 3 : 1}`;
    expect(events).toEqual([
      { type: "module", phase: "start", path: file },
      { type: "statement", kind: "For", site: at(3) },
      { type: "binding", name: "i", value_type: "number", site: `${file}:3:5` },
      { type: "statement", kind: "Assign", site: at(4) },
      { type: "statement", kind: "Return", site: at(2) },
      { type: "binding", name: "y", value_type: "number", site: at(4) },
      { type: "binding", name: "i", value_type: "number", site: `${file}:3:5` },
      { type: "statement", kind: "Assign", site: at(4) },
      { type: "statement", kind: "Return", site: at(2) },
      { type: "binding", name: "y", value_type: "number", site: at(4) },
      { type: "module", phase: "end", path: file },
    ]);
  });
});
