// A program that computes without awaiting anything (deep recursion, a map over a huge list with a function
// that cannot suspend) never lets the event loop turn, and Node hands a Ctrl-C to JavaScript only when it
// turns: not even the second Ctrl-C, which ends vvm at once, is heard. Loops yield now and then (compile.ts
// `poll`); function calls cannot, so they are counted here, and once a stretch without a turn passes LONG_MS
// the run's `longSync` hook is told (the CLI then lets Ctrl-C end the process at once, until the loop turns).
// The same count paces the look at the heap (heap.ts), which a program without loops reaches only through calls.
import { checkHeap } from "../heap.ts";
import type { Site } from "../values.ts";

/** Calls between two looks at the heap (a call may make a few KB: 1,024 of them stay far below the heap's margin). */
const HEAP_MASK = 1023;
/** Calls between two looks at the clock. */
const MASK = 4095;
/** A stretch without a turn this long is told. */
const LONG_MS = 1000;

export class SyncWatch {
  private calls = 0;
  /** when the pending turn marker was scheduled; null when none is pending */
  private since: number | null = null;
  private told = false;

  constructor(private readonly hook: (() => void) | undefined) {}

  /** One function call, made at `site`. */
  call(site: Site): void {
    if ((++this.calls & HEAP_MASK) !== 0) return;
    checkHeap(site);
    if ((this.calls & MASK) !== 0 || this.hook === undefined) return;
    const now = performance.now();
    if (this.since === null) {
      this.since = now;
      // runs at the loop's next turn: the stretch is over
      setImmediate(() => {
        this.since = null;
        this.told = false;
      });
      return;
    }
    if (!this.told && now - this.since > LONG_MS) {
      this.told = true;
      this.hook();
    }
  }
}
