// The file tools: read_file, list_files, search_files, write_file, edit_file. Each gets arguments already
// checked against its schema and a Sandbox that decides where they may point; each returns the text the
// model sees. Limits keep a huge or binary file from flooding the conversation (spec/agent-calls.md §8).
import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, read, readSync, promises as fs } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { cutText } from "../text.ts";
import { GLOB_OPTIONS } from "./globs.ts";
import { searchFiles } from "./search.ts";
import { segmentGlob } from "./segment-glob.ts";
import { movedWhileOpened, openedAt, openFolder, stopIfAborted, ToolDenied, ToolFailed, type ResolvedPath, type Sandbox } from "./sandbox.ts";

export const LIMITS = {
  /** lines read_file returns at most (its default `limit`) */
  readLines: 2000,
  /** characters read_file returns at most */
  readChars: 100_000,
  /** characters of one line read_file shows */
  lineChars: 2000,
  /** bytes of one line read_file reads looking for its end before it stops reading the file */
  lineScanBytes: 8 * 2 ** 20,
  /** files list_files names at most */
  listFiles: 1000,
  /** directory entries a walk looks at before it stops */
  walkEntries: 100_000,
  /** files search_files looks into at most */
  searchFiles: 10_000,
  searchMatches: 200,
  searchLineChars: 300,
  /** files larger than this are skipped by search_files and refused by edit_file */
  textFileBytes: 10 * 2 ** 20,
  /** write_file content at most */
  writeBytes: 10 * 2 ** 20,
  searchTimeoutMs: 30_000,
  /** bytes looked at to tell a binary file */
  sniffBytes: 8192,
};

/** What a tool returns: the text for the model, and what the trace may say about it (never contents). */
export interface ToolOutput {
  text: string;
  path?: string;
  bytesWritten?: number;
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const WRITE_FLAGS = constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

export async function readFileTool(sb: Sandbox, args: { path: string; offset?: number; limit?: number }, signal: AbortSignal): Promise<ToolOutput> {
  const target = await sb.forRead(args.path);
  const first = args.offset ?? 1;
  const limit = Math.min(args.limit ?? LIMITS.readLines, LIMITS.readLines);
  // Opened, checked and read up to its first chunk synchronously: for the usual small local file that takes
  // microseconds, where each trip through libuv's thread pool (open, fstat, read, close) waits for the event
  // loop to wake and was most of a tool turn. Later chunks of a large file are read asynchronously, so the
  // abort signal is still looked at between them.
  let fd: number;
  try {
    fd = openSync(target.real, READ_FLAGS);
  } catch (err) {
    throw openFailure(target, err);
  }
  try {
    if (!openedAt(fd, target.real)) throw movedWhileOpened(target, "read");
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new ToolFailed(`${target.shown} is a directory; list_files lists what is in it`, "not_a_file");
    if (!st.isFile()) throw new ToolFailed(`${target.shown} is not a regular file`, "not_a_file");
    const decoder = new TextDecoder("utf-8", { fatal: true });
    // never zero-filled: only the bytes each read fills are looked at
    const buf = Buffer.allocUnsafe(64 * 1024);
    const lines: string[] = [];
    let chars = 0;
    let lineNo = 0; // lines completed so far
    let partial = "";
    let pos = 0;
    let more = false; // something after what is shown
    let cutLines = 0;
    let stoppedForChars = false;
    /** where the line being read began (bytes), and the line number at which a line too long stopped the reading */
    let lineStart = 0;
    let endless: number | null = null;
    const cutLine = (line: string) => {
      cutLines++;
      return cutText(line, LIMITS.lineChars) + ` …[line cut at ${LIMITS.lineChars} characters]`;
    };
    reading: for (;;) {
      stopIfAborted(signal);
      const bytesRead = pos === 0 ? readSync(fd, buf, 0, buf.length, 0) : await readAt(fd, buf, pos);
      // a regular file reads short only at its end: no further read just to be told 0 bytes
      const end = bytesRead < buf.length;
      const chunk = buf.subarray(0, bytesRead);
      if (pos === 0 && chunk.subarray(0, LIMITS.sniffBytes).includes(0)) throw binary(target, st.size);
      const newline = chunk.lastIndexOf(0x0a);
      if (newline >= 0) lineStart = pos + newline + 1;
      pos += bytesRead;
      let text: string;
      try {
        text = decoder.decode(chunk, { stream: !end });
      } catch {
        throw binary(target, st.size);
      }
      const parts = (partial + text).split("\n");
      partial = end ? "" : parts.pop()!;
      if (end && partial === "" && parts.length > 0 && parts[parts.length - 1] === "") parts.pop(); // a final newline ends the last line
      for (const raw of parts) {
        lineNo++;
        if (lineNo < first) continue;
        if (lines.length >= limit) {
          more = true;
          break reading;
        }
        const line = raw.length > LIMITS.lineChars ? cutLine(raw) : raw;
        if (chars + line.length + 1 > LIMITS.readChars && lines.length > 0) {
          more = true;
          stoppedForChars = true;
          break reading;
        }
        lines.push(line);
        chars += line.length + 1;
      }
      if (end) break;
      // a single line longer than everything we would show: no need to keep the rest of it
      if (partial.length > LIMITS.readChars + LIMITS.lineChars) {
        partial = cutText(partial, LIMITS.lineChars + 1);
      }
      // nor to read on for ever looking for its end (a file of one 10 GB line): the line is shown as far as
      // read, and the reading stops there
      if (pos - lineStart > LIMITS.lineScanBytes) {
        lineNo++;
        endless = lineNo;
        more = true;
        if (lineNo >= first && lines.length < limit) lines.push(cutLine(partial));
        break;
      }
    }
    if (st.size === 0) return { text: `(${target.shown} is empty)`, path: target.shown };
    const endlessNote = endless === null ? null : `line ${endless} of ${target.shown} runs on past ${LIMITS.lineScanBytes / 2 ** 20} MiB (${st.size.toLocaleString("en")} bytes in all), so the reading stopped there: read_file cannot read past it${st.size <= LIMITS.textFileBytes ? " (search_files can look further)" : ""}`;
    if (lines.length === 0) {
      if (endlessNote !== null) return { text: `(${endlessNote})`, path: target.shown };
      return { text: `(${target.shown} has ${lineNo} line${lineNo === 1 ? "" : "s"}; offset ${first} is past the end)`, path: target.shown };
    }
    const last = first + lines.length - 1;
    const notes: string[] = [];
    if (endlessNote !== null) {
      notes.push(endlessNote);
    } else if (more) {
      const why = stoppedForChars ? `the ${LIMITS.readChars.toLocaleString("en")}-character cap` : `limit ${limit}`;
      notes.push(`showing lines ${first}–${last} of ${target.shown} (${st.size.toLocaleString("en")} bytes in all; stopped at ${why}): call read_file with offset=${last + 1} to read on`);
    } else if (first > 1) notes.push(`showing lines ${first}–${last}, the end of ${target.shown}`);
    if (cutLines > 0) notes.push(`${cutLines} line${cutLines === 1 ? " was" : "s were"} longer than ${LIMITS.lineChars} characters and ${cutLines === 1 ? "is" : "are"} cut`);
    const body = lines.join("\n");
    return { text: notes.length === 0 ? body : `${body}\n\n[read_file: ${notes.join("; ")}]`, path: target.shown };
  } finally {
    closeSync(fd);
  }
}

export async function listFilesTool(sb: Sandbox, args: { pattern: string }, signal: AbortSignal): Promise<ToolOutput> {
  const { start, glob } = await walkStart(sb, args.pattern);
  if (glob === null) {
    // a single file named without wildcards
    return { text: start.shown, path: start.shown };
  }
  const walk = await sb.walk(start, glob, { maxFiles: LIMITS.listFiles, maxVisited: LIMITS.walkEntries }, signal);
  const notes: string[] = [];
  if (walk.truncated) notes.push(`only the first ${LIMITS.listFiles} files are listed; use a narrower pattern`);
  if (!walk.visitedAll) notes.push(`the listing stopped after looking at ${LIMITS.walkEntries.toLocaleString("en")} entries; use a narrower pattern`);
  const body = walk.files.length === 0 ? `no readable files match ${JSON.stringify(args.pattern)}` : walk.files.map((f) => f.shown).join("\n");
  return { text: notes.length === 0 ? body : `${body}\n\n[list_files: ${notes.join("; ")}]`, path: start.shown };
}

export async function searchFilesTool(sb: Sandbox, args: { query: string; pattern?: string }, signal: AbortSignal): Promise<ToolOutput> {
  try {
    new RegExp(args.query);
  } catch (err) {
    throw new ToolFailed(`query is not a valid regular expression: ${(err as Error).message}`, "bad_input");
  }
  const pattern = args.pattern ?? "**";
  const { start, glob } = await walkStart(sb, pattern);
  const files = glob === null ? [{ real: start.real, shown: start.shown }] : (await sb.walk(start, glob, { maxFiles: LIMITS.searchFiles, maxVisited: LIMITS.walkEntries }, signal)).files;
  const end = await searchFiles(
    files,
    args.query,
    { maxMatches: LIMITS.searchMatches, maxLineChars: LIMITS.searchLineChars, maxFileBytes: LIMITS.textFileBytes, timeoutMs: LIMITS.searchTimeoutMs },
    signal,
  );
  if (!end.ok) throw new ToolFailed(end.message, end.why);
  const r = end.result;
  const notes: string[] = [];
  if (r.truncated) notes.push(`only the first ${LIMITS.searchMatches} matching lines are shown`);
  if (files.length >= LIMITS.searchFiles) notes.push(`only the first ${LIMITS.searchFiles} files were searched`);
  if (r.skippedLarge > 0) notes.push(`${r.skippedLarge} file${r.skippedLarge === 1 ? "" : "s"} over ${LIMITS.textFileBytes / 2 ** 20} MiB skipped`);
  if (r.skippedBinary > 0) notes.push(`${r.skippedBinary} binary file${r.skippedBinary === 1 ? "" : "s"} skipped`);
  const body =
    r.matches.length === 0
      ? `no line matches ${JSON.stringify(args.query)} in ${files.length} readable file${files.length === 1 ? "" : "s"} matching ${JSON.stringify(pattern)}`
      : r.matches.map((m) => `${m.shown}:${m.line}: ${m.text}`).join("\n");
  return { text: notes.length === 0 ? body : `${body}\n\n[search_files: ${notes.join("; ")}]`, path: start.shown };
}

export async function writeFileTool(sb: Sandbox, args: { path: string; content: string }): Promise<ToolOutput> {
  const bytes = Buffer.byteLength(args.content);
  if (bytes > LIMITS.writeBytes) throw new ToolFailed(`content is ${bytes} bytes; write_file writes at most ${LIMITS.writeBytes / 2 ** 20} MiB`, "too_large");
  const target = await sb.forWrite(args.path);
  const created = await writeNoFollow(target, args.content);
  return { text: `wrote ${bytes} bytes to ${target.shown} (${created ? "created" : "replaced"})`, path: target.shown, bytesWritten: bytes };
}

export async function editFileTool(sb: Sandbox, args: { path: string; old: string; new: string }): Promise<ToolOutput> {
  if (args.old === "") throw new ToolFailed("old is empty; give the exact text to replace (write_file writes a whole file)", "bad_input");
  const target = await sb.forWrite(args.path);
  sb.assertReadable(target);
  let fh;
  try {
    fh = await fs.open(target.real, READ_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new ToolFailed(`${target.shown} does not exist; write_file creates files`, "not_found");
    throw openFailure(target, err);
  }
  if (!openedAt(fh.fd, target.real)) {
    await fh.close();
    throw movedWhileOpened(target, "read");
  }
  let text: string;
  try {
    const st = await fh.stat();
    if (st.size > LIMITS.textFileBytes) throw new ToolFailed(`${target.shown} is ${st.size} bytes; edit_file edits files up to ${LIMITS.textFileBytes / 2 ** 20} MiB`, "too_large");
    const bytes = await fh.readFile();
    if (bytes.subarray(0, LIMITS.sniffBytes).includes(0)) throw binary(target, st.size);
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw binary(target, st.size);
    }
  } finally {
    await fh.close();
  }
  const count = occurrences(text, args.old);
  if (count === 0) throw new ToolFailed(`the old text does not occur in ${target.shown}; read the file and copy the text exactly`, "no_match");
  if (count > 1) throw new ToolFailed(`the old text occurs ${count} times in ${target.shown}; include more of the surrounding text so it occurs once`, "ambiguous");
  const i = text.indexOf(args.old);
  const next = text.slice(0, i) + args.new + text.slice(i + args.old.length);
  await writeNoFollow(target, next);
  const bytes = Buffer.byteLength(next);
  return { text: `edited ${target.shown}: replaced 1 occurrence (the file is now ${bytes} bytes)`, path: target.shown, bytesWritten: bytes };
}

/**
 * A pattern is matched one path segment at a time (segment-glob.ts), each segment through a regular
 * expression in which each `*` is a lazy loop and each `{…}` group an alternation. One of them matches a
 * name one way; each further one multiplies the ways by the name's length: five `*` in one name took
 * seconds to hours on the thread that runs everything else (no timeout or Ctrl-C could end it). A pattern a
 * model sends may have one segment with two `*` or groups, the others one at most (`**` alone is a segment
 * of its own and does not count), and what segment-glob.ts allows. Resolves to the pattern's matcher.
 */
function compilePattern(glob: string, pattern: string): (rel: string) => boolean {
  const refuse = (why: string) => new ToolFailed(`the pattern ${JSON.stringify(pattern)} ${why} (list a folder and narrow it down instead)`, "bad_input");
  // a `{…}` group is a choice point as a `*` is (segment-glob.ts bounds the groups themselves)
  let extra = 0;
  for (const segment of glob.split("/")) if (segment !== "**") extra += Math.max(0, segment.split("*").length - 2 + (segment.match(/(?<!\\)\{[^}]*\}/g)?.length ?? 0));
  if (extra > 1) throw refuse("has too many '*' or {…} groups: one path segment may hold two, the others one each");
  try {
    // (extended globs, whose `*(a|aa)` forms backtrack within a name, are plain text)
    return segmentGlob(glob, { ...GLOB_OPTIONS, noextglob: true });
  } catch (err) {
    if (err instanceof RangeError) throw refuse(`has ${err.message}`);
    throw err;
  }
}

/** Where a list or search starts, and the wildcard part matched below it (null: the pattern names one file). */
async function walkStart(sb: Sandbox, pattern: string): Promise<{ start: ResolvedPath; glob: ((rel: string) => boolean) | null }> {
  sb.lexical(pattern, "pattern"); // `..` anywhere, NUL, empty: refused before anything is looked at
  const scan = picomatch.scan(pattern);
  if (scan.isGlob) {
    const glob = compilePattern(scan.glob, pattern);
    return { start: await sb.forWalk(scan.base === "" ? "." : scan.base), glob };
  }
  const plain = pattern.replace(/\\(.)/g, "$1");
  const st = await fs.stat(sb.lexical(plain, "pattern")).catch(() => null);
  // a directory named without wildcards lists what is directly in it
  if (st?.isDirectory()) return { start: await sb.forWalk(plain), glob: compilePattern("*", pattern) };
  const file = await sb.forRead(plain);
  if (!st) throw new ToolFailed(`${file.shown} does not exist`, "not_found");
  return { start: file, glob: null };
}

function readAt(fd: number, buf: Buffer, pos: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, buf, 0, buf.length, pos, (err, n) => (err ? reject(err) : resolve(n))));
}

function openFailure(target: ResolvedPath, err: unknown): Error {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOENT":
      return new ToolFailed(`${target.shown} does not exist`, "not_found");
    case "ELOOP":
      return new ToolDenied(`permission denied: ${target.shown} is a symbolic link (changed while being opened, or pointing nowhere); links are not followed here`, null);
    case "EISDIR":
      return new ToolFailed(`${target.shown} is a directory`, "not_a_file");
    case "EACCES":
    case "EPERM":
      return new ToolFailed(`${target.shown}: the operating system refused access (${code})`, "failed");
    default:
      return new ToolFailed(`${target.shown}: ${code ?? (err as Error).message}`, "failed");
  }
}

/**
 * Write a whole file without ever following a link, and atomically: the content goes to a fresh hidden file
 * beside the target (`.<name>.vvm-<hex>.tmp`, made with O_EXCL|O_NOFOLLOW inside the target's folder as
 * opened and checked, openFolder), is fsynced and given the old file's owner and mode, then renamed over the
 * target, so a write that fails part-way (a full disk, a kill) leaves the old file whole; on a failure the
 * temporary file is removed. The folder is not fsynced (spec/agent-calls.md §8): after a power loss the old
 * file or the new one is there, whole. An existing target is first opened for writing (O_NOFOLLOW: a link
 * there fails with ELOOP; never truncated) and checked to be the file the permission check resolved
 * (openedAt), a regular file with no other hard links (replacing it would part it from them silently), and
 * one the system lets this process write. Missing parent directories are created. Returns whether the file
 * is new.
 */
async function writeNoFollow(target: ResolvedPath, content: string): Promise<boolean> {
  const dir = path.dirname(target.real);
  const name = path.basename(target.real);
  makeFolders(target, dir);
  const folder = openFolder(dir);
  if (folder === "moved") throw movedWhileOpened(target, "write");
  if (typeof folder === "string") throw new ToolFailed(`${target.shown} was not written: its folder is ${folder === "missing" ? "gone" : "not a folder"}`, "failed");
  try {
    const old = await existingFile(target, path.join(folder.path, name));
    // (a name near the system's 255-byte limit is cut: the temporary name only has to be recognisable)
    const tmpName = `.${Buffer.from(name).subarray(0, 200).toString()}.vvm-${randomBytes(6).toString("hex")}.tmp`;
    const tmp = path.join(folder.path, tmpName);
    let step = "making a temporary file beside it";
    try {
      // not readable by others before it has the old file's mode: an edit writes the whole old content again
      const fh = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, old === null ? 0o666 : 0o600);
      try {
        if (!openedAt(fh.fd, path.join(dir, tmpName))) throw movedWhileOpened(target, "write");
        step = "writing the new content";
        await fh.writeFile(content, "utf8");
        if (old !== null) {
          const made = await fh.stat();
          step = `giving the new file the owner of the old one (uid ${old.uid}, gid ${old.gid})`;
          if (made.uid !== old.uid || made.gid !== old.gid) await fh.chown(old.uid, old.gid);
          // (less set-user-ID and set-group-ID, which a write clears: model text never becomes such a program)
          step = "giving the new file the mode of the old one";
          if ((made.mode & 0o7777) !== (old.mode & 0o1777)) await fh.chmod(old.mode & 0o1777);
        }
        step = "flushing the new content to the disk";
        await fh.sync();
      } finally {
        await fh.close();
      }
      step = `renaming the new file over ${old === null ? "its name" : "the old one"}`;
      await fs.rename(tmp, path.join(folder.path, name));
    } catch (err) {
      const left = await fs.unlink(tmp).then(
        () => "",
        (e: unknown) => ((e as NodeJS.ErrnoException).code === "ENOENT" ? "" : `; the temporary file ${tmpName} could not be removed from its folder`),
      );
      if (err instanceof ToolDenied || err instanceof ToolFailed) throw err;
      throw new ToolFailed(`${target.shown} was not written: ${step} failed (${writeError(err)}); ${old === null ? "no file was made" : "the file is as it was"}${left}`, "failed");
    }
    return old === null;
  } finally {
    folder.close();
  }
}

/** What a write failed with, for the model: the code, and what the common disk ones mean. */
function writeError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const means: Record<string, string> = { ENOSPC: "the disk is full", EDQUOT: "the disk quota is used up", EFBIG: "the file would pass the size limit" };
  return code === undefined ? (err as Error).message : code in means ? `${code}: ${means[code]}` : code;
}

/**
 * The file a write replaces, opened at `at` (inside its folder as opened) for writing without following a
 * link and checked as writeNoFollow says; null when there is none.
 */
async function existingFile(target: ResolvedPath, at: string): Promise<{ mode: number; uid: number; gid: number } | null> {
  let fh;
  try {
    fh = await fs.open(at, WRITE_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw openFailure(target, err);
  }
  try {
    if (!openedAt(fh.fd, target.real)) throw movedWhileOpened(target, "write");
    const st = await fh.stat();
    if (!st.isFile()) throw new ToolFailed(`${target.shown} is not a regular file`, "not_a_file");
    if (st.nlink > 1) {
      throw new ToolDenied(`permission denied: ${target.shown} has other hard links; writing it would change those files too, or (replacing it) part it from them`, "write");
    }
    return { mode: st.mode, uid: st.uid, gid: st.gid };
  } finally {
    await fh.close();
  }
}

/**
 * Make the folders missing on the way to `dir` (a real path), each inside the folder before it as opened and
 * checked (openFolder), so a folder swapped for a link meanwhile never gets folders made through it.
 */
function makeFolders(target: ResolvedPath, dir: string): void {
  const cannot = (why: unknown) =>
    new ToolFailed(`cannot create the directory for ${target.shown} (${typeof why === "string" ? why : ((why as NodeJS.ErrnoException).code ?? (why as Error).message)})`, "failed");
  const missing: string[] = [];
  let at = dir;
  const absent = (p: string) => {
    try {
      return lstatSync(p, { throwIfNoEntry: false }) === undefined;
    } catch (err) {
      throw cannot(err);
    }
  };
  while (absent(at) && path.dirname(at) !== at) {
    missing.unshift(path.basename(at));
    at = path.dirname(at);
  }
  for (const name of missing) {
    const folder = openFolder(at);
    if (folder === "moved") throw movedWhileOpened(target, "write");
    if (typeof folder === "string") throw cannot(`${path.basename(at)} is ${folder === "missing" ? "gone" : "not a folder"}`);
    try {
      mkdirSync(path.join(folder.path, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw cannot(err);
    } finally {
      folder.close();
    }
    at = path.join(at, name);
  }
}

function binary(target: ResolvedPath, size: number): ToolFailed {
  return new ToolFailed(`${target.shown} is a binary file (${size.toLocaleString("en")} bytes, not UTF-8 text); this tool only handles text`, "binary");
}

function occurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}
