// `vvm runs cat RUN-ID NAME|bNNNNNN`: a binding's whole text (by name: the latest binding of that name).
import { EXIT, UsageError, type CliIO } from "../io.ts";
import { readBinding } from "../../runtime/state/runs.ts";
import { printable } from "../printable.ts";
import { MissingRun, runArg, runsCommand, type RunsFlags } from "./runs.ts";

export function runsCat(id: string, binding: string, flags: RunsFlags, io: CliIO): Promise<number> {
  return runsCommand(io, "read", async () => {
    const run = await runArg(id, flags, io);
    // said before it is looked for: "no binding named " ends in nothing a person can see
    if (binding.trim() === "") throw new UsageError(`give a binding's name or id (vvm runs show ${run.id} lists them)`);
    const found = await readBinding(run, binding);
    if (typeof found === "string") throw new MissingRun(found);
    // a model wrote it: printed with its control characters escaped
    io.stdout.write(printable(found.text.endsWith("\n") || found.text === "" ? found.text : found.text + "\n"));
    if (found.others > 0) io.stderr.write(`vvm: ${found.others} earlier binding${found.others === 1 ? "" : "s"} named ${binding} (vvm runs show ${run.id} lists them); this is ${found.binding}\n`);
    return EXIT.ok;
  });
}
