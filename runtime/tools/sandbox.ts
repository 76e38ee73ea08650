// Where a tool's path argument really points, and whether the agent's permissions allow it there.
// A path from a model is untrusted input: it is resolved against the program's directory, every link
// followed, and only then checked against the globs (spec/agent-calls.md §8).
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, promises as fs, readlinkSync, type Dirent } from "node:fs";
import path from "node:path";
import { realish, relativeUnder } from "../../src/resolve/glob-prefix.ts";
import { GlobSet, type ReadTree } from "./globs.ts";
import type { ToolPermission } from "./permissions.ts";

/** A refusal the model is told about (so it can carry on); `permission` names what was missing. */
export class ToolDenied extends Error {
  override name = "ToolDenied";
  constructor(
    message: string,
    readonly permission: ToolPermission | null,
  ) {
    super(message);
  }
}

/** A tool use that cannot go on (bad arguments, a missing file, a binary file): a tool error, not a denial. */
export class ToolFailed extends Error {
  override name = "ToolFailed";
  constructor(
    message: string,
    /** short word for the trace: bad_input, not_found, binary, too_large, failed, … */
    readonly reason: string,
  ) {
    super(message);
  }
}

export interface ResolvedPath {
  /** the path as the model wrote it, resolved against the program's directory (links not followed) */
  abs: string;
  /** where it really is: links followed (for a write: the parent's links; the file itself is never a link) */
  real: string;
  /** how the tool names it back to the model and in the trace */
  shown: string;
}

const MAX_PATH_CHARS = 4096;

/** Throws the tool's "stopped" failure once the call is cancelled or out of time: tools look between steps. */
export function stopIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new ToolFailed("stopped: the call was cancelled or ran out of time", "aborted");
}

/** Where Linux names an open descriptor's file; null elsewhere. */
const PROC_FD = existsSync("/proc/self/fd") ? "/proc/self/fd" : null;

/** The path the kernel names for the file open at `fd` (Linux), or null when it cannot say. */
export function namedPath(fd: number): string | null {
  if (PROC_FD === null) return null;
  try {
    return readlinkSync(`${PROC_FD}/${fd}`);
  } catch {
    return null;
  }
}

/**
 * Whether the file open at `fd` is the one at `real`. The permission check resolved the path, and the open
 * refuses a link only at its last step: a folder on the way that was swapped for a link in between (by any
 * process that can change the project tree) would hand over a file elsewhere. Linux names the file an
 * open descriptor is on (/proc/self/fd); elsewhere its inode is compared with what `real` names now.
 */
export function openedAt(fd: number, real: string): boolean {
  const named = namedPath(fd);
  if (named !== null) return named === real;
  const st = fstatSync(fd);
  const now = lstatSync(real, { throwIfNoEntry: false });
  return now !== undefined && now.ino === st.ino && now.dev === st.dev;
}

/** A folder opened and checked to be the one at its real path: `path` reaches it whatever becomes of that path. */
export interface Folder {
  path: string;
  close(): void;
}

/**
 * The folder at `real` (a real path: no link in it), opened and checked with openedAt, to list it or make
 * something in it: on Linux `path` is /proc/self/fd/N, which keeps naming the opened folder even when a
 * folder on the way is swapped for a link afterwards; elsewhere the real path itself, just checked.
 * `within`: the folder `real` is in, opened so; on Linux only the last name is looked up inside it, never the
 * path again (a link there is not followed, so there is nothing to check). "missing" when nothing is there,
 * "not a folder" when something else is, "moved" when the open reached another folder than the check meant,
 * "denied" when the system refused to open it (EACCES: a folder this user may not read).
 */
export function openFolder(real: string, within?: Folder): Folder | "missing" | "not a folder" | "moved" | "denied" {
  const at = within === undefined ? real : path.join(within.path, path.basename(real));
  let fd: number;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    if ((err as NodeJS.ErrnoException).code === "EACCES") return "denied";
    // a link where the checked folder was (O_NOFOLLOW with O_DIRECTORY fails with ENOTDIR or ELOOP)
    try {
      return lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink() ? "moved" : "not a folder";
    } catch {
      return "not a folder"; // a path too long to name (ENAMETOOLONG), among others
    }
  }
  if ((within === undefined || PROC_FD === null) && !openedAt(fd, real)) {
    closeSync(fd);
    return "moved";
  }
  return { path: PROC_FD === null ? real : `${PROC_FD}/${fd}`, close: () => closeSync(fd) };
}

/** The refusal when openedAt says no. */
export function movedWhileOpened(target: ResolvedPath, permission: ToolPermission): ToolDenied {
  return new ToolDenied(`permission denied: ${target.shown} changed while it was being opened (a folder on its path was replaced, by a link?); nothing was ${permission === "read" ? "read" : "written"}`, permission);
}

export class Sandbox {
  constructor(
    /** the program's directory, real */
    readonly root: string,
    readonly read: GlobSet,
    readonly write: GlobSet,
  ) {}

  /** `readTrees`: real folders readable whole (skills' folders, a run's bindings), beside the read globs. */
  static async create(programDir: string, read: readonly string[], write: readonly string[], readTrees: readonly ReadTree[] = []): Promise<Sandbox> {
    const root = realish(path.resolve(programDir));
    return new Sandbox(root, await GlobSet.compile(read, root, readTrees), await GlobSet.compile(write, root));
  }

  /** Relative to the program's directory when inside it, else absolute. */
  show(abs: string): string {
    const rel = relativeUnder(this.root, abs);
    return rel === null ? abs : rel === "" ? "." : rel;
  }

  /** The path argument as an absolute path, refusing `..` (spec: paths never climb). */
  lexical(p: string, what = "path"): string {
    if (p.length > MAX_PATH_CHARS) throw new ToolFailed(`${what} is longer than ${MAX_PATH_CHARS} characters`, "bad_input");
    if (p.includes("\0")) throw new ToolFailed(`${what} contains a NUL character`, "bad_input");
    if (p.trim() === "") throw new ToolFailed(`${what} is empty`, "bad_input");
    if (p.split(/[/\\]/).includes("..")) {
      throw new ToolDenied(
        `permission denied: ${JSON.stringify(p)} contains "..", and paths may not climb out of a directory; write it from the program's directory (or as an absolute path one of your globs allows)`,
        null,
      );
    }
    return path.resolve(this.root, p);
  }

  /** A file or directory to read: its real location (every link followed) must match a read glob. */
  async forRead(p: string): Promise<ResolvedPath> {
    const abs = this.lexical(p);
    const real = resolved(abs, p);
    if (!this.read.matches(real)) throw this.denied("read", p, abs, real);
    return { abs, real, shown: this.show(abs) };
  }

  /** A directory to list or search under: allowed when the read globs may match something inside it. */
  async forWalk(p: string): Promise<ResolvedPath> {
    const abs = this.lexical(p, "pattern");
    const real = resolved(abs, p);
    if (!this.read.mayContain(real) && !this.read.matches(real)) throw this.denied("read", p, abs, real);
    return { abs, real, shown: this.show(abs) };
  }

  /**
   * A file to write: never a link itself (refused), its real parent directory resolved, and the real
   * target must match a write glob. The file may not exist yet.
   */
  async forWrite(p: string): Promise<ResolvedPath> {
    const abs = this.lexical(p);
    if (p.endsWith("/") || p.endsWith("\\")) throw new ToolFailed(`${JSON.stringify(p)} names a directory; give a file path`, "bad_input");
    const real = landingOf(abs, p);
    // the target's own location must be allowed before anything about it (even whether it exists) is said
    if (!this.write.matches(real)) throw this.denied("write", p, abs, real);
    const st = await fs.lstat(real).catch(() => null);
    if (st?.isSymbolicLink()) {
      throw new ToolDenied(`permission denied: ${this.show(abs)} is a symbolic link, and writes never follow links; remove the link or write another path`, "write");
    }
    if (st && !st.isFile()) throw new ToolFailed(`${this.show(abs)} is not a regular file (${kindOf(st)})`, "not_a_file");
    return { abs, real, shown: this.show(abs) };
  }

  /** Where a write of `p` would land (the links of its folders followed), or null when the path is refused: what writes to one file queue on. */
  landing(p: string): string | null {
    try {
      return landingOf(this.lexical(p), p);
    } catch {
      return null;
    }
  }

  /** An edit reads the file (its answer says whether a text occurs), so the file must be readable as well as writable. */
  assertReadable(target: ResolvedPath): void {
    if (!this.read.matches(target.real)) {
      const have = this.read.empty ? "this agent has no read globs" : `none of this agent's read globs (${this.read.describe()}) matches it`;
      throw new ToolDenied(`permission denied: edit_file reads ${target.shown} to find the old text, so it needs the read permission as well as write, and ${have}; write_file replaces a file without reading it`, "read");
    }
  }

  private denied(permission: "read" | "write", p: string, abs: string, real: string): ToolDenied {
    const globs = permission === "read" ? this.read : this.write;
    const verb = permission === "read" ? "reading" : "writing";
    // where a link leads is named only inside the program's directory: a model learns no path beyond it
    const link = real === abs ? "" : relativeUnder(this.root, real) !== null ? ` (${JSON.stringify(p)} leads through a link to ${this.show(real)})` : ` (${JSON.stringify(p)} leads through a link out of the program's directory)`;
    const have = globs.empty ? "this agent has no " + permission + " globs" : `none of this agent's ${permission} globs (${globs.describe()}) matches it`;
    return new ToolDenied(`permission denied: ${verb} ${this.show(abs)} needs the ${permission} permission, and ${have}${link}`, permission);
  }

  /**
   * Files under `start` (an allowed walk root) whose path relative to it `match`es and whose real
   * location a read glob allows. Linked directories are not entered (no loops, no leaving the globs
   * through a link); a linked file is listed when its target is readable. Sorted, depth first.
   */
  async walk(start: ResolvedPath, match: ((rel: string) => boolean) | null, limits: WalkLimits, signal: AbortSignal): Promise<WalkResult> {
    const out: WalkResult = { files: [], truncated: false, visitedAll: true };
    let visited = 0;
    // the real directory and the path the model knows it by
    const stack: { real: string; abs: string }[] = [{ real: start.real, abs: start.abs }];
    while (stack.length > 0) {
      stopIfAborted(signal);
      const dir = stack.pop()!;
      // listed through the opened folder: a folder swapped for a link since it was checked lists nothing
      const folder = openFolder(dir.real);
      if (typeof folder === "string") continue;
      let entries: Dirent[];
      try {
        entries = await fs.readdir(folder.path, { withFileTypes: true });
      } catch {
        continue; // unreadable or vanished: nothing to list there
      } finally {
        folder.close();
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const subdirs: { real: string; abs: string }[] = [];
      for (const e of entries) {
        if (++visited > limits.maxVisited) {
          out.visitedAll = false;
          return finish(out);
        }
        // a folder of many long names: the event loop (timeout=, Ctrl-C) gets its turn between batches
        if (visited % 256 === 0) {
          await new Promise((resolve) => setImmediate(resolve));
          stopIfAborted(signal);
        }
        const real = path.join(dir.real, e.name);
        const abs = path.join(dir.abs, e.name);
        const rel = path.relative(start.abs, abs).split(path.sep).join("/");
        if (e.isDirectory()) {
          if (this.read.mayContain(real)) subdirs.push({ real, abs });
          continue;
        }
        let fileReal = real;
        if (e.isSymbolicLink()) {
          const target = await fs.realpath(real).catch(() => null);
          const st = target === null ? null : await fs.stat(target).catch(() => null);
          if (target === null || !st?.isFile()) continue;
          fileReal = target;
        } else if (!e.isFile()) continue;
        if (match !== null && !match(rel)) continue;
        if (!this.read.matches(fileReal)) continue;
        if (out.files.length >= limits.maxFiles) {
          out.truncated = true;
          return finish(out);
        }
        out.files.push({ real: fileReal, shown: this.show(abs) });
      }
      // reversed onto the stack, so directories are entered in name order and a capped walk is the same every time
      for (const d of subdirs.reverse()) stack.push(d);
    }
    return finish(out);
  }
}

interface WalkLimits {
  /** stop after this many matching files (truncated) */
  maxFiles: number;
  /** stop after looking at this many directory entries (visitedAll false) */
  maxVisited: number;
}

interface WalkResult {
  files: { real: string; shown: string }[];
  truncated: boolean;
  visitedAll: boolean;
}

function finish(r: WalkResult): WalkResult {
  r.files.sort((a, b) => (a.shown < b.shown ? -1 : a.shown > b.shown ? 1 : 0));
  return r;
}

/** Where a file written at `abs` lands: its folder's links followed, the file itself never (a write does not follow it). */
function landingOf(abs: string, p: string): string {
  return path.join(resolved(path.dirname(abs), p), path.basename(abs));
}

/** realish(), with a path that cannot be resolved (a link loop, too long once links are followed) refused as a tool error. */
function resolved(abs: string, p: string): string {
  try {
    return realish(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    throw new ToolFailed(`${JSON.stringify(p)} cannot be resolved (${code}${code === "ELOOP" ? ": too many links" : code === "ENAMETOOLONG" ? ": too long once its links are followed" : ""})`, "bad_input");
  }
}

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean }): string {
  return st.isDirectory() ? "a directory" : st.isFIFO() ? "a named pipe" : st.isSocket() ? "a socket" : "a device or other special file";
}
