// `vvm runs …`: what the subcommands share: the project (whose .vvm/runs holds the runs), finding one run
// by its id, and failures as one line on stderr with an exit code, never a stack trace.
import path from "node:path";
import { beforeLongSync, EXIT, projectDir, UsageError, type CliIO } from "../io.ts";
import { Interrupted } from "../../runtime/abort.ts";
import { findRun, type RunInfo, type RunSummary } from "../../runtime/state/runs.ts";
import { vvmLine } from "../printable.ts";

export interface RunsFlags {
  /** the project directory: where the program (and its .vvm/) is; default the current directory */
  dir?: string;
  /** one JSON document on stdout (ls, show) */
  json?: boolean;
}

/** A run as `--json` gives it: state.md's header as read (null where it says nothing), and where the run is. */
export function runJson(r: RunSummary) {
  return { id: r.id, dir: r.dir, status: r.status, state_md: r.stateRead, program: r.program, started: r.started, updated: r.updated, bindings: r.bindingCount };
}

/** A run's status as state.md says, or why there is none to say. */
export const statusOf = (r: RunSummary): string => r.status ?? (r.stateRead ? "no Status line in state.md" : "no readable state.md");

/** A run that cannot be found or read: exit 1. */
export class MissingRun extends Error {}

export async function runArg(id: string, flags: RunsFlags, io: CliIO): Promise<RunInfo> {
  // an empty prefix would name every run
  if (id.trim() === "") throw new UsageError("give a run id, or the start of one (vvm runs ls lists them)");
  const found = await findRun(projectDir(flags.dir, io), id);
  if (typeof found === "string") throw new MissingRun(found);
  return found;
}

/**
 * Runs a `vvm runs` command. `doing`: "read" for ls, show and cat, which read and print without a turn of the
 * event loop, so a Ctrl-C that came before stops them and one during them ends them at once (beforeLongSync);
 * "change" for prune, which hears a Ctrl-C between two removals itself.
 */
export async function runsCommand(io: CliIO, doing: "read" | "change", body: () => Promise<number>): Promise<number> {
  try {
    if (doing === "read") beforeLongSync(io);
    return await body();
  } catch (err) {
    // a Ctrl-C before a command that only reads: the process's own line has said it
    if (err instanceof Interrupted) return EXIT.interrupted;
    if (err instanceof UsageError) {
      io.stderr.write(vvmLine(err.message));
      return EXIT.usage;
    }
    if (err instanceof MissingRun) {
      io.stderr.write(vvmLine(err.message));
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
