// Files a person writes for one run (a script of replies, a test file, a price table): read whole, but only
// when they are regular files of a sensible size holding UTF-8 text. A device or a pipe named by mistake
// (/dev/zero) would otherwise be read until memory runs out, and bytes that are not UTF-8 would become
// U+FFFD without a word.
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";

/** The file is missing or not one to read: the message says why (`code`: the system's, when it said). */
export class FileRefused extends Error {
  override name = "FileRefused";
  constructor(
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

const OPEN_FAILURES: Record<string, string> = { ENOENT: "no such file", ENOTDIR: "no such file", EACCES: "permission denied", EPERM: "permission denied", ELOOP: "a loop of symbolic links" };

/**
 * The file's text, a byte-order mark dropped. Every failure is FileRefused: the file cannot be opened or
 * read, is not a regular file, holds more than `maxBytes` or is not UTF-8.
 */
export function readTextFile(file: string, maxBytes: number): string {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? null;
    throw new FileRefused(OPEN_FAILURES[code ?? ""] ?? `cannot be opened (${code ?? (err as Error).message})`, code);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new FileRefused("a directory, not a file");
    if (!st.isFile()) throw new FileRefused("not a regular file");
    if (st.size > maxBytes) throw new FileRefused(`larger than ${maxBytes / 2 ** 20} MiB`);
    let bytes: Buffer;
    try {
      bytes = readFileSync(fd);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? null;
      throw new FileRefused(`cannot be read (${code ?? (err as Error).message})`, code);
    }
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw new FileRefused("not UTF-8 text");
    }
  } finally {
    closeSync(fd);
  }
}
