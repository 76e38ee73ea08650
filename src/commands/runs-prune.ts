// `vvm runs prune --keep N | --older-than DURATION`: remove old run directories. A run still marked
// running (or without a state.md yet) is left alone unless its state.md has not changed for a day (a
// killed run is never finished).
import { lstat } from "node:fs/promises";
import path from "node:path";
import { EXIT, projectDir, UsageError, type CliIO } from "../io.ts";
import { idTime, listRuns, NotRemoved, removeRun, type RunSummary } from "../../runtime/state/runs.ts";
import { printable, vvmLine } from "../printable.ts";
import { sinceTime } from "./memory-log.ts";
import { runsCommand, statusOf, type RunsFlags } from "./runs.ts";

export type PruneFlags = RunsFlags & { keep?: number; olderThan?: string; dryRun?: boolean };

/** A run marked running whose state.md is older than this was killed: it may be pruned. */
const STALE_RUNNING_MS = 24 * 3_600_000;

export function runsPrune(flags: PruneFlags, io: CliIO): Promise<number> {
  return runsCommand(io, "change", async () => {
    if ((flags.keep === undefined) === (flags.olderThan === undefined)) throw new UsageError("give --keep N or --older-than DURATION (one of them)");
    const now = Date.now();
    const cutoff = flags.olderThan === undefined ? null : sinceTime(flags.olderThan, now, "--older-than");
    const runs = await listRuns(projectDir(flags.dir, io));
    const changed = new Map<RunSummary, number | null>();
    for (const r of runs) changed.set(r, await stateChanged(r));
    // A run without a readable state.md may have just started (or cannot write it): kept like a running
    // one. An unknown time is never taken for 1970: the run id's time stands in, and failing that it is kept.
    const removable = (r: RunSummary) => {
      if (r.status !== null && r.status !== "running") return true;
      const at = changed.get(r) ?? time(idTime(r.id));
      return at !== null && now - at > STALE_RUNNING_MS;
    };
    const started = (r: RunSummary) => time(r.started) ?? time(idTime(r.id)) ?? changed.get(r) ?? null;
    // oldest first: --keep keeps the newest N, --older-than removes those started before the cutoff
    const doomed = cutoff === null ? runs.slice(0, Math.max(0, runs.length - flags.keep!)) : runs.filter((r) => (started(r) ?? Infinity) < cutoff);
    const chosen = doomed.filter(removable);
    // one run that cannot be removed (a folder not ours to delete) is said and the others still go
    const failed: string[] = [];
    const gone: RunSummary[] = [];
    for (const r of chosen) {
      // a Ctrl-C or SIGTERM, heard while the runs were listed or between two removals, stops the prune there
      if (io.signal.aborted) break;
      if (flags.dryRun) {
        gone.push(r);
        continue;
      }
      try {
        removeRun(r);
        gone.push(r);
      } catch (err) {
        failed.push(err instanceof NotRemoved ? `cannot remove ${r.id}: ${err.message}` : `cannot remove ${r.id} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); it may be partly removed`);
      }
      // the removals are synchronous: let a signal in between two of them
      await new Promise((resolve) => setImmediate(resolve));
    }
    const kept = doomed.length - chosen.length;
    const verb = flags.dryRun ? "would remove" : "removed";
    let out = gone.map((r) => `${verb} ${r.id} (${statusOf(r)})\n`).join("");
    out += `${verb} ${gone.length} run${gone.length === 1 ? "" : "s"}${kept > 0 ? `; kept ${kept} still running (updated in the last 24 hours)` : ""}\n`;
    io.stdout.write(printable(out));
    for (const f of failed) io.stderr.write(vvmLine(f));
    // each run tried was either removed or failed
    const left = chosen.length - gone.length - failed.length;
    if (left > 0) {
      io.stderr.write(vvmLine(`interrupted: ${left} of the ${chosen.length} runs to remove were left as they are`));
      return EXIT.interrupted;
    }
    return failed.length > 0 ? EXIT.missing : EXIT.ok;
  });
}

function time(iso: string | null): number | null {
  const t = iso === null ? NaN : Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** When state.md last changed (the runtime rewrites it as a run goes); null without one. */
async function stateChanged(r: RunSummary): Promise<number | null> {
  try {
    const st = await lstat(path.join(r.dir, "state.md"));
    return st.isFile() ? st.mtimeMs : null;
  } catch {
    return null;
  }
}
