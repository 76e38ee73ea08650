// `vvm check FILE`: exit 0 when valid (warnings printed, and the inputs it declares listed), 2 on any error
// (and, with --strict, on any warning).
import { checkProgram } from "../check.ts";
import { hasErrors } from "../../grammar/diagnostics.ts";
import { Interrupted } from "../../runtime/abort.ts";
import type { CheckResult } from "../program.ts";
import { beforeLongSync, EXIT, type CliIO } from "../io.ts";
import { printDiagnostics, resolveProgramFile, strictRefusal } from "./report.ts";
import { describeInputs } from "./inputs.ts";
import { skillsHome } from "./skills-home.ts";

export interface CheckFlags {
  /** warnings are errors: exit 2 when there are any */
  strict?: boolean;
}

/**
 * The program at `abs` checked, for `vvm check` and `vvm run`; null after a Ctrl-C (no verdict). Nothing is held
 * or written while a program is checked: a Ctrl-C during a long parse ends the process at once, and one heard
 * before it (while vvm started, or read the files) stops the check before it begins rather than after it.
 */
export async function checkedProgram(abs: string, io: CliIO): Promise<CheckResult | null> {
  try {
    const result = await checkProgram(abs, { skillsHome: skillsHome(io), longSync: () => beforeLongSync(io) });
    return io.signal.aborted ? null : result;
  } catch (err) {
    if (err instanceof Interrupted) return null;
    throw err;
  }
}

export async function checkCommand(file: string, flags: CheckFlags, io: CliIO): Promise<number> {
  const abs = await resolveProgramFile(file, io);
  if (abs === null) return EXIT.usage;
  const result = await checkedProgram(abs, io);
  if (result === null) return EXIT.interrupted;
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
