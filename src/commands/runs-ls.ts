// `vvm runs ls [DIR]` (or --dir DIR): the filesystem-state runs of a project, oldest first: id, status, start, bindings, program.
import { displayPath, EXIT, projectDir, UsageError, type CliIO } from "../io.ts";
import { lstatSync } from "node:fs";
import path from "node:path";
import { listRuns, runsRoot } from "../../runtime/state/runs.ts";
import { RUNS_DIR } from "../../runtime/state/run-dir.ts";
import { printable } from "../printable.ts";
import { columns, emit, shortTime } from "./memory.ts";
import { runJson, runsCommand, statusOf, type RunsFlags } from "./runs.ts";

/** `vvm runs ls [DIR]`: the folder as an argument, or as --dir like the other `vvm runs` commands, not both. */
export function runsLs(dir: string | undefined, flags: RunsFlags, io: CliIO): Promise<number> {
  return runsCommand(io, "read", async () => {
    if (dir !== undefined && flags.dir !== undefined) throw new UsageError(`give the project directory once: ${dir} or --dir ${flags.dir}`);
    const project = projectDir(flags.dir ?? dir, io);
    const runs = await listRuns(project);
    const root = runsRoot(project);
    if (flags.json) return emit(io, flags, { root, runs: runs.map((r) => runJson(r)) }, () => "");
    if (runs.length === 0) {
      const odd = root === null ? notAFolder(project) : null;
      // a link is never followed into: said, so an empty list is not taken for the runs behind it
      if (odd !== null) io.stdout.write(`no runs: ${displayPath(odd.path, io)} is ${odd.link ? "a symbolic link, which vvm does not follow" : "not a folder"}\n`);
      else io.stdout.write(`no runs in ${displayPath(root ?? project, io)} (vvm run --state filesystem makes them)\n`);
      return EXIT.ok;
    }
    const rows = runs.map((r) => [r.id, r.status ?? `(${statusOf(r)})`, shortTime(r.started), `${r.bindingCount} binding${r.bindingCount === 1 ? "" : "s"}`, r.program ?? "-"]);
    // state.md is a file anyone can edit: nothing in it reaches the terminal raw
    io.stdout.write(printable(`${runs.length} run${runs.length === 1 ? "" : "s"} in ${displayPath(root!, io)}\n${columns(rows, "  ")}`));
    return EXIT.ok;
  });
}

/** `.vvm` or `.vvm/runs` when it is there but no folder of its own (a symbolic link, a file), else null. */
function notAFolder(project: string): { path: string; link: boolean } | null {
  for (const p of [path.dirname(RUNS_DIR), RUNS_DIR].map((r) => path.join(project, r))) {
    try {
      const st = lstatSync(p);
      if (!st.isDirectory()) return { path: p, link: st.isSymbolicLink() };
    } catch {
      return null;
    }
  }
  return null;
}
