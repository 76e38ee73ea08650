// `vvm check FILE`: exit 0 when valid (warnings printed, and the inputs it declares listed), 2 on any error
// (and, with --strict, on any warning).
import { checkProgram } from "../check.ts";
import { hasErrors } from "../../grammar/diagnostics.ts";
import { EXIT, type CliIO } from "../io.ts";
import { printDiagnostics, resolveProgramFile, strictRefusal } from "./report.ts";
import { describeInputs } from "./inputs.ts";
import { skillsHome } from "./skills-home.ts";

export interface CheckFlags {
  /** warnings are errors: exit 2 when there are any */
  strict?: boolean;
}

export async function checkCommand(file: string, flags: CheckFlags, io: CliIO): Promise<number> {
  const abs = await resolveProgramFile(file, io);
  if (abs === null) return EXIT.usage;
  // nothing is held or written while a program is checked: a Ctrl-C in a long check ends it at once
  const result = await checkProgram(abs, { skillsHome: skillsHome(io), longSync: io.ctrlCEndsAtOnce });
  if (io.signal.aborted) return EXIT.interrupted; // Ctrl-C during a long check: stop without a verdict
  printDiagnostics(result, io);
  if (hasErrors(result.diagnostics)) return EXIT.invalid;
  const strict = flags.strict ? strictRefusal(result) : null;
  if (strict !== null) {
    io.stderr.write(`vvm: ${strict}\n`);
    return EXIT.invalid;
  }
  // A valid program's inputs, so its author and its users see what `vvm run` will ask for.
  const inputs = describeInputs(result, file);
  if (inputs !== null) io.stdout.write(inputs);
  return EXIT.ok;
}
