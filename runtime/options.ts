// Call-site options (`retry=2, backoff="fixed", timeout="45s", name="x", memory_mode="dry_run"`).
// A bad value is a program mistake: it raises `thrown` at the call site before anything is sent.
import { durationMs } from "./duration.ts";
import { MEMORY_MODES, type MemoryMode } from "./memory-port.ts";
import { thrown, aTypeName, type Site, type Value } from "./values.ts";

/** Agent-call options: the portable ones (spec/language.md §4.1) and `returns` (spec/typed-results.md); the validator warns W050 about any other. */
export const CALL_OPTIONS = ["retry", "backoff", "timeout", "name", "memory_mode", "returns"] as const;
export const BACKOFFS = ["fixed", "exponential"] as const;
export type Backoff = (typeof BACKOFFS)[number];

interface CallOptions {
  /** retries after the first attempt */
  retry: number;
  backoff: Backoff;
  /** per attempt, end to end; null = the layer's default */
  timeoutMs: number | null;
  name: string | null;
  /** as written; null when not given (memory then defaults to "continue") */
  memoryMode: Value;
  /** the `returns=` shape as written (unit: an untyped call); undefined when not given, so the agent's own applies */
  returns: Value | undefined;
}

export function parseCallOptions(options: Map<string, Value>, site: Site): CallOptions {
  const out: CallOptions = { retry: 0, backoff: "exponential", timeoutMs: null, name: null, memoryMode: null, returns: undefined };
  for (const [key, v] of options) {
    switch (key) {
      case "retry":
        if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
          throw thrown(`retry= expects a whole number of at least 0, got ${show(v)}`, site);
        }
        out.retry = v;
        break;
      case "backoff":
        if (!isOneOf(BACKOFFS, v)) throw thrown(`backoff= expects "fixed" or "exponential", got ${show(v)}`, site);
        out.backoff = v;
        break;
      case "timeout": {
        const ms = typeof v === "string" || typeof v === "number" ? durationMs(v) : null;
        if (ms === null) throw thrown(`timeout= expects a duration such as "30s" or "5m", got ${show(v)}`, site);
        out.timeoutMs = ms;
        break;
      }
      case "name":
        if (typeof v !== "string") throw thrown(`name= expects a string, got ${show(v)}`, site);
        out.name = v;
        break;
      case "memory_mode":
        out.memoryMode = v;
        break;
      case "returns":
        // read by the call layer (runtime/calls/typed.ts), which raises on a shape it cannot use
        out.returns = v;
        break;
      default:
        // ignored (spec/language.md §4.1); the validator has already reported it as W050, with its position
        break;
    }
  }
  return out;
}

/** Checked only when the agent has memory: without memory the option is ignored (the validator warns). */
export function checkMemoryMode(v: Value, site: Site): MemoryMode {
  if (v === null) return "continue";
  if (isOneOf(MEMORY_MODES, v)) return v;
  throw thrown(`memory_mode= expects "continue", "dry_run" or "fresh", got ${show(v)}`, site);
}

function isOneOf<T extends string>(list: readonly T[], v: Value): v is T {
  return typeof v === "string" && (list as readonly string[]).includes(v);
}

/** A bad value as a message names it: strings quoted, numbers and booleans as written, anything else by its type. */
export function show(v: Value): string {
  return typeof v === "string" ? JSON.stringify(v) : typeof v === "number" || typeof v === "boolean" ? String(v) : aTypeName(v);
}
