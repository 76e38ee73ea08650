// Every file operation the memory store performs, behind one interface so tests can substitute a
// failing layer (ENOSPC, EIO) and check that memory ends unchanged or fully updated.
import { constants } from "node:fs";
import { mkdir, open, readFile, rename, stat, truncate, unlink, writeFile } from "node:fs/promises";

let tmpCounter = 0;
import writeFileAtomic from "write-file-atomic";

export interface ReadHandle {
  readonly size: number;
  read(start: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

export interface MemoryFs {
  /** file contents, or null when the file does not exist */
  readFile(file: string): Promise<Buffer | null>;
  /** an open handle for positioned reads, or null when the file does not exist */
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

export const nodeFs: MemoryFs = {
  async readFile(file) {
    try {
      return await readFile(file);
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
  },
  async openRead(file) {
    let fh;
    try {
      fh = await open(file, constants.O_RDONLY);
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
    const { size } = await fh.stat();
    return {
      size,
      async read(start, length) {
        const buf = Buffer.allocUnsafe(length);
        let got = 0;
        while (got < length) {
          const { bytesRead } = await fh.read(buf, got, length - got, start + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        return buf.subarray(0, got);
      },
      close: () => fh.close(),
    };
  },
  async append(file, data) {
    const fh = await open(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o644);
    try {
      let off = 0;
      while (off < data.length) {
        const { bytesWritten } = await fh.write(data, off, data.length - off);
        off += bytesWritten;
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
  },
  async truncate(file, length) {
    await truncate(file, length);
  },
  async writeAtomic(file, data, durable) {
    if (durable) {
      await writeFileAtomic(file, data, { fsync: true });
      return;
    }
    // derived files (meta.json): temp file + rename, still all-or-nothing, with half the round trips
    // of write-file-atomic (no realpath, stat, chown, chmod)
    const tmp = `${file}.${process.pid}.${(tmpCounter = (tmpCounter + 1) % 1e9)}.tmp`;
    try {
      await writeFile(tmp, data);
      await rename(tmp, file);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
  },
  async mkdirp(dir) {
    await mkdir(dir, { recursive: true });
  },
  async size(file) {
    try {
      return (await stat(file)).size;
    } catch (err) {
      if (isENOENT(err)) return null;
      throw err;
    }
  },
};
