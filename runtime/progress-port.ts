// How a run reports how far its fan-outs are, for the progress line (the CLI draws it; the runtime only counts).
export interface ProgressPort {
  /** A `pmap` over `total` items began; the returned handle is told each item's end and the fan-out's. */
  fanOut(total: number): FanOutProgress;
}

export interface FanOutProgress {
  /** one item finished (its value, an error value or a raise) */
  itemDone(): void;
  /** the fan-out is over: finished, failed (the rest cancelled) or interrupted */
  end(): void;
}
