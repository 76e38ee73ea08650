// Every file operation the memory store performs, behind one interface so tests can substitute a
// failing layer (ENOSPC, EIO) and check that memory ends unchanged or fully updated.
//
// Everything is synchronous, the two fsyncs included. The files are small and local, and each
// asynchronous fs call is a thread-pool round trip that, on a busy machine, costs more than the
// call itself: write-file-atomic's asynchronous replace alone made about fifteen of them (a
// realpath that lstats every path component, stat, open, write, fsync, close, chown, chmod,
// rename, unlink), measured at ~1.2 ms against ~0.4 ms for its synchronous form, with the same
// steps and the same fsync. The price: while a memory call commits, the event loop waits for the
// two fsyncs (~0.1-0.3 ms each on this machine's disk), and commits of different keys run one
// after the other instead of overlapping; against model calls that take seconds that is noise.
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import writeFileAtomic from "write-file-atomic";

let tmpCounter = 0;

export interface ReadHandle {
  readonly size: number;
  read(start: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

export interface MemoryFs {
  /** file contents, or null when the file does not exist; a link, directory or FIFO throws NOT_REGULAR */
  readFile(file: string): Promise<Buffer | null>;
  /** an open handle for positioned reads, or null when the file does not exist; a link, directory or FIFO throws NOT_REGULAR */
  openRead(file: string): Promise<ReadHandle | null>;
  /** append `data` (one complete line) with a single write (looping only on a short write), then fsync */
  append(file: string, data: Buffer): Promise<void>;
  truncate(file: string, length: number): Promise<void>;
  /** temp file (+ fsync unless `durable` is false) + rename: the target is wholly old or wholly new */
  writeAtomic(file: string, data: string | Buffer, durable: boolean): Promise<void>;
  mkdirp(dir: string): Promise<void>;
  /** size in bytes, or null when the path does not exist */
  size(file: string): Promise<number | null>;
}

function isENOENT(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === "ENOENT";
}

/** The error code a memory file that is a link, directory, FIFO or device is refused with. */
export const NOT_REGULAR = "not a regular file";
const notRegular = (file: string) => Object.assign(new Error(`${path.basename(file)} is ${NOT_REGULAR}`), { code: NOT_REGULAR });

/**
 * Open for reading without blocking (a FIFO put where a memory file belongs would block a plain open
 * forever, and the event loop with it) and insist on a regular file, never through a symbolic link (a
 * cloned repository could point digest.md at any file of the user's). Null when the file does not exist.
 */
function openRegular(file: string): { fd: number; size: number } | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    if (isENOENT(err)) return null;
    throw (err as NodeJS.ErrnoException).code === "ELOOP" ? notRegular(file) : err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegular(file);
    return { fd, size: st.size };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

export const nodeFs: MemoryFs = {
  async readFile(file) {
    const opened = openRegular(file);
    if (opened === null) return null;
    try {
      return readFileSync(opened.fd);
    } finally {
      closeSync(opened.fd);
    }
  },
  async openRead(file) {
    const opened = openRegular(file);
    if (opened === null) return null;
    const { fd, size } = opened;
    return {
      size,
      async read(start, length) {
        const buf = Buffer.allocUnsafe(length);
        let got = 0;
        while (got < length) {
          const n = readSync(fd, buf, got, length - got, start + got);
          if (n === 0) break;
          got += n;
        }
        return buf.subarray(0, got);
      },
      async close() {
        closeSync(fd);
      },
    };
  },
  async append(file, data) {
    const fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
  async truncate(file, length) {
    truncateSync(file, length);
  },
  async writeAtomic(file, data, durable) {
    if (durable) {
      // temp file in the same directory, write, fsync, keep mode and owner, rename over the target
      writeFileAtomic.sync(file, data, { fsync: true });
      return;
    }
    // derived files (meta.json): temp file + rename, still all-or-nothing, without fsync
    const tmp = `${file}.${process.pid}.${(tmpCounter = (tmpCounter + 1) % 1e9)}.tmp`;
    try {
      writeFileSync(tmp, data);
      renameSync(tmp, file);
    } catch (err) {
      try {
        unlinkSync(tmp);
      } catch {
        // never created, or already gone
      }
      throw err;
    }
  },
  async mkdirp(dir) {
    mkdirSync(dir, { recursive: true });
  },
  async size(file) {
    try {
      return statSync(file).size;
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
  },
};
