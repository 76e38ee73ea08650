// Diagnostic helpers for the resolver tests.
/** `CODE line:col` for each diagnostic of one file (or all files when `file` is omitted). */
export function codesAt(diags: { code: string; path: string; span: { line: number; col: number } }[], file?: string): string[] {
  return diags.filter((d) => file === undefined || d.path === file).map((d) => `${d.code} ${d.span.line}:${d.span.col}`);
}
