// A scripted AgentRuntime for evaluator tests: replies chosen by task substring, verdicts by criterion
// substring, choices by criterion substring; every request is recorded. Test code only.
import type { AgentCallRequest, AgentRuntime, ChooseRequest, JudgeRequest } from "../../runtime/agent-runtime.ts";
import type { RunOutcome } from "../../runtime/context.ts";
import { runProgram } from "../../runtime/interpreter/index.ts";
import { noTrace } from "../../runtime/trace.ts";
import { makeError, thrown, toJSON, type Value } from "../../runtime/values.ts";
import { checkProgram } from "../../src/check.ts";
import { sleep } from "../../runtime/abort.ts";

export interface FakeScript {
  /** task substring → reply (a value, or a function of the request); first match wins */
  replies?: [string, Value | ((req: AgentCallRequest) => Value | Promise<Value>)][];
  /** criterion substring → verdict; unmatched criteria are false (uncertain) */
  verdicts?: [string, boolean | "raise"][];
  /** criterion substring → label; unmatched choices take the first label */
  choices?: [string, string][];
  /** milliseconds each call takes (to observe concurrency and cancellation) */
  delayMs?: number | ((req: AgentCallRequest) => number);
}

export type Recorded =
  | { type: "call"; agent: string; task: string; input: Value; options: Map<string, Value>; config: Map<string, Value> }
  | { type: "judge"; kind: JudgeRequest["kind"]; criterion: string; input: Value }
  | { type: "choose"; criterion: string; input: Value; labels: string[] };

export class FakeAgents implements AgentRuntime {
  readonly log: Recorded[] = [];
  inFlight = 0;
  maxInFlight = 0;
  cancelled = 0;

  constructor(private readonly script: FakeScript = {}) {}

  async call(req: AgentCallRequest): Promise<Value> {
    this.log.push({ type: "call", agent: req.agent.name, task: req.task, input: req.input, options: req.options, config: req.agent.config });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const d = typeof this.script.delayMs === "function" ? this.script.delayMs(req) : (this.script.delayMs ?? 0);
      if (d > 0 || req.signal.aborted) {
        const ok = await sleep(d, req.signal);
        if (!ok) {
          this.cancelled++;
          return makeError("cancelled", "call cancelled");
        }
      }
      for (const [needle, reply] of this.script.replies ?? []) {
        if (req.task.includes(needle)) return typeof reply === "function" ? await reply(req) : reply;
      }
      return `reply to: ${req.task}`;
    } finally {
      this.inFlight--;
    }
  }

  async judge(req: JudgeRequest): Promise<boolean> {
    this.log.push({ type: "judge", kind: req.kind, criterion: req.criterion, input: req.input });
    for (const [needle, verdict] of this.script.verdicts ?? []) {
      if (req.criterion.includes(needle)) {
        if (verdict === "raise") throw thrown(`judge failed for: ${req.criterion}`, req.site);
        return verdict;
      }
    }
    return false;
  }

  async choose(req: ChooseRequest): Promise<string> {
    this.log.push({ type: "choose", criterion: req.criterion, input: req.input, labels: req.labels });
    for (const [needle, label] of this.script.choices ?? []) if (req.criterion.includes(needle)) return label;
    return req.labels[0] as string;
  }

  calls(): Extract<Recorded, { type: "call" }>[] {
    return this.log.filter((r): r is Extract<Recorded, { type: "call" }> => r.type === "call");
  }
}

interface FakeRun {
  outcome: RunOutcome;
  agents: FakeAgents;
  /** the exports as plain JSON (ok runs), else null */
  exports: Record<string, unknown> | null;
  /** the raised error as plain JSON (raised runs), else null */
  error: unknown;
}

/** Validate `file` (must be free of errors) and run it with a FakeAgents runtime. */
export async function runWithFakes(
  file: string,
  script: FakeScript = {},
  opts: { concurrency?: number; signal?: AbortSignal } = {},
): Promise<FakeRun> {
  const checked = await checkProgram(file);
  const errors = checked.diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) throw new Error(`validation failed:\n${errors.map((d) => `${d.code} ${d.message}`).join("\n")}`);
  const agents = new FakeAgents(script);
  const outcome = await runProgram(checked, {
    agents,
    trace: noTrace,
    signal: opts.signal ?? new AbortController().signal,
    concurrency: opts.concurrency ?? 4,
  });
  return {
    outcome,
    agents,
    exports: outcome.kind === "ok" ? Object.fromEntries([...outcome.exports].map(([k, v]) => [k, toJSON(v)])) : null,
    error: outcome.kind === "raised" ? toJSON(outcome.error) : null,
  };
}
