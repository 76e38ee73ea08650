// A model's list_files / search_files pattern, matched one path segment at a time. picomatch compiles a
// whole pattern to one regular expression in which every `**` is a lazy loop over the rest of the path, so
// a failing match tries every split again: `**/a/**/a/**/a/**/a/z` against a path 60 folders deep took
// minutes on the thread that runs everything else. Here each segment is matched alone (by picomatch, so
// `*`, `?`, classes and braces mean what they mean there) and `**` by a table over (pattern segment, path
// segment): at most one match of each pattern segment against each path segment, however many `**`.
// One difference from picomatch: a `**` that ends a pattern matches what is under the folder before it,
// one name or more (picomatch lets `x/**` match a file named `x`, but not `x*/**` one named `xy`).
import picomatch from "picomatch";

/** Segments a pattern may have: a table cell per pattern segment and path segment. */
const MAX_PATTERN_SEGMENTS = 32;

type SegmentTest = ((name: string) => boolean) | "**";

/** `{…}` groups a pattern may have, and choices in one. */
const MAX_BRACE_GROUPS = 2;
const MAX_BRACE_CHOICES = 10;

/**
 * picomatch makes a `{…}` group an alternation: a run of them (`{,?}{,?}…`) backtracks exponentially within
 * one name, so a pattern may have MAX_BRACE_GROUPS groups of at most MAX_BRACE_CHOICES plain choices each
 * (no wildcard, group or `/` inside). Throws RangeError.
 */
function checkBraces(glob: string): void {
  let groups = 0;
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === "\\") {
      i++;
      continue;
    }
    if (glob[i] !== "{") continue;
    const close = glob.indexOf("}", i);
    if (close < 0) continue; // an unclosed brace is text
    const inner = glob.slice(i + 1, close);
    if (++groups > MAX_BRACE_GROUPS) throw new RangeError(`more than ${MAX_BRACE_GROUPS} {…} groups`);
    if (/[/{*?[\\]/.test(inner)) throw new RangeError("a {…} group holding a '/', a wildcard or another group");
    if (inner.split(",").length > MAX_BRACE_CHOICES) throw new RangeError(`a {…} group of more than ${MAX_BRACE_CHOICES} choices`);
    i = close;
  }
}

/**
 * `glob` (a pattern's wildcard part, `/`-separated) as a test of a `/`-separated relative path. A `{…}`
 * group that holds a `/` cannot be split into segments: it throws, like a segment count over the limit.
 */
export function segmentGlob(glob: string, options: picomatch.PicomatchOptions): (rel: string) => boolean {
  if (glob.includes("\\/")) throw new RangeError("an escaped '/' (a name cannot hold one)");
  checkBraces(glob);
  const parts = glob.split("/");
  if (parts.length > MAX_PATTERN_SEGMENTS) throw new RangeError(`more than ${MAX_PATTERN_SEGMENTS} path segments`);
  if (parts.includes("")) throw new RangeError("an empty path segment ('//', or a '/' at the end)");
  const tests: SegmentTest[] = parts.map((p) => (p === "**" ? "**" : picomatch(p, options)));
  // `**` passes over names as picomatch's does: not those starting with a dot unless `dot` is set
  const crossable = (name: string) => options.dot === true || !name.startsWith(".");
  return (rel) => {
    const names = rel.split("/");
    const width = names.length + 1;
    // fits[p * width + s]: pattern segments p.. match names s.. (filled from the end; 1 yes, 0 no)
    const fits = new Uint8Array((tests.length + 1) * width);
    fits[tests.length * width + names.length] = 1;
    for (let p = tests.length - 1; p >= 0; p--) {
      const test = tests[p];
      for (let s = names.length; s >= 0; s--) {
        const here = p * width + s;
        if (test === "**" && p === tests.length - 1) fits[here] = s < names.length && crossable(names[s]) && (s + 1 === names.length || fits[here + 1] === 1) ? 1 : 0;
        else if (test === "**") fits[here] = fits[here + width] || (s < names.length && crossable(names[s]) ? fits[here + 1] : 0);
        else fits[here] = s < names.length && fits[here + width + 1] === 1 && test(names[s]) ? 1 : 0;
      }
    }
    return fits[0] === 1;
  };
}
