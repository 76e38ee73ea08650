// The CLI's view of the outside world, so commands can be tested in-process.
import path from "node:path";

export interface CliIO {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** whether stderr is a terminal (colours and live progress only then) */
  stderrIsTTY: boolean;
  /** aborted on Ctrl-C */
  signal: AbortSignal;
}

/** Colours only on a TTY, never with NO_COLOR (any value), FORCE_COLOR=0 disables too. */
export function useColor(io: CliIO): boolean {
  if (io.env.NO_COLOR !== undefined) return false;
  if (io.env.FORCE_COLOR === "0") return false;
  return io.stderrIsTTY;
}

/** Paths relative to the working directory when inside it, so editors can open them. */
export function displayPath(p: string, io: CliIO): string {
  if (!path.isAbsolute(p)) return p;
  const rel = path.relative(io.cwd, p);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : p;
}

export const EXIT = {
  ok: 0,
  /** an uncaught raise ended the program */
  raised: 1,
  /** validation errors: nothing ran */
  invalid: 2,
  /** bad command line, missing file */
  usage: 64,
  /** a bug in vvm itself */
  internal: 70,
  /** the exports could not be written to stdout (a full disk, a closed terminal); a reader that left early is not this */
  output: 74,
  /** interrupted (Ctrl-C) */
  interrupted: 130,
} as const;

/** A mistake on the command line or in a file it names (bad --script file, missing key for --provider anthropic). */
export class UsageError extends Error {
  override name = "UsageError";
}
