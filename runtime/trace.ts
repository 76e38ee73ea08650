// One JSON event per call, judge and statement boundary (`--trace FILE`).
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
