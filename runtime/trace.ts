// One JSON event per call, judge and statement boundary (`--trace FILE`).
export type TraceEvent = { type: string; t: number } & Record<string, unknown>;

export interface TraceSink {
  readonly enabled: boolean;
  emit(event: Omit<TraceEvent, "t">): void;
}

export const noTrace: TraceSink = { enabled: false, emit() {} };
