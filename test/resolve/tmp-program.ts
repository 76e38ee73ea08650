// Programs written to a temporary directory for one test (tests never write inside the repository).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export interface TmpProgram {
  dir: string;
  /** absolute path of a file in the program */
  file(rel: string): string;
  cleanup(): void;
}

export function writeProgram(files: Record<string, string | Uint8Array>): TmpProgram {
  const dir = mkdtempSync(path.join(tmpdir(), "vvm-resolve-"));
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
  return {
    dir,
    file: (rel) => path.join(dir, rel),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** `CODE line:col` for each diagnostic of one file (or all files when `file` is omitted). */
export function codesAt(diags: { code: string; path: string; span: { line: number; col: number } }[], file?: string): string[] {
  return diags.filter((d) => file === undefined || d.path === file).map((d) => `${d.code} ${d.span.line}:${d.span.col}`);
}
