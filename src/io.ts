// The CLI's view of the outside world, so commands can be tested in-process.
import { statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Interrupted } from "../runtime/abort.ts";
import type { ProgressStyle } from "../runtime/calls/accounting.ts";
import pc from "picocolors";
import { printable } from "./printable.ts";

export interface CliIO {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** whether stderr is a terminal: see useColor and progressStyle */
  stderrIsTTY: boolean;
  /** aborted on Ctrl-C */
  signal: AbortSignal;
  /** standard input (`vvm run --input -`), read only when asked for (the reader decides how much) */
  stdin(): AsyncIterable<Uint8Array>;
  /**
   * Ask a person a question on the terminal and resolve to the line they type (null: Ctrl-C or end of
   * input). Absent when standard input or stderr is not a terminal: nobody is there to answer.
   */
  ask?: (question: string) => Promise<string | null>;
  /**
   * The program has computed for a while without letting the event loop turn, so Ctrl-C cannot stop it
   * cleanly: until the loop turns again, Ctrl-C ends the process at once. Absent in tests (no process to end).
   */
  ctrlCEndsAtOnce?: () => void;
  /**
   * The command stops at once on Ctrl-C and says so itself, in one line (`vvm memory …`): the process's own
   * "interrupted, stopping…" line is left out. Absent in tests (no process).
   */
  ctrlCSaidByCommand?: () => void;
}

/**
 * Colour on stderr. A non-empty NO_COLOR (no-color.org) wins; then a non-empty FORCE_COLOR: 0 or false off,
 * anything else on, even off a terminal (as commander and chalk read it); otherwise only on a terminal
 * that is not TERM=dumb.
 */
export function useColor(io: CliIO): boolean {
  const { NO_COLOR, FORCE_COLOR, TERM } = io.env;
  if (NO_COLOR) return false;
  if (FORCE_COLOR) return FORCE_COLOR !== "0" && FORCE_COLOR !== "false";
  return io.stderrIsTTY && TERM !== "dumb";
}

/** A warning as vvm prints it on stderr: `vvm: warning: `, yellow where colour is on, the message on one line with its controls escaped. */
export function warningLine(io: CliIO, message: string): string {
  return `vvm: ${pc.createColors(useColor(io)).yellow("warning:")} ${printable(message, false)}\n`;
}

/** `--progress`: auto shows it on a terminal only; always also off one (plain lines, for CI logs); never hides it. */
export type ProgressMode = "auto" | "always" | "never";

/**
 * How the progress line is drawn, whatever the colour settings say: redrawn in place on a terminal, plain
 * lines where the cursor cannot move (TERM=dumb, or off a terminal with --progress always), or not at all
 * (off a terminal by default: a log file or pipe gets none; --progress never).
 */
export function progressStyle(io: CliIO, mode: ProgressMode = "auto"): ProgressStyle | null {
  if (mode === "never" || (mode === "auto" && !io.stderrIsTTY)) return null;
  return io.stderrIsTTY && io.env.TERM !== "dumb" ? "live" : "lines";
}

/** The user's home directory (user-scope memories, the recall index key, ~/.vvm/skills): $HOME, else the system's. */
export function homeDir(io: CliIO): string {
  return io.env.HOME || os.homedir();
}

/**
 * The project a command names (`--dir DIR`, `vvm runs ls DIR`), absolute; the working directory when none is
 * named. A name that is not a folder is the command line's mistake (a UsageError, said with `shown` first),
 * never a project that has no runs or memories yet.
 */
export function projectDir(dir: string | undefined, io: CliIO, shown = dir): string {
  const abs = path.resolve(io.cwd, dir ?? ".");
  if (dir === undefined) return abs;
  // an empty name (an unset shell variable) would be the working directory, a project never named
  if (dir.trim() === "") throw new UsageError(`${shown ? `${shown}: ` : ""}an empty folder name: name the project directory, or leave it out for the current one`);
  let isFolder = false;
  try {
    isFolder = statSync(abs).isDirectory();
  } catch {
    // said below
  }
  if (!isFolder) throw new UsageError(`${shown}: no such folder`);
  return abs;
}

/**
 * A path to show a person: relative to the working directory when inside it, so editors can open them, and
 * with its control characters escaped, since a file's name can come from a cloned repository (a module
 * named with ESC or a line break must not reach the terminal raw in a diagnostic or a traceback).
 */
export function displayPath(p: string, io: CliIO): string {
  if (!path.isAbsolute(p)) return printable(p, false);
  const rel = path.relative(io.cwd, p);
  return printable(rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : p, false);
}

export const EXIT = {
  ok: 0,
  /** an uncaught raise ended the program */
  raised: 1,
  /** the program finished, but an exported value is an error value (without --allow-error-exports) */
  errorExport: 1,
  /** --strict-script: a call or judge no script rule answered (error values; the exports are still printed) */
  unscripted: 1,
  /** vvm test: a test failed, or a test file is malformed */
  testFailed: 1,
  /** --max-cost refused a call or judge (the exports are still printed) */
  overBudget: 1,
  /** vvm memory: no such memory, or one that cannot be read */
  missing: 1,
  /** validation errors (or warnings under --strict): nothing ran */
  invalid: 2,
  /** bad command line, missing file */
  usage: 64,
  /** a bug in vvm itself */
  internal: 70,
  /** the operating system refused what vvm needed to go on (no file descriptor left: EMFILE, ENFILE) */
  system: 71,
  /** the exports could not be written to stdout (a full disk, a closed terminal); a reader that left early is not this */
  output: 74,
  /** interrupted (Ctrl-C) */
  interrupted: 130,
  /** stopped by SIGTERM, as cleanly as by Ctrl-C (128 + 15, as a shell reports a process the signal ended) */
  terminated: 143,
} as const;

/** A mistake on the command line or in a file it names (bad --script file, missing key for --provider anthropic). */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Right before a computation that lets the event loop turn only at its end (parsing and checking a huge
 * program, reading a whole ledger), with nothing held or written: a Ctrl-C heard before it stops the command
 * here (Interrupted) rather than after it, and one that comes during it ends the process at once.
 */
export function beforeLongSync(io: CliIO): void {
  if (io.signal.aborted) throw new Interrupted();
  io.ctrlCEndsAtOnce?.();
}
