// Permission globs, matched on real paths (spec/agent-calls.md §8), and the path helpers the tools share.
import path from "node:path";
import braces from "braces";
import picomatch from "picomatch";
import { realish, relativeUnder, splitGlob } from "../../src/resolve/glob-prefix.ts";

interface CompiledGlob {
  written: string;
  /** the real path of the glob's fixed prefix (symbolic links in it resolved) */
  base: string;
  /** null: the glob has no wildcard and names exactly `base` */
  match: ((relative: string) => boolean) | null;
  /** the wildcard part names a dot at the start of a name (`.github/**`, `{.env,*.json}`); else it matches no dot name */
  dotNamed: boolean;
}

/**
 * A real folder readable whole: its real path (never resolved again, so a link swapped in on its way later
 * leads nowhere it did not), and how tool descriptions name it (default `<real>/**`).
 */
export type ReadTree = string | { real: string; shown: string };

/**
 * Options shared by permission globs and list_files patterns: as in a shell, `*` and `**` skip dot names. A
 * glob's wildcard rest is matched on its own, where picomatch would read a leading `!` as negating it all
 * (`docs/!*.md` allowed everything under docs/ but `*.md`, dot files too): it is a name's first character,
 * as it is inside the whole glob. (A negated glob, `!secret/**`, is refused before it gets here.) And `[!s]*`
 * is a class of every character but `s`, as in a shell: without `posix`, picomatch reads it as `!` or `s`, so
 * `config/[!s]*` allowed config/secrets.env and nothing else.
 */
export const GLOB_OPTIONS = { dot: false, nonegate: true, posix: true, expandRange: rangeSource } as const;

/**
 * A `{1..12}` range as the regular expression braces makes of it: picomatch alone makes it the class
 * `[1-12]`, which matches 1 and 2 only (and `{2..10}` matched nothing). A stepped range lists its values,
 * so one of more than MAX_ALTERNATIVES (`{1..10000000..2}`, 40 MB of text) matches nothing.
 */
function rangeSource(...args: unknown[]): string {
  const ends = args.filter((a): a is string => typeof a === "string"); // (picomatch passes its options last)
  const [from, to, step] = ends;
  if (step !== undefined && !((rangeSize(from!, to!) - 1) / Math.max(1, Math.abs(Number(step)) || 1) < MAX_ALTERNATIVES)) return "(?!)";
  try {
    return braces(`{${ends.join("..")}}`, { rangeLimit: MAX_ALTERNATIVES })[0] ?? "(?!)";
  } catch {
    return "(?!)";
  }
}

/**
 * Permission globs, matched on real paths. Each glob is split into its fixed prefix and the wildcard rest
 * (picomatch.scan); the prefix is resolved against the program's directory and through any links, and a path
 * matches when it lies under that real prefix and its remainder matches the rest. A remainder never contains
 * `..`, so `**\/../` tricks in a glob match nothing beyond its prefix.
 */
export class GlobSet {
  private constructor(
    readonly written: readonly string[],
    private readonly globs: readonly CompiledGlob[],
  ) {}

  /** `trees`: real folders matched whole (everything under them, dot names aside), however their names read as globs. */
  static async compile(written: readonly string[], root: string, trees: readonly ReadTree[] = []): Promise<GlobSet> {
    const shown = trees.map((t) => (typeof t === "string" ? `${t}/**` : t.shown));
    const globs: CompiledGlob[] = trees.map((t, i) => ({ written: shown[i]!, base: typeof t === "string" ? t : t.real, match: picomatch("**", GLOB_OPTIONS), dotNamed: false }));
    for (const g of written) {
      const { fixed, rest } = splitGlob(g);
      const prefix = path.resolve(root, fixed === "" ? "." : fixed);
      // a prefix that cannot be resolved (a link loop) is no directory: its text, which no real path lies under
      const base = resolvable(prefix) ?? prefix;
      if (rest === null) globs.push({ written: g, base, match: null, dotNamed: false });
      // (only the wildcard part is expanded: a choice such as {docs,../outside} stays under the fixed prefix)
      else for (const alternative of braceAlternatives(rest)) globs.push({ written: g, base, match: picomatch(alternative, GLOB_OPTIONS), dotNamed: DOT_NAMED.test(alternative) });
    }
    return new GlobSet([...shown, ...written], globs);
  }

  get empty(): boolean {
    return this.globs.length === 0;
  }

  /** Does a real, absolute path match one of the globs? */
  matches(real: string): boolean {
    for (const g of this.globs) {
      if (g.match === null) {
        if (real === g.base) return true;
        continue;
      }
      const rel = relativeUnder(g.base, real);
      if (rel !== null && rel !== "" && g.match(rel) && (g.dotNamed ? dotsNamed(g.match, rel) : !hasDotName(rel))) return true;
    }
    return false;
  }

  /** Could a file under this real directory match? (walks skip directories that cannot) */
  mayContain(dir: string): boolean {
    return this.globs.some((g) => relativeUnder(dir, g.base) !== null || (g.match !== null && relativeUnder(g.base, dir) !== null));
  }

  describe(): string {
    return this.written.map((g) => JSON.stringify(g)).join(", ");
  }
}

/**
 * A `.` that starts a name in a glob's wildcard part: first, or after `/`, or opening a `{…}` choice, an
 * extended glob's choice or a class, escaped or not (`.github/**`, `{.env,*.json}`, `@(.env)`, `[.]env`, `\.env*`). As in a shell, a
 * name starting with a dot is matched only where one is named: picomatch's `dot: false` guards its `*`, `?`
 * and `**` but not a choice of them (`config/{*.json,*.env}` allowed config/.env, `+(*)/**` config/.git/…)
 * nor a negated class (`config/[^s]*`).
 */
const DOT_NAMED = /(?:^|[/{,(|[])\\?\./;

/** The most globs one written glob's `{…}` choices expand to; past that it is matched as written. */
const MAX_ALTERNATIVES = 256;

/**
 * A glob's `{…}` choices expanded, each alternative judged on its own: `config/{.env,*.json}` names `.env`, and
 * its `*.json` must still skip dot names (`config/.secret.json`), which the glob matched whole could not tell.
 * A glob whose choices could make more than MAX_ALTERNATIVES (bounded before expanding: each `{` at most
 * multiplies by the commas there are) is matched as written, dot names then allowed wherever it names one.
 */
function braceAlternatives(g: string): string[] {
  const opens = g.split("{").length - 1;
  if (opens === 0) return [g];
  const commas = g.split(",").length - 1;
  if ((commas + 1) ** opens * rangeChoices(g) > MAX_ALTERNATIVES) return [g];
  try {
    // an empty choice (`notes/{a.md,}`) names the folder itself, which no wildcard glob matches (picomatch refuses "")
    return braces(g, { expand: true, keepEscaping: true, rangeLimit: MAX_ALTERNATIVES }).filter((a) => a !== "");
  } catch {
    // a range past braces' own limit (`{1..100000}`)
    return [g];
  }
}

/**
 * Was each dot that starts a name in `rel` matched by a dot the glob names? A glob that names one dot is
 * matched by picomatch, whose `dot: false` does not guard an extended glob's choices or a negated class
 * (`@(.env|*.json)` matched .secret.json, `[^s]*\/.keep` .cache/.keep): a dot a wildcard could stand for is
 * not named, so the path with that dot made a character no glob names (NUL) must match no more.
 */
function dotsNamed(match: (rel: string) => boolean, rel: string): boolean {
  for (let i = rel.indexOf("."); i >= 0; i = rel.indexOf(".", i + 1)) {
    if ((i === 0 || rel[i - 1] === "/") && match(rel.slice(0, i) + "\0" + rel.slice(i + 1))) return false;
  }
  return true;
}

/**
 * How many choices the ranges of a glob (`{1..999}`, `{a..z}`) may multiply its alternatives by, which its
 * commas do not tell (`{1..999}{1..999}` made a million globs, and a few more ranges ran the heap out). A
 * `..` not read as a plain range counts as the most braces then makes of it (its rangeLimit, else it throws).
 */
function rangeChoices(g: string): number {
  let product = 1;
  let measured = 0;
  for (const [, from, to] of g.matchAll(/\{(-?\d+|[^{},.\\])\.\.(-?\d+|[^{},.\\])\}/g)) {
    product *= rangeSize(from!, to!);
    measured++;
  }
  return product * MAX_ALTERNATIVES ** (g.split("..").length - 1 - measured);
}

/** How many values `{from..to}` holds, unstepped: numbers when both ends have digits, else characters by code point. */
function rangeSize(from: string, to: string): number {
  const numbers = /\d/.test(from) && /\d/.test(to);
  return Math.abs(numbers ? Number(to) - Number(from) : to.codePointAt(0)! - from.codePointAt(0)!) + 1;
}

function hasDotName(rel: string): boolean {
  return rel.startsWith(".") || rel.includes("/.");
}

function resolvable(abs: string): string | null {
  try {
    return realish(abs);
  } catch {
    return null;
  }
}
