// state.md: the run's header, binding index and a short execution trace (spec/state.md §2). The runtime
// keeps them in memory and rewrites the whole file, atomically, after a change; changes that arrive
// while a write is under way or within WRITE_GAP_MS after it are taken by the next write (at most one
// write in flight, one pending), so a pmap's calls never lose a line and never queue a write each, and a
// 130 KB file is not rewritten per call. A killed run leaves the last complete file.
//
// Names and summaries come from the program and the replies, so each write first passes the ones added
// since the last through the secret scan, all in one scan: a scan costs a fixed ~40-90 µs besides its
// length, which one per call would add to every call of a wide pmap.
import path from "node:path";
import type { MemoryFs } from "../memory/fsio.ts";
import { cutText } from "../text.ts";
import { CELL_SCAN, cellSource, tableCell, WITHHELD, withoutSecrets } from "./summary.ts";

/** Run files are whole or absent after a kill (temporary file + rename) but not fsynced: a rerun recreates them (spec/state.md §2). */
export const RUN_OUTPUT = { sync: false } as const;

export type RunStatus = "running" | "completed" | "failed";

/** A name or summary as the run gave it; state.md shows it as one table cell of at most `max` characters once the scan passed it. */
interface Unchecked {
  /** what the scan reads: the text, up to CELL_SCAN characters */
  raw: string;
  /** what the cell is made of (cellSource) */
  source: string;
  max: number;
  /** the cell, set by the scan (withheld when flagged) */
  shown?: string;
}

/** Text state.md holds: written by the runtime itself, or a name or summary from the run. */
export type Part = string | Unchecked;

interface IndexRow {
  name: Unchecked;
  /** `b000001` */
  binding: string;
  summary: Unchecked;
}

/** The most groups one scan reads: a long batch is split, so no single scan grows without bound. */
const SCAN_BATCH = 128;

/** Trace lines kept: the first few and the most recent, with a count of those left out between. */
const TRACE_HEAD = 20;
const TRACE_TAIL = 200;
/** Least time between two writes while the run goes on: a 1,000-call pmap rewrites a 130 KB file a dozen times, not a thousand. */
const WRITE_GAP_MS = 100;

export class StateFile {
  private status: RunStatus = "running";
  private updated: Date;
  private readonly rows: IndexRow[] = [];
  private readonly head: Part[][] = [];
  private readonly tail: Part[][] = [];
  /** names and summaries not scanned yet, in groups checked as if alone (a binding's name and summary) */
  private unchecked: Unchecked[][] = [];
  private omitted = 0;
  private dirty = false;
  private writing: Promise<void> | null = null;
  private failure: unknown = null;
  /** flushes waiting: the next write goes at once */
  private urgent = 0;
  /** ends the wait between two writes early */
  private wake: (() => void) | null = null;

  constructor(
    private readonly fs: MemoryFs,
    private readonly file: string,
    private readonly runId: string,
    private readonly program: string,
    private readonly started: Date,
    /** told once when state.md cannot be written (the run goes on; the bindings are the artifacts) */
    private readonly warn: (message: string) => void,
    /** `write(at)` with `at` the run directory as made (an error once it leads elsewhere): state.md is never written through a link swapped in */
    private readonly writeIn: (write: (at: string) => Promise<unknown>) => Promise<void>,
  ) {
    this.updated = started;
  }

  /**
   * Names and summaries from the run, as [text, max] (a binding's name and summary, checked together as
   * one scan of them alone would), for bind() and trace(); shown once the next write's scan passed them.
   */
  cells(texts: [string, number][]): Unchecked[] {
    const group = texts.map(([text, max]): Unchecked => ({ raw: cutText(text, CELL_SCAN), source: cellSource(text), max }));
    this.unchecked.push(group);
    return group;
  }

  bind(name: Unchecked, binding: string, summary: Unchecked): void {
    this.rows.push({ name, binding, summary });
  }

  trace(line: Part[], at = new Date()): void {
    const text = [`- [${at.toISOString().slice(11, 19)}] `, ...line];
    if (this.head.length < TRACE_HEAD) this.head.push(text);
    else {
      this.tail.push(text);
      if (this.tail.length > TRACE_TAIL) {
        this.tail.shift();
        this.omitted++;
      }
    }
    this.updated = at;
    this.save();
  }

  setStatus(status: RunStatus): void {
    this.status = status;
  }

  /** Schedule a write of the current state; returns at once. */
  save(): void {
    this.dirty = true;
    this.writing ??= this.drain();
  }

  /** Write the current state and wait for it. */
  async flush(): Promise<void> {
    this.urgent++;
    try {
      this.save();
      this.wake?.();
      await this.writing;
    } finally {
      this.urgent--;
    }
  }

  private async drain(): Promise<void> {
    try {
      while (this.dirty) {
        this.dirty = false;
        try {
          // render() runs right after the last scan, with nothing added in between
          while (this.unchecked.length > 0) await this.scan(this.unchecked.splice(0, SCAN_BATCH));
          const text = this.render();
          await this.writeIn((at) => this.fs.writeAtomic(path.join(at, path.basename(this.file)), text, undefined, RUN_OUTPUT));
        } catch (err) {
          if (this.failure === null) this.warn(`cannot write ${this.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the run goes on`);
          this.failure = err;
        }
        // changes of the next WRITE_GAP_MS go into one write; a flush cuts the wait short
        if (this.urgent === 0) await this.pause();
      }
    } finally {
      this.writing = null;
    }
  }

  private async scan(groups: Unchecked[][]): Promise<void> {
    const shown = await withoutSecrets(groups.map((g) => g.map((c) => c.raw)));
    groups.forEach((g, k) => g.forEach((c, i) => (c.shown = tableCell(shown[k][i] === WITHHELD ? WITHHELD : c.source, c.max))));
  }

  private pause(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake?.(), WRITE_GAP_MS);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  private render(): string {
    const out = [
      `# VVM Run: ${this.runId}`,
      "",
      `Program: ${this.program}`,
      `Started: ${this.started.toISOString()}`,
      `Updated: ${this.updated.toISOString()}`,
      `Status: ${this.status}`,
      "",
      "## Binding Index",
      "",
      "| Name | Ref Path | Summary |",
      "|------|----------|---------|",
    ];
    for (const r of this.rows) out.push(`| ${show(r.name)} | bindings/${r.binding}.md | ${show(r.summary)} |`);
    const line = (parts: Part[]) => parts.map((p) => (typeof p === "string" ? p : show(p))).join("");
    out.push("", "## Execution Trace", "", ...this.head.map(line));
    if (this.omitted > 0) out.push(`- … ${this.omitted} trace line${this.omitted === 1 ? "" : "s"} left out …`);
    out.push(...this.tail.map(line), "");
    return out.join("\n");
  }
}

/** A scanned cell; one the scan has not reached is never shown (render runs after the scans, so this is a guard, not a path). */
function show(c: Unchecked): string {
  return c.shown ?? WITHHELD;
}
