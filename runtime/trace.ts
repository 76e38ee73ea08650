// One JSON event per call, judge and statement boundary (`--trace FILE`), and the narration port (`--narrate`).
import type { MemoryReport } from "./memory-port.ts";
import type { Site, Value } from "./values.ts";

export type TraceEvent = { type: string; t: number } & Record<string, unknown>;

export interface TraceSink {
  readonly enabled: boolean;
  emit(event: Omit<TraceEvent, "t">): void;
}

export const noTrace: TraceSink = { enabled: false, emit() {} };

/** `path:line:col`, how events name a place in the program. */
export function siteText(path: string, span: { line: number; col: number }): string {
  return `${path}:${span.line}:${span.col}`;
}

/** Milliseconds with microsecond precision, how events carry durations and times. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/**
 * `vvm run --narrate`: what a run does, told as it happens. The interpreter reports each binding and the
 * call layer each agent call and judge; the CLI writes them to stderr. Injected per run (RunContext and
 * the call layer's deps); absent, nothing is reported and nothing is paid for.
 */
export interface Narrator {
  /** `name = value` was just made by an assignment */
  binding(name: string, value: Value, site: Site): void;
  /** an agent call is about to start (memory not read yet) */
  callStarted(call: NarratedCall): void;
  /** it ended: `errorKind` null when it returned a value */
  callFinished(call: NarratedCall & { ms: number; errorKind: string | null; tokens: { input: number; output: number } }): void;
  /** a call with memory is done with it: what its reply's patch did (never fact or digest text) */
  memory(m: { id: number; agent: string; report: MemoryReport }): void;
  /** a judge (predicate, case, require, choose) answered or failed */
  judged(judge: { kind: string; model: string; site: Site; ms: number; answer: string }): void;
}

export interface NarratedCall {
  id: number;
  agent: string;
  model: string;
  site: Site;
}
