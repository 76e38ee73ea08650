// `vvm runs show RUN-ID`: a run's status and times, its bindings with their summaries, and its trace.
import { displayPath, EXIT, type CliIO } from "../io.ts";
import { printable } from "../printable.ts";
import { columns, emit, shortTime } from "./memory.ts";
import { runArg, runJson, runsCommand, statusOf, type RunsFlags } from "./runs.ts";

export function runsShow(id: string, flags: RunsFlags, io: CliIO): Promise<number> {
  return runsCommand(io, "read", async () => {
    const run = await runArg(id, flags, io);
    if (flags.json) return emit(io, flags, { ...runJson(run), bindings: run.bindings, trace: run.trace }, () => "");
    let out = `run ${run.id}: ${statusOf(run)}\n`;
    out += `  directory ${displayPath(run.dir, io)}\n  program   ${run.program ?? "-"}\n  started   ${shortTime(run.started)}\n  updated   ${shortTime(run.updated)}\n`;
    out += `bindings (${run.bindings.length}):\n`;
    out += columns(run.bindings.map((b) => [b.binding, b.name, b.summary]), "  ");
    out += `trace:\n${run.trace.map((t) => `  ${t}\n`).join("")}`;
    io.stdout.write(printable(out));
    return EXIT.ok;
  });
}
