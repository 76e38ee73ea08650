// Files a person writes for one run (a script of replies, a price table): read whole, but only when they
// are regular files of a sensible size. A device or a pipe named by mistake (/dev/zero) would otherwise be
// read until memory runs out.
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";

/** The file is there but is not one to read: the message says why. */
export class FileRefused extends Error {
  override name = "FileRefused";
}

/** The file's text; FileRefused when it is not a regular file or holds more than `maxBytes`. */
export function readTextFile(file: string, maxBytes: number): string {
  // O_NONBLOCK: opening a FIFO must not wait for a writer
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new FileRefused("not a regular file");
    if (st.size > maxBytes) throw new FileRefused(`larger than ${maxBytes / 2 ** 20} MiB`);
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}
