// Durations as the spec writes them: "500ms", "30s", "5m", "1h" (a bare number means seconds).
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds, or null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) return null;
  const ms = Number(m[1]) * UNITS[m[2] ?? "s"];
  return Number.isFinite(ms) ? Math.round(ms) : null;
}
