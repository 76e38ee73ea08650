// The pmaps in flight, for the progress line: how many items of how many are done, and about how long
// the rest will take at the pace so far.
import type { FanOutProgress, ProgressPort } from "../progress-port.ts";

interface FanOut {
  total: number;
  done: number;
  started: number;
}

export class FanOuts implements ProgressPort {
  /** in the order they began; the first is the outermost still running */
  private readonly active: FanOut[] = [];

  constructor(
    /** called when an item or a fan-out ends, so the line can be redrawn */
    private readonly changed: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  fanOut(total: number): FanOutProgress {
    const f: FanOut = { total, done: 0, started: this.now() };
    this.active.push(f);
    this.changed();
    let ended = false;
    return {
      itemDone: () => {
        f.done++;
        this.changed();
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.active.splice(this.active.indexOf(f), 1);
        this.changed();
      },
    };
  }

  /**
   * `12/50 items, ~8s left` for the outermost pmap in flight (with `, 2 more pmaps` when others run
   * inside or beside it), or null when none is. No estimate before the first item is done.
   */
  text(): string | null {
    const f = this.active[0];
    if (!f) return null;
    let out = `${f.done}/${f.total} items`;
    if (f.done > 0 && f.done < f.total) out += `, ~${formatSeconds(((this.now() - f.started) / f.done) * (f.total - f.done))} left`;
    const others = this.active.length - 1;
    if (others > 0) out += `, ${others} more pmap${others === 1 ? "" : "s"}`;
    return out;
  }
}

/** `8s`, `2m05s`, `1h03m`: an estimate, so whole seconds at most. */
function formatSeconds(ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
