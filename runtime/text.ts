// Text that goes into a model request must be well-formed UTF-16: the Messages API refuses a string with
// half a surrogate pair in it. Cuts (a long line, a preview) must not split a character, and what the
// runtime does not write itself (a program's JSON input may hold "\ud83d") is repaired on the way out.

/** The first `max` UTF-16 units of `s`, or one fewer when the cut would split a surrogate pair. */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  const last = s.charCodeAt(max - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** `s` cut to its first `max` UTF-16 units (between characters) with `…` after, when it is longer. */
export function clipped(s: string, max: number): string {
  return s.length > max ? cutText(s, max) + "…" : s;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether `s` holds half a surrogate pair (which UTF-8 cannot hold, and the Messages API refuses). */
export function hasLoneSurrogate(s: string): boolean {
  LONE_SURROGATE.lastIndex = 0;
  return LONE_SURROGATE.test(s);
}

/**
 * `v` (a request body: plain objects, arrays, strings) with every unpaired surrogate in its strings replaced
 * by U+FFFD. Parts with nothing to repair are returned as they are, so the usual request is not copied.
 */
export function wellFormed<T>(v: T): T {
  if (typeof v === "string") return (hasLoneSurrogate(v) ? v.replace(LONE_SURROGATE, "\uFFFD") : v) as T;
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    v.forEach((x, i) => {
      const y = wellFormed(x);
      if (y !== x) (out ??= [...v])[i] = y;
    });
    return (out ?? v) as T;
  }
  if (typeof v === "object" && v !== null) {
    let out: Record<string, unknown> | null = null;
    for (const [k, x] of Object.entries(v)) {
      const y = wellFormed(x);
      if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y;
    }
    return (out ?? v) as T;
  }
  return v;
}
