// Shared helpers for the grammar tests.
import { expect } from "vitest";
import type { Program, Span, Stmt } from "../../grammar/ast.ts";
import type { Diagnostic } from "../../grammar/diagnostics.ts";
import { parse } from "../../grammar/index.ts";

/** Drop every span so shapes can be compared with toEqual. */
export function shape(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (key, v: unknown) => (key === "span" || key.endsWith("Span") ? undefined : v)),
  ) as unknown;
}

/** `line:col-endLine:endCol`, compact for assertions. */
export function at(span: Span): string {
  return `${span.line}:${span.col}-${span.endLine}:${span.endCol}`;
}

/** Parse and require a clean result. */
export function ok(source: string): Program {
  const r = parse(source, "t.vvm");
  expect(r.diagnostics.map(brief)).toEqual([]);
  expect(r.program).not.toBeNull();
  return r.program!;
}

export function firstStmt(source: string): Stmt {
  return ok(source).body[0]!;
}

/** `E001 3:5 message` */
export function brief(d: Diagnostic): string {
  return `${d.code} ${d.span.line}:${d.span.col} ${d.message}`;
}

/** Diagnostics as `CODE line:col`. */
export function codes(source: string): string[] {
  return parse(source, "t.vvm").diagnostics.map((d) => `${d.code} ${d.span.line}:${d.span.col}`);
}
