// `vvm run --state filesystem`: the run directory is made before the program starts, and its state.md says
// how the run ended before the exports are printed (spec/state.md).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { displayPath, UsageError, type CliIO } from "../io.ts";
import type { RunOutcome } from "../../runtime/context.ts";
import type { RunDirectory } from "../../runtime/state/run-dir.ts";

export const STATE_MODES = ["in-context", "filesystem"] as const;
export type StateMode = (typeof STATE_MODES)[number];

/** The run directory of a filesystem-mode run, announced on stderr; a directory that cannot be made is a UsageError. */
export async function openRunState(entryPath: string, io: CliIO, warn: (message: string) => void): Promise<RunDirectory> {
  const { RunDirectory, RunDirError } = await import("../../runtime/state/run-dir.ts");
  try {
    const source = await readFile(entryPath, "utf8");
    const run = await RunDirectory.create({ entryPath, source, warn });
    io.stderr.write(`vvm: filesystem state: ${displayPath(run.dir, io)}\n`);
    return run;
  } catch (err) {
    if (err instanceof RunDirError) throw new UsageError(`--state filesystem: ${err.message}`);
    const e = err as NodeJS.ErrnoException;
    throw new UsageError(`--state filesystem: cannot copy ${path.basename(entryPath)} into the run directory (${e.code ?? e.message})`);
  }
}

/** state.md's status and last trace line for how the run ended. */
export async function finishRunState(run: RunDirectory, outcome: RunOutcome): Promise<void> {
  switch (outcome.kind) {
    case "ok":
      return run.finish("completed", `Completed with ${outcome.exports.size} export${outcome.exports.size === 1 ? "" : "s"}`);
    case "raised":
      return run.finish("failed", "Failed: an uncaught error ended the run");
    case "interrupted":
      return run.finish("failed", "Interrupted");
    default: {
      const never: never = outcome;
      return never;
    }
  }
}
