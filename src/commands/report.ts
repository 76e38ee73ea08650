// Printing diagnostics for `vvm check` and `vvm run`.
import { printable, printableColumns, vvmLine } from "../printable.ts";
import { stat } from "node:fs/promises";
import path from "node:path";
import pc from "picocolors";
import stringWidth from "string-width";
import { sourceLine, type Diagnostic } from "../../grammar/diagnostics.ts";
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

/**
 * `path:line:col: E004 unterminated template literal`, then the source line, a caret under the column and the
 * diagnostic's hint, if it has one. `source` is the text of `d.path` (or null when it cannot be shown).
 */
function formatDiagnostic(d: Diagnostic, source: string | null, color: boolean, displayPath = d.path): string {
  const c = pc.createColors(color);
  const hint = d.hint === undefined ? "" : `\n  ${c.cyan("hint:")} ${d.hint}`;
  return formatLocated(d, source, c, displayPath) + hint;
}

function formatLocated(d: Diagnostic, source: string | null, c: ReturnType<typeof pc.createColors>, displayPath: string): string {
  const tint = d.severity === "error" ? c.red : c.yellow;
  const head = `${c.bold(`${displayPath}:${d.span.line}:${d.span.col}:`)} ${tint(d.code)} ${printable(d.message, false)}`;
  if (source === null) return head;
  const lineText = sourceLine(source, d.span.line);
  if (lineText === null) return head;
  // a source file is untrusted text (a cloned repository): its control characters never reach the terminal
  const shown = printableColumns(lineText.replace(/\t/g, " "));
  // Long lines (generated or minified input) are cut around the column so the caret stays readable.
  const max = 160;
  let start = 0;
  if (shown.length > max) start = Math.max(0, Math.min(d.span.col - 1 - max / 2, shown.length - max));
  const clipped = shown.slice(start, start + max);
  const caretCol = Math.max(0, Math.min(d.span.col - 1 - start, clipped.length));
  const width =
    d.span.endLine === d.span.line ? Math.max(1, Math.min(d.span.endCol - d.span.col, clipped.length - caretCol)) : 1;
  // columns count UTF-16 units; a terminal gives a wide character (CJK, most emoji) two cells and a combining
  // mark none, so the caret is placed by the cells the text before it takes
  const cells = stringWidth(clipped.slice(0, caretCol));
  const under = Math.max(1, stringWidth(clipped.slice(caretCol, caretCol + width)));
  return `${head}\n  ${clipped}\n  ${" ".repeat(cells)}${tint("^" + "~".repeat(under - 1))}`;
}

/**
 * Under `--strict`, warnings count as errors: `--strict: 2 warnings (W032, W051) count as errors`, or null when
 * the program has none.
 */
export function strictRefusal(result: CheckResult): string | null {
  const codes = new Map<string, number>();
  for (const d of result.diagnostics) if (d.severity === "warning") codes.set(d.code, (codes.get(d.code) ?? 0) + 1);
  if (codes.size === 0) return null;
  const n = [...codes.values()].reduce((a, b) => a + b, 0);
  const list = [...codes.keys()].sort().join(", ");
  return n === 1 ? `--strict: 1 warning (${list}) counts as an error` : `--strict: ${n} warnings (${list}) count as errors`;
}

/** Resolve the program path, or say why it cannot be read. */
export async function resolveProgramFile(file: string, io: CliIO): Promise<string | null> {
  if (file.trim() === "") {
    // resolved, an empty name is the working directory: ": not a file" named neither
    io.stderr.write(vvmLine("an empty file name: name the .vvm program"));
    return null;
  }
  const abs = path.resolve(io.cwd, file);
  try {
    const st = await stat(abs);
    if (!st.isFile()) {
      io.stderr.write(vvmLine(`${file}: not a file`));
      return null;
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    io.stderr.write(vvmLine(`${file}: ${code === "ENOENT" ? "no such file" : `cannot read (${code ?? "unknown error"})`}`));
    return null;
  }
  return abs;
}
