// Call-site options (`retry=2, backoff="fixed", timeout="45s", name="x", memory_mode="dry_run"`).
// A bad value is a program mistake: it raises `thrown` at the call site before anything is sent.
import { parseDuration } from "../duration.ts";
import type { MemoryMode } from "../memory-port.ts";
import { thrown, typeName, type Site, type Value } from "../values.ts";

export type Backoff = "fixed" | "exponential";

export interface CallOptions {
  /** retries after the first attempt */
  retry: number;
  backoff: Backoff;
  /** per attempt, end to end; null = the layer's default */
  timeoutMs: number | null;
  name: string | null;
  /** as written; null when not given (memory then defaults to "continue") */
  memoryMode: Value;
}

export function parseCallOptions(options: Map<string, Value>, site: Site): CallOptions {
  const out: CallOptions = { retry: 0, backoff: "exponential", timeoutMs: null, name: null, memoryMode: null };
  for (const [key, v] of options) {
    switch (key) {
      case "retry":
        if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
          throw thrown(`retry= expects a whole number of at least 0, got ${show(v)}`, site);
        }
        out.retry = v;
        break;
      case "backoff":
        if (v !== "fixed" && v !== "exponential") throw thrown(`backoff= expects "fixed" or "exponential", got ${show(v)}`, site);
        out.backoff = v;
        break;
      case "timeout": {
        // A bare number means seconds, as in the duration strings.
        const ms = typeof v === "string" ? parseDuration(v) : typeof v === "number" && Number.isFinite(v) ? Math.round(v * 1000) : null;
        if (ms === null || ms <= 0) throw thrown(`timeout= expects a duration such as "30s" or "5m", got ${show(v)}`, site);
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
      default:
        // ignored (LANGUAGE.md §4); the validator has already reported it as W050, with its position
        break;
    }
  }
  return out;
}

/** Checked only when the agent has memory: without memory the option is ignored (the validator warns). */
export function checkMemoryMode(v: Value, site: Site): MemoryMode {
  if (v === null) return "continue";
  if (v === "continue" || v === "dry_run" || v === "fresh") return v;
  throw thrown(`memory_mode= expects "continue", "dry_run" or "fresh", got ${show(v)}`, site);
}

function show(v: Value): string {
  return typeof v === "string" ? JSON.stringify(v) : typeof v === "number" || typeof v === "boolean" ? String(v) : `a ${typeName(v)}`;
}
