// Diagnostics as data, shared by the lexer, parser, checker and CLI (the CLI formats them:
// src/commands/report.ts).
import type { Span } from "./ast.ts";

/** Every code upstream's spec defines (spec/language.md §16) plus the project's own additions (see spec/diagnostics.md). */
export const CODES = {
  E001: "syntax error",
  E002: "indentation error",
  E003: "unterminated string",
  E004: "unterminated template literal",
  E005: "unknown string escape",
  E010: "reserved word used as a name",
  E020: "duplicate agent",
  E021: "duplicate function",
  /** project addition: an input declared twice or named like a function or value import (spec/inputs.md) */
  E022: "duplicate input",
  /** project addition: an input declared in an imported module (spec/inputs.md) */
  E023: "input in an imported module",
  E030: "empty skill name or source",
  E031: "duplicate skill import in a module",
  E032: "conflicting skill sources across modules",
  E040: "unknown agent",
  E041: "computed declaration value",
  E050: "invalid case pattern",
  E051: "unknown placeholder name",
  E052: "malformed placeholder",
  E060: "assignment to it",
  E070: "constrain on an unbound name",
  E080: "return outside def",
  E081: "break/continue outside a loop",
  E082: "try without except or finally",
  E090: "unresolved module or export",
  W001: "unknown skill source form",
  W010: "agent uses a skill not imported in its module",
  W011: "empty skills list",
  W020: "unknown agent configuration key",
  /** project addition: a literal configuration value of the wrong shape (spec/diagnostics.md) */
  W021: "invalid agent configuration value",
  /** project addition: an agent configuration key given twice (spec/diagnostics.md) */
  W022: "repeated agent configuration key",
  /** project addition: a permission or skill this runtime does not grant yet (spec/diagnostics.md) */
  W023: "permission or skill not granted by this runtime",
  /** project addition: execute globs beside bash, which a shell can bypass (spec/diagnostics.md) */
  W024: "execute globs not enforceable with bash",
  /** project addition: an imported skill whose SKILL.md cannot be loaded (spec/diagnostics.md) */
  W025: "skill cannot be loaded",
  W026: "permission glob leads out through a link",
  W030: "unused variable",
  W031: "exported value never assigned",
  /** project addition: a name nothing binds (spec/diagnostics.md) */
  W032: "unknown name",
  /** project addition: a function's local read before the function gives it a value (spec/diagnostics.md) */
  W033: "local read before assignment",
  /** project addition: pmap'd function continues a memory shared by every item (spec/diagnostics.md) */
  W040: "pmap over a shared memory key",
  /** project addition: agent-call option the runtime ignores (spec/diagnostics.md) */
  W050: "unknown agent-call option",
  /** project addition: literal agent-call option value the runtime cannot use (spec/diagnostics.md) */
  W051: "invalid agent-call option value",
  /** project addition: an agent call given more than one input, which raises whenever it runs (spec/diagnostics.md) */
  W052: "agent call with several inputs",
  /** project addition: pack(...) positional argument that is not a plain name (spec/diagnostics.md) */
  W060: "pack argument is not a plain name",
  /** project addition: an operator over literals that raises whenever it runs (spec/diagnostics.md) */
  W061: "operator over literals always raises",
  /** project addition: a call of a def whose arguments do not fit its parameters (spec/diagnostics.md) */
  W062: "arguments do not fit the function",
  /** project addition: a literal returns= shape the runtime cannot use (spec/typed-results.md) */
  W070: "invalid returns= shape",
  /** project addition: a malformed JSON Schema in a returns= escape hatch (spec/typed-results.md) */
  W071: "invalid JSON Schema in returns=",
} as const;

export type Code = keyof typeof CODES;
export type Severity = "error" | "warning";

export interface Diagnostic {
  code: Code;
  severity: Severity;
  message: string;
  /** path of the file the diagnostic is about */
  path: string;
  span: Span;
  /** a way out, when the fix is obvious (printed under the caret as `hint: …`) */
  hint?: string;
}

function severityOf(code: Code): Severity {
  return code.startsWith("W") ? "warning" : "error";
}

export function diagnostic(code: Code, message: string, path: string, span: Span, hint?: string): Diagnostic {
  const d: Diagnostic = { code, severity: severityOf(code), message, path, span };
  if (hint !== undefined) d.hint = hint;
  return d;
}

/** Reporting stops after this many lexical errors, syntax errors, or diagnostics of any one code. */
export const MAX_ERRORS = 50;

/**
 * The first MAX_ERRORS diagnostics of each code, in the order given. Past that a code's diagnostics are dropped
 * as they come (a file can hold millions of one mistake), and `wants` lets a caller skip building them.
 */
export class CappedDiagnostics {
  readonly kept: Diagnostic[] = [];
  private readonly counts = new Map<Code, number>();

  wants(code: Code): boolean {
    return (this.counts.get(code) ?? 0) < MAX_ERRORS;
  }

  push(d: Diagnostic): void {
    const n = this.counts.get(d.code) ?? 0;
    if (n >= MAX_ERRORS) return;
    this.counts.set(d.code, n + 1);
    this.kept.push(d);
  }
}

export function hasErrors(diags: readonly Diagnostic[]): boolean {
  return diags.some((d) => d.severity === "error");
}

/** Stable order: by file, then position, then code. */
export function sortDiagnostics(diags: Diagnostic[]): Diagnostic[] {
  return diags.sort(
    (a, b) =>
      a.path.localeCompare(b.path) ||
      a.span.line - b.span.line ||
      a.span.col - b.span.col ||
      a.code.localeCompare(b.code),
  );
}

// Line starts of the last source seen: printing many diagnostics of one big file must not rescan it each time.
let indexedSource: string | null = null;
let lineStarts: number[] = [];

/**
 * Text of a 1-based line, without its line end. Lines end at LF, CRLF or a lone CR, as the parser
 * counts them, so spans index the same lines here as in the parser.
 */
export function sourceLine(source: string, line: number): string | null {
  if (source !== indexedSource) {
    lineStarts = [0];
    for (let i = 0; i < source.length; i++) {
      const c = source.charCodeAt(i);
      if (c === 13 && source.charCodeAt(i + 1) === 10) i++;
      if (c === 10 || c === 13) lineStarts.push(i + 1);
    }
    indexedSource = source;
  }
  if (line < 1 || line > lineStarts.length) return null;
  const start = lineStarts[line - 1]!;
  const end = line < lineStarts.length ? lineStarts[line]! : source.length;
  return source.slice(start, end).replace(/\r?\n$|\r$/, "");
}
