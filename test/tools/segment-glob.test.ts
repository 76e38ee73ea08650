// A model's pattern matched segment by segment means what picomatch's whole-path match means.
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import { segmentGlob } from "../../runtime/tools/segment-glob.ts";

describe("segmentGlob", () => {
  it("agrees with picomatch on random patterns and paths, dot names and empty '**' steps included", () => {
    const segments = ["**", "*", "a", "b", "a*", "*b", "?", "[ab]", "{a,b}", "*.md", ".x", "a?b", "*a*"];
    const names = ["a", "b", "ab", "aab", "x.md", ".x", ".hidden", "a.b", "ba", "c"];
    let seed = 12345;
    const pick = <T>(xs: T[]): T => xs[(seed = (seed * 1103515245 + 12345) % 2147483648) % xs.length];
    const differ: string[] = [];
    for (const dot of [false, true]) {
      const options = { dot, noextglob: true };
      for (let i = 0; i < 4000; i++) {
        const glob = Array.from({ length: 1 + (i % 4) }, () => pick(segments)).join("/");
        const rel = Array.from({ length: 1 + (i % 5) }, () => pick(names)).join("/");
        // (a closing `**` is checked below: there picomatch is not consistent with itself)
        if (glob.endsWith("**")) continue;
        let mine: (rel: string) => boolean;
        try {
          mine = segmentGlob(glob, options);
        } catch {
          continue; // refused (too many {…} groups)
        }
        if (picomatch(glob, options)(rel) !== mine(rel)) differ.push(`${glob} ${rel} dot=${dot}`);
      }
    }
    expect(differ).toEqual([]);
  });

  it("a closing '**' matches what is under the folder before it, never a file of that name", () => {
    const under = (glob: string, rel: string) => segmentGlob(glob, { dot: false })(rel);
    expect(["a/b", "a/b/c", "ab/c"].map((rel) => under("a*/**", rel))).toEqual([true, true, true]);
    expect([under("a/**", "a"), under("a*/**", "ab"), under("*/x/**", "d/x")]).toEqual([false, false, false]);
    expect([under("**", "a"), under("**", "a/b"), under("**", ".a"), under("a/**", "a/.b")]).toEqual([true, true, false, false]);
    expect(segmentGlob("a/**", { dot: true })("a/.b")).toBe(true);
  });
});
