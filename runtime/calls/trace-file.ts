// `--trace FILE`: one JSON object per line. Buffered and written synchronously in 64 KiB batches, so
// emitting stays cheap inside hot loops and a crash loses at most the unflushed tail.
import { closeSync, constants, fstatSync, openSync, writeSync } from "node:fs";
import { roundMs, type TraceEvent, type TraceSink } from "../trace.ts";

const FLUSH_BYTES = 64 * 1024;

export class FileTrace implements TraceSink {
  readonly enabled = true;
  private fd: number;
  private readonly start = performance.now();
  private buf: string[] = [];
  private bytes = 0;
  private closed = false;

  /**
   * Throws the fs error when the file cannot be created (ENXIO: a FIFO with no reader); `warn` hears of a later
   * write failure, naming the file `shown` (as the user gave it).
   */
  constructor(
    file: string,
    private readonly shown: string,
    private readonly warn: (message: string) => void,
  ) {
    // A FIFO nobody reads would block a plain open on the main thread, where not even Ctrl-C is heard:
    // opened without waiting first (ENXIO: no reader), then, when it is not a regular file (a FIFO, a
    // terminal), again as usual, since a write that cannot wait would drop trace lines.
    let fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NONBLOCK, 0o666);
    if (!fstatSync(fd).isFile()) {
      const probe = fd;
      try {
        fd = openSync(file, "w");
      } finally {
        closeSync(probe);
      }
    }
    this.fd = fd;
  }

  emit(event: Omit<TraceEvent, "t">): void {
    if (this.closed) return;
    // `t`: milliseconds since the run started (the first event carries the wall-clock start).
    const line = JSON.stringify({ type: event.type, t: roundMs(performance.now() - this.start), ...event }) + "\n";
    this.buf.push(line);
    this.bytes += line.length;
    if (this.bytes >= FLUSH_BYTES) this.flush();
  }

  flush(): void {
    if (this.buf.length === 0) return;
    const data = this.buf.join("");
    this.buf = [];
    this.bytes = 0;
    const bytes = Buffer.from(data, "utf8");
    try {
      // writeSync may write less than asked; loop until the batch is out.
      for (let off = 0; off < bytes.length; ) off += writeSync(this.fd, bytes, off);
    } catch (err) {
      // A full disk must not end a run that is otherwise fine: the trace stops, the program goes on.
      this.closed = true;
      this.warn(`--trace ${this.shown}: cannot write (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the trace stops here`);
    }
  }

  close(): void {
    if (this.fd < 0) return;
    this.flush();
    this.closed = true;
    closeSync(this.fd);
    this.fd = -1;
  }
}
