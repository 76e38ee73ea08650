// Every file operation the memory store performs, behind one interface so tests can substitute a
// failing layer (ENOSPC, EIO) and check that memory ends unchanged or fully updated.
//
// A memory directory is untrusted: a cloned repository ships it, and another process may change it
// while a call runs. So no operation here follows a symbolic link or opens anything but a regular
// file: reads and writes open with O_NOFOLLOW | O_NONBLOCK (a FIFO never blocks) and check the
// opened file with fstat; replacements write a fresh, exclusively created temporary file with an
// unpredictable name and rename it over a target that is absent or a regular file.
//
// Everything is synchronous except the fsyncs. The files are small and local, and each asynchronous
// fs call is a thread-pool round trip that costs more than a small read or write itself; an fsync
// waits for the disk (~0.1-0.5 ms), so it goes to the thread pool: the calls of a pmap over
// different keys commit side by side instead of one after another.
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import {
  closeSync,
  constants,
  fstatSync,
  fsync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  open,
  openSync,
  readdirSync,
  readSync,
  rename,
  renameSync,
  rmdirSync,
  statSync,
  unlink,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";

export interface ReadHandle {
  readonly size: number;
  /** the file's inode: tells a file replaced by a rename from one written in place */
  readonly ino: number;
  /** how many names the file has (more than one only when openRead allowed it) */
  readonly nlink: number;
  read(start: number, length: number): Promise<Buffer>;
  /** the file's whole content now (it may have been written since it was opened), up to `cap` bytes */
  readNow(cap: number): Promise<Buffer>;
  close(): Promise<void>;
}

export interface MemoryFs {
  /** file contents, or null when the file does not exist; a link, directory or FIFO throws NOT_REGULAR */
  readFile(file: string): Promise<Buffer | null>;
  /**
   * An open handle for positioned reads, or null when the file does not exist; a link, directory or FIFO
   * throws NOT_REGULAR, and so does a file with more than `names` names (default 1: no other hard link).
   */
  openRead(file: string, names?: number): Promise<ReadHandle | null>;
  /**
   * Append `data` (one complete line) with a single write (looping only on a short write), then fsync;
   * when the file was empty (just created), fsync its directory too, so the file survives a power loss.
   * `sync: false` (derived files) leaves out both fsyncs.
   */
  append(file: string, data: Buffer, opts?: { sync: boolean }): Promise<void>;
  truncate(file: string, length: number): Promise<void>;
  /**
   * Replace the bytes from `at` to the end with `data`: wholly, or (when space runs out) not at all.
   * Space for `data` is claimed at the end of the file before any existing byte is overwritten.
   */
  replaceTail(file: string, at: number, data: Buffer): Promise<void>;
  /**
   * Temporary file + fsync + rename: the target is wholly old or wholly new. `data` may be a stream of
   * chunks (a rewritten ledger is never held whole); an error while it is read abandons the write.
   * `beforeRename` runs after the temporary file is complete and may throw to abandon the write.
   * `syncDir` fsyncs the directory after the rename, so the new file survives a power loss (a purge must
   * not come back). `sync: false` leaves out the file's fsync (output a rerun recreates: still whole or
   * absent after a kill, but not kept through a power loss). Resolves to the new file's inode.
   */
  writeAtomic(file: string, data: string | Buffer | AsyncIterable<Buffer>, beforeRename?: () => Promise<void>, opts?: { syncDir?: boolean; sync?: boolean }): Promise<number>;
  /**
   * Write `data` over the file in place (created if absent) with one write and no fsync, padded with
   * spaces to the file's present length, so the file never shrinks and a killed process cannot leave a
   * mix of old and new: for derived files whose format allows trailing spaces (JSON). Neither a rename
   * over an existing file nor a truncation to zero, which ext4 follows with a flush (auto_da_alloc, ~0.2 ms).
   */
  overwrite(file: string, data: string): Promise<void>;
  /** mkdir -p; the directories whose entries it changed are fsynced (a power loss keeps what it made) */
  mkdirp(dir: string): Promise<void>;
  /** size in bytes, or null when the path does not exist */
  size(file: string): Promise<number | null>;
  /** the inode, size and modification time of `file` itself (a link is not followed), or null when nothing is there */
  identity(file: string): Promise<{ ino: number; size: number; mtimeMs: number } | null>;
  /** names of the entries of a directory */
  list(dir: string): Promise<string[]>;
  /** give the file at `file` (a link itself, never followed) a second name, which must be new */
  link(file: string, name: string): Promise<void>;
  /** rename within a directory (a link itself, never followed) */
  rename(from: string, to: string): Promise<void>;
  /** fsync a directory, so the changes to its entries (a rename, a new name) survive a power loss */
  syncDir(dir: string): Promise<void>;
  /** unlink a name (a link itself, never its target; an empty directory too); a name already gone is not an error */
  remove(file: string): Promise<void>;
  /**
   * What is at `file` itself (a link is not followed): its type, size and number of names, or null when
   * nothing is there.
   */
  inspect(file: string): Promise<{ type: "file" | "dir" | "link" | "other"; size: number; nlink: number; mtimeMs: number } | null>;
}

const fsyncAsync = promisify(fsync);
const unlinkAsync = promisify(unlink);
const openAsync = promisify(open);
const renameAsync = promisify(rename);

/** fsync a directory: its entries (a new file, a new subdirectory) reach the disk. */
function syncDir(dir: string): Promise<void> {
  return retryingFds(async () => {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await fsyncAsync(fd);
    } finally {
      closeSync(fd);
    }
  });
}
const errno = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code;
const isENOENT = (err: unknown) => errno(err) === "ENOENT";

/** The error code a memory file that is a link, directory, FIFO, device or hard link is refused with. */
export const NOT_REGULAR = "not a regular file";
const notRegular = (file: string) => Object.assign(new Error(`${path.basename(file)} is ${NOT_REGULAR}`), { code: NOT_REGULAR });

/**
 * Out of file descriptors is usually a passing state (a wide pmap, another program): wait and try
 * again, up to about three seconds in all, before the operation fails.
 */
async function retryingFds<T>(op: () => T | Promise<T>): Promise<T> {
  for (let wait = 10; ; wait *= 2) {
    try {
      return await op();
    } catch (err) {
      const c = errno(err);
      if ((c !== "EMFILE" && c !== "ENFILE") || wait > 1280) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, wait * (0.5 + Math.random())));
  }
}

/**
 * Open without following a link at the last path component and without blocking (a FIFO put where a
 * memory file belongs would block a plain open forever, and the event loop with it), and insist on a
 * regular file with no other name (through a hard link, a read would hand a file from elsewhere to the
 * model, and a write would change it). Null when the file does not exist (and `flags` does not create it).
 */
function openRegular(file: string, flags: number, names = 1): { fd: number; size: number; ino: number; nlink: number } | null {
  let fd: number;
  try {
    fd = openSync(file, flags | constants.O_NONBLOCK | constants.O_NOFOLLOW, 0o644);
  } catch (err) {
    if (isENOENT(err)) return null;
    // ELOOP: a link; ENXIO: a FIFO without a reader opened for writing; EISDIR: a directory opened for writing
    const c = errno(err);
    throw c === "ELOOP" || c === "ENXIO" || c === "EISDIR" ? notRegular(file) : err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegular(file);
    if (st.nlink > names) throw Object.assign(new Error(`${path.basename(file)} has other hard links`), { code: NOT_REGULAR });
    return { fd, size: st.size, ino: st.ino, nlink: st.nlink };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function openExisting(file: string, flags: number): { fd: number; size: number; ino: number; nlink: number } {
  const opened = openRegular(file, flags);
  if (opened === null) throw Object.assign(new Error(`${path.basename(file)} does not exist`), { code: "ENOENT" });
  return opened;
}

/** Up to `length` bytes from `start` (fewer at the end of the file). */
function readAt(fd: number, start: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, start + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

function writeAll(fd: number, data: Buffer, position: number | null): void {
  let off = 0;
  while (off < data.length) off += writeSync(fd, data, off, data.length - off, position === null ? null : position + off);
}

/**
 * mkdir -p: the first directory it made, or undefined when `dir` was there. Not Node's `recursive`, which
 * never returns when mkdir fails with ENOENT under a folder that exists (/proc, /sys: a HOME or a memory
 * `path` there), spinning where no Ctrl-C is heard; here a folder whose parent is there is tried once.
 */
export function mkdirs(dir: string, mode?: number): string | undefined {
  const once = (d: string, parentMade: boolean): string | undefined => {
    try {
      mkdirSync(d, { mode });
      return d;
    } catch (err) {
      if (errno(err) === "EEXIST" && statSync(d).isDirectory()) return undefined;
      if (!isENOENT(err) || parentMade || path.dirname(d) === d) throw err;
    }
    const first = once(path.dirname(d), false);
    return once(d, true) === undefined ? first : (first ?? d);
  };
  return once(dir, false);
}

/** Temporary files are `<target>.<18 hex digits>.tmp`: unpredictable, so nobody can plant a link under the name. */
const tempName = (file: string) => `${file}.${randomBytes(9).toString("hex")}.tmp`;

/**
 * Names a killed writer can leave in a memory directory: this layer's temporary files, a stale lock moved
 * aside (lock.ts), and the temporary files of earlier releases (`meta.json.<pid>.<n>.tmp`, and
 * write-file-atomic's `digest.md.<number>`).
 */
export function isOrphanName(name: string): boolean {
  return /^(?:(?:digest\.md|meta\.json|ledger\.jsonl|recall\.jsonl)\.[0-9a-f]{18}\.tmp|lock\.[0-9a-f]{18}\.stale)$/.test(name) || /^meta\.json\.\d+\.\d+\.tmp$/.test(name) || /^digest\.md\.\d+$/.test(name);
}

export const nodeFs: MemoryFs = {
  readFile: (file) =>
    retryingFds(() => {
      const opened = openRegular(file, constants.O_RDONLY);
      if (opened === null) return null;
      try {
        // the size openRegular's fstat gave (readFileSync would fstat again); a write since is read next time
        return readAt(opened.fd, 0, opened.size);
      } finally {
        closeSync(opened.fd);
      }
    }),
  openRead: (file, names) =>
    retryingFds(() => {
      const opened = openRegular(file, constants.O_RDONLY, names);
      if (opened === null) return null;
      const { fd, size, ino, nlink } = opened;
      const read = async (start: number, length: number) => readAt(fd, start, length);
      return {
        size,
        ino,
        nlink,
        read,
        readNow: (cap: number) => read(0, Math.min(cap, fstatSync(fd).size)),
        async close() {
          closeSync(fd);
        },
      };
    }),
  async append(file, data, opts = { sync: true }) {
    const created = await retryingFds(async () => {
      const { fd, size } = openRegular(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT)!;
      try {
        writeAll(fd, data, null);
        if (opts.sync) await fsyncAsync(fd);
      } finally {
        closeSync(fd);
      }
      return size === 0;
    });
    // after the retried write, never inside it: a retry must not append the line twice
    if (created && opts.sync) await syncDir(path.dirname(file));
  },
  truncate: (file, length) =>
    retryingFds(() => {
      const { fd } = openExisting(file, constants.O_WRONLY);
      try {
        ftruncateSync(fd, length);
      } finally {
        closeSync(fd);
      }
    }),
  replaceTail: (file, at, data) =>
    retryingFds(async () => {
      const { fd, size } = openExisting(file, constants.O_WRONLY);
      try {
        const end = at + data.length;
        if (end > size) {
          try {
            writeAll(fd, Buffer.alloc(end - size, 0x20), size);
          } catch (err) {
            ftruncateSync(fd, size); // shrinking needs no space: the tail is as it was
            throw err;
          }
        }
        writeAll(fd, data, at);
        ftruncateSync(fd, end);
        await fsyncAsync(fd);
      } finally {
        closeSync(fd);
      }
    }),
  overwrite: (file, data) =>
    retryingFds(() => {
      const { fd, size } = openRegular(file, constants.O_WRONLY | constants.O_CREAT)!;
      try {
        const buf = Buffer.from(data, "utf8");
        writeAll(fd, buf.length >= size ? buf : Buffer.concat([buf, Buffer.alloc(size - buf.length, 0x20)]), 0);
      } finally {
        closeSync(fd);
      }
    }),
  async writeAtomic(file, data, beforeRename, opts) {
    const tmp = tempName(file);
    // O_EXCL: the name is new, so it is a fresh file of ours and never a link someone planted
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    // without an fsync to wait for, creating and renaming the file are the slow steps (~0.3 ms on ext4):
    // they go to the thread pool, so a pmap's writes overlap the runtime's own work
    const pooled = opts?.sync === false;
    const fd = await retryingFds(() => (pooled ? openAsync(tmp, flags, 0o644) : openSync(tmp, flags, 0o644)));
    let ino: number;
    try {
      try {
        if (typeof data === "string") writeAll(fd, Buffer.from(data, "utf8"), null);
        else if (Buffer.isBuffer(data)) writeAll(fd, data, null);
        else for await (const chunk of data) writeAll(fd, chunk, null);
        if (opts?.sync !== false) await fsyncAsync(fd);
        ino = fstatSync(fd).ino;
      } finally {
        closeSync(fd);
      }
      // a rename replaces a link rather than writing through it; a link (or a directory, a FIFO)
      // where a memory file belongs is still refused, so the runtime never removes what it did not make
      // (throwIfNoEntry: a new name, the usual case, costs no error object; a path through a file fails
      // at the temporary file's open above, whichever way a Node version reports it here)
      const target = lstatSync(file, { throwIfNoEntry: false });
      if (target !== undefined && !target.isFile()) throw notRegular(file);
      await beforeRename?.();
      if (pooled) await renameAsync(tmp, file);
      else renameSync(tmp, file);
    } catch (err) {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
      throw err;
    }
    if (opts?.syncDir) await syncDir(path.dirname(file));
    return ino;
  },
  async mkdirp(dir) {
    const first = mkdirs(dir);
    if (first === undefined) return;
    // the parent of the first new directory and every new one but the last gained an entry
    for (let d = path.dirname(dir); ; d = path.dirname(d)) {
      await syncDir(d);
      if (d === path.dirname(first)) break;
    }
  },
  async size(file) {
    try {
      return statSync(file).size;
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
  },
  async identity(file) {
    try {
      const st = lstatSync(file);
      return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
  },
  list: (dir) => retryingFds(() => readdirSync(dir)),
  async link(file, name) {
    linkSync(file, name);
  },
  async rename(from, to) {
    renameSync(from, to);
  },
  syncDir,
  // on the thread pool: removing the last name of a file is disk work (~0.5 ms here) that a caller
  // may overlap with other work (a session removes old replaced digests while the model answers)
  async remove(file) {
    try {
      await unlinkAsync(file);
    } catch (err) {
      if (errno(err) !== "EISDIR" && errno(err) !== "EPERM") {
        if (!isENOENT(err)) throw err;
        return;
      }
      try {
        rmdirSync(file);
      } catch (e) {
        // another remover (a second rm finishing the same leftover) took it meanwhile
        if (!isENOENT(e)) throw e;
      }
    }
  },
  async inspect(file) {
    try {
      const st = lstatSync(file);
      const type = st.isSymbolicLink() ? "link" : st.isFile() ? "file" : st.isDirectory() ? "dir" : "other";
      return { type, size: st.size, nlink: st.nlink, mtimeMs: st.mtimeMs };
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
  },
};
