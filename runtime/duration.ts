// Durations as the spec writes them: "500ms", "30s", "5m", "1h" (a bare number means seconds).
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * The longest timer Node.js runs (2^31-1 ms, about 24.8 days); a longer one would fire at once. Longer
 * durations are held to it, which is still "wait practically forever".
 */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** A duration option value in milliseconds: a duration string or a bare number of seconds; null unless positive. */
export function durationMs(v: string | number): number | null {
  const ms = typeof v === "string" ? parseDuration(v) : Number.isFinite(v) ? Math.min(Math.round(v * 1000), MAX_DURATION_MS) : null;
  return ms !== null && ms > 0 ? ms : null;
}

/** Milliseconds held to MAX_DURATION_MS (a timer's), or null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const ms = exactDuration(text);
  return ms === null ? null : Math.min(ms, MAX_DURATION_MS);
}

/** Milliseconds as written, or null: for a cutoff ("older than 720h"), which no timer's limit bounds. */
export function exactDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) return null;
  const ms = Number(m[1]) * UNITS[m[2] ?? "s"];
  return Number.isFinite(ms) ? Math.round(ms) : null;
}
