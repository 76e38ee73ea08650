// Printing diagnostics for `vvm check` and `vvm run`.
import { stat } from "node:fs/promises";
import path from "node:path";
import { formatDiagnostic } from "../diagnostics.ts";
import type { CheckResult } from "../program.ts";
import { displayPath, useColor, type CliIO } from "../io.ts";

/** Most diagnostics of one code printed per file; a generated program can have 200,000 unused names. */
const MAX_PRINTED_PER_CODE = 50;

export function printDiagnostics(result: CheckResult, io: CliIO): void {
  const color = useColor(io);
  const printed = new Map<string, number>();
  for (const d of result.diagnostics) {
    const id = `${d.path}\0${d.code}`;
    const n = (printed.get(id) ?? 0) + 1;
    printed.set(id, n);
    if (n > MAX_PRINTED_PER_CODE) continue;
    const source = result.sources?.get(d.path) ?? result.modules.get(d.path)?.source ?? null;
    io.stderr.write(formatDiagnostic(d, source, color, displayPath(d.path, io)) + "\n");
  }
  for (const [id, n] of printed) {
    if (n <= MAX_PRINTED_PER_CODE) continue;
    const [file, code] = id.split("\0");
    io.stderr.write(`${displayPath(file!, io)}: ${n - MAX_PRINTED_PER_CODE} more ${code} not shown\n`);
  }
}

/** Resolve the program path, or say why it cannot be read. */
export async function resolveProgramFile(file: string, io: CliIO): Promise<string | null> {
  const abs = path.resolve(io.cwd, file);
  try {
    const st = await stat(abs);
    if (!st.isFile()) {
      io.stderr.write(`vvm: ${file}: not a file\n`);
      return null;
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    io.stderr.write(`vvm: ${file}: ${code === "ENOENT" ? "no such file" : `cannot read (${code ?? "unknown error"})`}\n`);
    return null;
  }
  return abs;
}
