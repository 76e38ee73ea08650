// `vvm runs …`: what the subcommands share: the project (whose .vvm/runs holds the runs), finding one run
// by its id, and failures as one line on stderr with an exit code, never a stack trace.
import path from "node:path";
import { EXIT, UsageError, type CliIO } from "../io.ts";
import { findRun, type RunInfo } from "../../runtime/state/runs.ts";
import { printable } from "../printable.ts";

export interface RunsFlags {
  /** the project directory: where the program (and its .vvm/) is; default the current directory */
  dir?: string;
}

/** A run that cannot be found or read: exit 1. */
export class MissingRun extends Error {}

export function projectDir(dir: string | undefined, io: CliIO): string {
  return path.resolve(io.cwd, dir ?? ".");
}

export async function runArg(id: string, flags: RunsFlags, io: CliIO): Promise<RunInfo> {
  const found = await findRun(projectDir(flags.dir, io), id);
  if (typeof found === "string") throw new MissingRun(found);
  return found;
}

export async function runsCommand(io: CliIO, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`vvm: ${err.message}\n`);
      return EXIT.usage;
    }
    if (err instanceof MissingRun) {
      io.stderr.write(`vvm: ${printable(err.message, false)}\n`);
      return EXIT.missing;
    }
    const e = err as NodeJS.ErrnoException | null;
    if (typeof e?.code === "string") {
      io.stderr.write(`vvm: cannot read the runs (${e.code}${e.path ? `, ${path.basename(e.path)}` : ""})\n`);
      return EXIT.missing;
    }
    throw err;
  }
}
