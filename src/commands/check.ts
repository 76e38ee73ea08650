// `vvm check FILE`: exit 0 when valid (warnings printed), 2 on any error.
import { checkProgram } from "../check.ts";
import { hasErrors } from "../../grammar/diagnostics.ts";
import { EXIT, type CliIO } from "../io.ts";
import { printDiagnostics, resolveProgramFile } from "./report.ts";

export async function checkCommand(file: string, io: CliIO): Promise<number> {
  const abs = await resolveProgramFile(file, io);
  if (abs === null) return EXIT.usage;
  const result = await checkProgram(abs);
  if (io.signal.aborted) return EXIT.interrupted; // Ctrl-C during a long check: stop without a verdict
  printDiagnostics(result, io);
  return hasErrors(result.diagnostics) ? EXIT.invalid : EXIT.ok;
}
