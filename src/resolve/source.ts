// Reading a program file safely: every way a file can be unusable becomes a reason, never an exception.
import { readFile, realpath, stat } from "node:fs/promises";

/** Larger files are refused before reading (documented in spec/diagnostics.md). */
export const MAX_SOURCE_BYTES = 16 * 1024 * 1024;

type SourceResult =
  | { ok: true; path: string; source: string }
  /** `line`/`col` locate the first bad byte of a binary or non-UTF-8 file */
  | { ok: false; path: string; reason: string; missing: boolean; line: number; col: number };

/** Canonical path (realpath) and text of a program file. */
export async function readSource(file: string): Promise<SourceResult> {
  let canonical: string;
  try {
    canonical = await realpath(file);
  } catch (err) {
    return fail(file, describeFsError(err), isMissing(err));
  }
  try {
    const st = await stat(canonical);
    if (!st.isFile()) return fail(canonical, "not a file", false);
    if (st.size > MAX_SOURCE_BYTES) {
      return fail(canonical, `file is ${formatSize(st.size)}, over the ${formatSize(MAX_SOURCE_BYTES)} limit for programs`, false);
    }
    const bytes = await readFile(canonical);
    // The size can change between stat and read.
    if (bytes.length > MAX_SOURCE_BYTES) return fail(canonical, `file is over the ${formatSize(MAX_SOURCE_BYTES)} limit for programs`, false);
    const bad = firstInvalidByte(bytes);
    if (bad >= 0) {
      const { line, col } = bytePosition(bytes, bad);
      const what = bytes[bad] === 0 ? "a NUL byte (binary file?)" : `byte 0x${bytes[bad]!.toString(16).padStart(2, "0")} that is not UTF-8`;
      return { ok: false, path: canonical, reason: `not a text file: ${what} at line ${line}, column ${col}`, missing: false, line, col };
    }
    let source = bytes.toString("utf8");
    // The only place a byte-order mark is dropped: a second one is a stray character to the parser.
    if (source.charCodeAt(0) === 0xfeff) source = source.slice(1);
    return { ok: true, path: canonical, source };
  } catch (err) {
    return fail(canonical, describeFsError(err), isMissing(err));
  }
}

function fail(path: string, reason: string, missing: boolean): SourceResult {
  return { ok: false, path, reason, missing, line: 1, col: 1 };
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOENT":
    case "ENOTDIR":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "not a file";
    case "ELOOP":
      return "too many symbolic links";
    default:
      return `cannot read (${code ?? (err instanceof Error ? err.message : String(err))})`;
  }
}

function formatSize(n: number): string {
  return n >= 1024 * 1024 ? `${(n / (1024 * 1024)).toFixed(n % (1024 * 1024) === 0 ? 0 : 1)} MiB` : `${n} bytes`;
}

/** Offset of the first NUL byte (unless `nul` allows it) or malformed UTF-8 sequence, or -1. */
export function firstInvalidByte(b: Uint8Array, nul: "refused" | "allowed" = "refused"): number {
  let i = 0;
  const n = b.length;
  while (i < n) {
    const c = b[i]!;
    if (c === 0 && nul === "refused") return i;
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (c >= 0xc2 && c <= 0xdf) [need, min] = [1, 0x80];
    else if (c >= 0xe0 && c <= 0xef) [need, min] = [2, 0x800];
    else if (c >= 0xf0 && c <= 0xf4) [need, min] = [3, 0x10000];
    else return i;
    let cp = c & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const cc = b[i + k];
      if (cc === undefined || (cc & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return i;
    i += need + 1;
  }
  return -1;
}

function bytePosition(b: Uint8Array, offset: number): { line: number; col: number } {
  let line = 1;
  // The parser never sees a leading byte-order mark, so it takes no column.
  let lineStart = b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
  // Lines end at LF, CRLF or a lone CR, as the parser counts them (grammar/index.ts).
  for (let i = 0; i < offset; i++) {
    if (b[i] === 0x0d && b[i + 1] === 0x0a) i++;
    if (b[i] === 0x0a || b[i] === 0x0d) {
      line++;
      lineStart = i + 1;
    }
  }
  // Columns count characters, as everywhere else: decode the line's prefix.
  const col = Buffer.from(b.subarray(lineStart, offset)).toString("utf8").length + 1;
  return { line, col };
}
