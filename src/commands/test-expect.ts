// A test's expectations against its run, in a fixed order; the first that differs is the test's failure,
// said as `where: expected …, got …` (spec/testing.md).
import type { Json, MemoryExpect, TestCase } from "./test-file.ts";
import type { RunResult } from "./test-run.ts";
import { readMemory } from "./test-memory.ts";

/** The first expectation the run does not meet, or null when it meets them all. */
export async function firstFailure(t: TestCase, r: RunResult, signal: AbortSignal): Promise<string | null> {
  const e = t.expect;
  if (r.outcome === null) return `the program did not run (vvm run exit ${r.code}): ${firstMessage(r.stderr)}`;
  if (r.unanswered.length > 0) {
    const more = r.unanswered.length > 1 ? ` (and ${r.unanswered.length - 1} more)` : "";
    return `no script rule answered ${r.unanswered[0]}${more}`;
  }
  const raised = raisedFailure(e.raises, r);
  if (raised !== null) return raised;
  // the program ended well, but vvm run could not print its exports (too large): a failed run, whatever is expected
  if (r.outcome === "ok" && r.exports === null) return `the program ran but vvm run printed no exports (exit ${r.code}): ${firstMessage(r.stderr)}`;
  const exports = r.exports ?? {};
  const errors = errorExportsFailure(t, exports);
  if (errors !== null) return errors;
  if (e.exports !== null) {
    const d = diff(e.exports, exports, "exports", false);
    if (d !== null) return d;
  }
  if (e.exportsSubset !== null) {
    const d = diff(e.exportsSubset, exports, "exports_subset", true);
    if (d !== null) return d;
  }
  for (const [name, re] of e.exportsMatch ?? []) {
    const v = own(exports, name);
    if (v === undefined) return `exports_match.${name}: no such export (exports: ${Object.keys(exports).join(", ") || "none"})`;
    const text = typeof v === "string" ? v : JSON.stringify(v);
    if (!re.test(text)) return `exports_match.${name}: ${String(re)} does not match ${show(v)}`;
  }
  for (const [agent, n] of e.calls ?? []) {
    const got = r.calls.get(agent) ?? 0;
    if (got !== n) return `calls.${agent}: expected ${n}, got ${got}${got === 0 ? ` (calls made: ${callList(r.calls)})` : ""}`;
  }
  if (e.judges !== null && e.judges !== r.judges) return `judges: expected ${e.judges}, got ${r.judges}`;
  for (const m of e.memory) {
    const d = await memoryFailure(m, r, signal);
    if (d !== null) return d;
  }
  return null;
}

function firstMessage(stderr: string): string {
  return stderr.split("\n").find((l) => l.startsWith("vvm: ") || /:\d+:\d+: /.test(l))?.replace(/^vvm: /, "") ?? stderr.trim().split("\n")[0] ?? "";
}

function raisedFailure(want: TestCase["expect"]["raises"], r: RunResult): string | null {
  if (want === null) {
    return r.raised === null ? null : `uncaught error (${r.raised.kind ?? "no kind"}): ${r.raised.message ?? ""}`;
  }
  if (r.raised === null) return `raises: expected an uncaught ${want.kind} error, but the program finished`;
  if (r.raised.kind !== want.kind) return `raises: expected kind ${want.kind}, got ${r.raised.kind ?? "none"} (${r.raised.message ?? ""})`;
  if (want.message !== null && !(r.raised.message ?? "").includes(want.message)) return `raises.message: expected it to contain ${show(want.message)}, got ${show(r.raised.message)}`;
  return null;
}

/** An exported error value fails the test unless an expectation gives it: error_exports, exports or exports_subset. */
function errorExportsFailure(t: TestCase, exports: { [key: string]: Json }): string | null {
  const want = t.expect.errorExports ?? new Map<string, string>();
  for (const [name, kind] of want) {
    const v = own(exports, name);
    if (v === undefined) return `error_exports.${name}: no such export`;
    const got = errorKindOf(v);
    if (got === null) return `error_exports.${name}: expected an error value (${kind}), got ${show(v)}`;
    if (got !== kind) return `error_exports.${name}: expected kind ${kind}, got ${got}`;
  }
  for (const [name, v] of Object.entries(exports)) {
    const kind = errorKindOf(v);
    const covered = want.has(name) || (t.expect.exports !== null && Object.hasOwn(t.expect.exports, name)) || (t.expect.exportsSubset !== null && Object.hasOwn(t.expect.exportsSubset, name));
    if (kind !== null && !covered) return `export ${name} is an error value (${kind}): ${show(errorMessage(v))} (expect it with error_exports)`;
  }
  return null;
}

function errorKindOf(v: Json): string | null {
  const e = isObject(v) ? v.error : undefined;
  if (!isObject(e)) return null;
  return typeof e.kind === "string" ? e.kind : "no kind";
}

function errorMessage(v: Json): Json {
  const e = isObject(v) ? v.error : null;
  return isObject(e) ? (e.message ?? null) : null;
}

async function memoryFailure(m: MemoryExpect, r: RunResult, signal: AbortSignal): Promise<string | null> {
  const at = `memory ${m.scope}:${JSON.stringify(m.key)}`;
  const s = await readMemory(m.scope, m.key, r.roots, signal);
  if (s === null) return `${at}: the run left no such memory`;
  if (m.digestEquals !== null || m.digestContains.length > 0) {
    if (s.digest === null) return `${at}: the digest is unusable`;
    if (m.digestEquals !== null && s.digest.trim() !== m.digestEquals.trim()) return `${at}: digest_equals: expected ${show(m.digestEquals)}, got ${show(s.digest)}`;
    for (const part of m.digestContains) {
      if (!s.digest.includes(part)) return `${at}: digest_contains: ${show(part)} is not in the digest ${show(s.digest)}`;
    }
  }
  if (m.ledger !== null && (m.ledger.length !== s.ledger.length || m.ledger.some((k, i) => s.ledger[i] !== k))) {
    return `${at}: ledger: expected [${m.ledger.join(", ")}], got [${s.ledger.join(", ")}]`;
  }
  for (const part of m.facts) {
    if (!s.facts.some((f) => f.includes(part))) return `${at}: facts: no retained fact contains ${show(part)} (${s.facts.length} retained${s.facts.length > 0 ? `: ${s.facts.map((f) => show(f, 40)).join(", ")}` : ""})`;
  }
  if (m.factCount !== null && m.factCount !== s.facts.length) return `${at}: fact_count: expected ${m.factCount}, got ${s.facts.length}`;
  return null;
}

function callList(calls: Map<string, number>): string {
  return calls.size === 0 ? "none" : [...calls].map(([a, n]) => `${a} ${n}`).join(", ");
}

/** A field of a JSON object, never one it inherits (`constructor`, `toString` are names a program may export). */
function own(o: { [key: string]: Json }, key: string): Json | undefined {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

function isObject(v: Json | undefined): v is { [key: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `exports.triage.category`, or `exports["a b"]` for a key that is not a name. */
function field(at: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
}

/**
 * Where `actual` first differs from `expected`. With `subset`, objects may have fields `expected` does not
 * name (at any depth); lists are compared item by item and must be as long.
 */
export function diff(expected: Json, actual: Json | undefined, at: string, subset: boolean): string | null {
  if (actual === undefined) return `${at}: missing (expected ${show(expected)})`;
  if (isObject(expected)) {
    if (!isObject(actual)) return `${at}: expected ${show(expected)}, got ${show(actual)}`;
    for (const k of Object.keys(expected)) {
      const d = diff(expected[k]!, own(actual, k), field(at, k), subset);
      if (d !== null) return d;
    }
    if (!subset) {
      const extra = Object.keys(actual).find((k) => !Object.hasOwn(expected, k));
      if (extra !== undefined) return `${field(at, extra)}: not expected (got ${show(actual[extra]!)})`;
    }
    return null;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: expected ${show(expected)}, got ${show(actual)}`;
    if (expected.length !== actual.length) return `${at}: expected ${expected.length} item${expected.length === 1 ? "" : "s"}, got ${actual.length}: ${show(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const d = diff(expected[i]!, actual[i], `${at}[${i}]`, subset);
      if (d !== null) return d;
    }
    return null;
  }
  return expected === actual ? null : `${at}: expected ${show(expected)}, got ${show(actual)}`;
}

/** A value as JSON, shortened: a message names a difference, it does not print the whole value. */
export function show(v: Json | undefined, max = 80): string {
  const text = v === undefined ? "nothing" : JSON.stringify(v);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
