// Shared fixtures for the call-layer tests: requests as the interpreter builds them.
import type { AgentCallRequest, ChooseRequest, JudgeKind, JudgeRequest } from "../../runtime/agent-runtime.ts";
import { Accounting } from "../../runtime/calls/accounting.ts";
import { CallRuntime, type CallRuntimeDeps } from "../../runtime/calls/runtime.ts";
import type { MemoryReport } from "../../runtime/memory-port.ts";
import type { Provider } from "../../runtime/provider.ts";
import type { TraceEvent, TraceSink } from "../../runtime/trace.ts";
import { VAgent, type Site, type Value } from "../../runtime/values.ts";

export function site(line = 1, col = 1): Site {
  return { path: "/tmp/prog.vvm", span: { line, col, endLine: line, endCol: col + 5 } };
}

export function agent(name: string, config: Record<string, Value> = {}): VAgent {
  return new VAgent(name, new Map(Object.entries(config)), site());
}

export function callReq(a: VAgent, task: string, input: Value, options: Record<string, Value> = {}, extra: Partial<AgentCallRequest> = {}): AgentCallRequest {
  return { agent: a, task, input, options: new Map(Object.entries(options)), site: site(), signal: new AbortController().signal, ...extra };
}

export function judgeReq(kind: JudgeKind, criterion: string, input: Value, signal = new AbortController().signal): JudgeRequest {
  return { kind, criterion, input, site: site(3, 4), signal };
}

export function chooseReq(criterion: string, input: Value, labels: string[]): ChooseRequest {
  return { criterion, input, labels, site: site(5, 1), signal: new AbortController().signal };
}

class MemoryTrace implements TraceSink {
  readonly enabled = true;
  readonly events: TraceEvent[] = [];
  emit(e: Omit<TraceEvent, "t">): void {
    this.events.push({ ...e, t: 0 } as TraceEvent);
  }
}

interface Harness {
  rt: CallRuntime;
  acc: Accounting;
  trace: MemoryTrace;
}

/** A call runtime with fast backoff (5 ms base) unless the test says otherwise. */
export function harness(provider: Provider, over: Partial<CallRuntimeDeps> = {}): Harness {
  const acc = new Accounting();
  const trace = new MemoryTrace();
  const rt = new CallRuntime({
    provider,
    memory: null,
    judgeModel: "haiku",
    models: {},
    trace,
    accounting: acc,
    retry: { baseMs: 5, maxMs: 50, maxRetryAfterMs: 5000 },
    ...over,
  });
  return { rt, acc, trace };
}


/** The report of a fake memory session (tests that stand in for the store). */
export const fakeReport = (): MemoryReport => ({ scope: "project", key: "k", mode: "continue", lock_wait_ms: 0, facts_shown: 0, facts_hidden: 0, context_chars: 0, result: "none", seq: null, reason: null });
