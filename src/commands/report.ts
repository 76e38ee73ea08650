// Printing diagnostics for `vvm check` and `vvm run`.
import { stat } from "node:fs/promises";
import path from "node:path";
import { formatDiagnostic } from "../diagnostics.ts";
import type { CheckResult } from "../program.ts";
import { useColor, type CliIO } from "../io.ts";

export function printDiagnostics(result: CheckResult, io: CliIO): void {
  const color = useColor(io);
  for (const d of result.diagnostics) {
    const source = result.sources?.get(d.path) ?? result.modules.get(d.path)?.source ?? null;
    io.stderr.write(formatDiagnostic(d, source, color, displayPath(d.path, io)) + "\n");
  }
}

/** Paths relative to the working directory when inside it, so editors can open them. */
export function displayPath(p: string, io: CliIO): string {
  if (!path.isAbsolute(p)) return p;
  const rel = path.relative(io.cwd, p);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : p;
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
