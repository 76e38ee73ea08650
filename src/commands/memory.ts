// `vvm memory …`: what the subcommands share. Which memory (the scope, the project by --dir or --program,
// --path for scope "path", and the key as the program writes it, never the escaped directory name);
// output as readable text or one JSON document; failures as one line on stderr with an exit code; for
// the commands that write, who is writing (the user) and how long to wait for the memory's lock.
import { printable, vvmLine } from "../printable.ts";
import { statSync } from "node:fs";
import stringWidth from "string-width";
import os from "node:os";
import path from "node:path";
import { displayPath, EXIT, homeDir, projectDir, UsageError, warningLine, type CliIO } from "../io.ts";
import { nodeFs, NOT_REGULAR } from "../../runtime/memory/fsio.ts";
import { InspectError, inspectMemory, type Inspection, type RemovalLeft } from "../../runtime/memory/inspect.ts";
import { BindingError, memoryRoot, notAFolder, resolveBinding, verifyContainment, type MemoryLocation, type MemoryScope } from "../../runtime/memory/keys.ts";
import { ToolError } from "../../runtime/memory/tool-error.ts";
import type { ToolOptions } from "../../runtime/memory/maintain.ts";
import { obj } from "../../runtime/values.ts";
import { Interrupted } from "../../runtime/abort.ts";
import { clipped } from "../../runtime/text.ts";

/** The options every `vvm memory` command takes. */
export interface WhereFlags {
  scope: MemoryScope;
  dir?: string;
  program?: string;
  path?: string;
  json?: boolean;
}

export interface Where {
  scope: MemoryScope;
  /** the directory that holds the scope's memories */
  root: string;
  /** the project: `project` scope and a relative `--path` resolve against it */
  entryDir: string;
  homeDir: string;
}

/** The root the flags name. Throws UsageError. */
export function where(flags: WhereFlags, io: CliIO): Where {
  if (flags.dir !== undefined && flags.program !== undefined) throw new UsageError("--dir and --program both name the project; give one");
  if (flags.scope !== "path" && flags.path !== undefined) throw new UsageError(`--path is for --scope path (the scope is ${flags.scope})`);
  if (flags.scope === "path" && flags.path === undefined) throw new UsageError("--scope path needs --path P, the path the program gives its memory");
  // user memories are the same whatever the project: a project named beside them would be ignored without a word
  if (flags.scope === "user" && (flags.dir ?? flags.program) !== undefined) {
    throw new UsageError(`${flags.dir !== undefined ? "--dir" : "--program"} names a project, and --scope user memories belong to no project (they are in ~/.vvm/memory)`);
  }
  // a mistyped --dir is the command line's mistake: "no memories" there would read as a clean bill of health
  let entryDir = projectDir(flags.dir, io, `--dir ${flags.dir}`);
  if (flags.program !== undefined) {
    const file = path.resolve(io.cwd, flags.program);
    let kind: "file" | "other" | "none" = "none";
    try {
      kind = statSync(file).isFile() ? "file" : "other";
    } catch {
      // said below
    }
    if (kind !== "file") throw new UsageError(`--program ${flags.program}: ${kind === "none" ? "no such file" : "not a file (give the program, or the project with --dir)"}`);
    entryDir = path.dirname(file);
  }
  const home = homeDir(io);
  try {
    return { scope: flags.scope, root: memoryRoot(flags.scope, entryDir, home, flags.path), entryDir, homeDir: home };
  } catch (err) {
    if (err instanceof BindingError) throw new UsageError(err.message);
    throw err;
  }
}

/** How much of a refused key a message quotes. */
const SHOWN_KEY_CHARS = 80;

/** The memory a key names, as a program with these flags would reach it. Throws UsageError. */
export function locate(key: string, flags: WhereFlags, io: CliIO): MemoryLocation {
  const w = where(flags, io);
  const binding = obj(flags.scope === "path" ? { scope: flags.scope, key, path: flags.path ?? "" } : { scope: flags.scope, key });
  try {
    return resolveBinding(binding, w.entryDir, w.homeDir);
  } catch (err) {
    if (err instanceof BindingError) {
      // a key refused for its length is named by its start: quoted whole, it was the whole message
      const shown = JSON.stringify(clipped(key, SHOWN_KEY_CHARS));
      throw new UsageError(`key ${shown}: ${err.message.replace(/^memory\./, "")}`);
    }
    throw err;
  }
}

export const label = (loc: MemoryLocation) => `memory ${loc.scope}:${JSON.stringify(loc.key)}`;

/** The memory does not exist (exit 1). */
export class MissingMemory extends Error {
  override name = "MissingMemory";
}

function missing(loc: MemoryLocation, flags: WhereFlags, io: CliIO): MissingMemory {
  const hint = flags.scope === "project" && flags.dir === undefined && flags.program === undefined ? " (give the project with --dir or --program)" : "";
  return new MissingMemory(`no ${label(loc)} in ${displayPath(loc.root, io)}${hint}`);
}

/** The memory a key names, read (never written); MissingMemory when there is none. */
export async function inspectKey(key: string, flags: WhereFlags, io: CliIO): Promise<Inspection> {
  const loc = locate(key, flags, io);
  const found = await inspectMemory(loc, { fs: nodeFs, signal: io.signal });
  if (found === null) throw missing(loc, flags, io);
  return found;
}

/** The memory a key names, which must exist and lie inside its root (never reached through a link out of it). */
export async function existing(key: string, flags: WhereFlags, io: CliIO): Promise<MemoryLocation> {
  const loc = locate(key, flags, io);
  try {
    if ((await verifyContainment(loc)) === null) throw missing(loc, flags, io);
  } catch (err) {
    if (err instanceof BindingError) throw new InspectError(err.message);
    throw err;
  }
  return loc;
}

/**
 * Runs a `vvm memory` command: a mistake or a memory that is missing or unreadable is one line on stderr and an
 * exit code, never a stack trace. `doing` is what a file system error stopped: reading, or (the commands that
 * write) changing, so a full disk under `forget --purge` is not said as a memory that cannot be read.
 */
export async function memoryCommand(io: CliIO, body: () => Promise<number>, doing: "read" | "change" = "read"): Promise<number> {
  // a Ctrl-C heard before the command began (while vvm started) has been said by the process's own line
  if (io.signal.aborted) return EXIT.interrupted;
  // from here on a Ctrl-C is said below, in the command's one line (spec/memory.md §13)
  io.ctrlCSaidByCommand?.();
  try {
    const code = await body();
    // a Ctrl-C once the lock was held does not cut the change short (it is completed and reported), but is said
    if (doing === "change" && io.signal.aborted && code !== EXIT.interrupted) {
      io.stderr.write(vvmLine("interrupted: what the command had under way was completed first (a change under the memory's lock is never cut short)"));
      return EXIT.interrupted;
    }
    return code;
  } catch (err) {
    // messages quote keys, paths, lock holders and ledger text, all of which a memory directory decides
    const say = (line: string) => io.stderr.write(vvmLine(line));
    if (err instanceof Interrupted) {
      say("interrupted");
      return EXIT.interrupted;
    }
    if (err instanceof UsageError) {
      say(err.message);
      return EXIT.usage;
    }
    if (err instanceof MissingMemory || err instanceof InspectError || err instanceof ToolError) {
      say(err.message);
      // a Ctrl-C (while waiting for the lock, say) stops the command: an interruption, not a refusal
      return io.signal.aborted ? EXIT.interrupted : EXIT.missing;
    }
    const e = err as NodeJS.ErrnoException | null;
    if (e?.code === NOT_REGULAR) {
      say(`${e.message}; not read (a memory file must be a regular file with one name, never a link)`);
      return EXIT.missing;
    }
    if (e?.code === "ENOTDIR" && e.path) {
      // a --path (or a folder above it) that is a file: named as a run names it
      say(`cannot ${doing} the memory: ${notAFolder(path.dirname(e.path))}`);
      return EXIT.missing;
    }
    if (typeof e?.code === "string") {
      // a file system error (EACCES, EIO, a link refused): said with the file's name only (Node's message, "EACCES:
      // permission denied, open '<whole path>'", is cut to what went wrong)
      const what = /^[A-Z0-9_]+: ([^,\n]+)/.exec(e.message)?.[1];
      say(`cannot ${doing} the memory (${e.code}${what !== undefined ? `: ${what}` : ""}${e.path ? `, ${path.basename(e.path)}` : ""})`);
      return EXIT.missing;
    }
    throw err;
  }
}

/** The options of the commands that write. */
export type WriteFlags = WhereFlags & { lockTimeout: number };

/**
 * Who runs a command that writes, for the ledger's provenance: the USER (or LOGNAME) the environment
 * names, else the account's name; null when neither is known.
 */
function userName(io: CliIO): string | null {
  const named = io.env.USER || io.env.LOGNAME;
  if (named) return named;
  try {
    return os.userInfo().username || null;
  } catch {
    return null; // an account without a name (a container's uid)
  }
}

/** How a command that writes runs: its provenance, the lock timeout, Ctrl-C, and the store's warnings on stderr. */
export function toolOptions(command: string, flags: WriteFlags, io: CliIO): ToolOptions {
  return {
    who: { tool: `vvm memory ${command}`, user: userName(io) },
    lockTimeoutMs: flags.lockTimeout,
    signal: io.signal,
    warn: (m) => io.stderr.write(warningLine(io, m)),
    homeDir: homeDir(io),
  };
}

/** An entry's sequence number on the command line. Throws UsageError. */
export function seqArg(text: string, name: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new UsageError(`${name} ${JSON.stringify(text)}: expected an entry's sequence number (vvm memory history lists them)`);
  return Number(text);
}

/** One JSON document on stdout with --json, the readable text otherwise. */
export function emit(io: CliIO, flags: { json?: boolean }, json: unknown, text: () => string): number {
  // memory holds what models and people wrote: no control sequence of theirs reaches the terminal (JSON
  // escapes C0 itself; C1 and bidi controls, only ever inside its strings, become \u escapes there)
  io.stdout.write(printable(flags.json ? JSON.stringify(json, null, 2) + "\n" : text()));
  return EXIT.ok;
}

/**
 * What an rm killed part-way left, as `ls` and `doctor` name it. The key is quoted as JSON (a key may hold a
 * line break, which must not pass for a line of the listing); the names are an rm's own (removedName: letters,
 * digits, `_`, `-`, `.`), never escaped.
 */
export function cutShort(r: RemovalLeft): string {
  return `an rm of ${r.key === null ? `memory directory ${r.name}` : JSON.stringify(r.key)} was cut short and left ${path.basename(r.path)}`;
}

/** A name only an rm makes, on something no rm made (a link, a file), as `ls` and `doctor` name it. */
export function notAnRmFolder(r: RemovalLeft): string {
  return `${path.basename(r.path)} is named as an rm's leftover but is not a folder, so no rm made it`;
}

/** A time as the ledger writes it, shorter: `2026-01-02 03:04:05Z` (UTC, whatever the machine's zone). */
export function shortTime(iso: string | null | undefined): string {
  if (typeof iso !== "string") return "-";
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z$/.exec(iso);
  return m ? `${m[1]} ${m[2]}Z` : iso;
}

/** `12 B`, `3.4 KB`, `1.2 MB`. */
export function size(bytes: number | null): string {
  if (bytes === null) return "-";
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} KB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/**
 * Rows of cells as aligned columns, one line each (the last column is not padded). A cell is shown with its
 * controls and line breaks escaped and measured as shown: a memory key holding a line break split its row in
 * two (and `vvm memory ls`, which pairs rows with lines, dropped the last memory), and an escaped or wide one
 * pushed the columns after it out of line.
 */
export function columns(rows: string[][], indent = ""): string {
  const shown = rows.map((r) => r.map((c) => printable(c, false)));
  const widths: number[] = [];
  for (const r of shown) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, stringWidth(c))));
  return shown.map((r) => indent + r.map((c, i) => (i === r.length - 1 ? c : c + " ".repeat(widths[i]! - stringWidth(c)))).join("  ") + "\n").join("");
}
