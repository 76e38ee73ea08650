// An agent's `permissions` value (usually `perm(...)`) as the tool loop enforces it, and the glob sets
// that decide which real paths a tool may touch. Rules: spec/agent-calls.md §8.
import { promises as fs } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { thrown, typeName, type Site, type Value } from "../values.ts";

export type PermissionMode = "allow" | "deny" | "prompt";

export interface Permissions {
  read: string[];
  write: string[];
  execute: string[];
  bash: PermissionMode;
  network: PermissionMode;
}

/** Everything denied: an agent without `permissions`. */
export const NO_PERMISSIONS: Permissions = Object.freeze({ read: [], write: [], execute: [], bash: "deny", network: "deny" }) as Permissions;

const GLOB_KEYS = ["read", "write", "execute"] as const;
const MODE_KEYS = ["bash", "network"] as const;
const MODES: readonly string[] = ["allow", "deny", "prompt"];

/**
 * The agent's `permissions` configuration: unit or absent is everything denied; an object (what `perm(...)`
 * returns, or a literal object with the same keys) is read strictly, since a permission the runtime
 * misread would be a permission silently granted or dropped. A malformed value raises `thrown` at the call.
 */
export function parsePermissions(v: Value | undefined, site: Site): Permissions {
  if (v === undefined || v === null) return NO_PERMISSIONS;
  if (!(v instanceof Map)) throw thrown(`agent permissions= must be perm(...) or an object of permissions, got a ${typeName(v)}`, site);
  const out: Permissions = { read: [], write: [], execute: [], bash: "deny", network: "deny" };
  for (const [key, value] of v) {
    if ((GLOB_KEYS as readonly string[]).includes(key)) {
      out[key as (typeof GLOB_KEYS)[number]] = globList(key, value, site);
    } else if ((MODE_KEYS as readonly string[]).includes(key)) {
      if (value === null) continue;
      if (typeof value !== "string" || !MODES.includes(value)) {
        throw thrown(`agent permissions ${key}= must be "allow", "deny" or "prompt", got ${typeof value === "string" ? JSON.stringify(value) : `a ${typeName(value)}`}`, site);
      }
      out[key as (typeof MODE_KEYS)[number]] = value as PermissionMode;
    } else {
      throw thrown(`agent permissions has an unknown key '${key}' (expected ${[...GLOB_KEYS, ...MODE_KEYS].join(", ")})`, site);
    }
  }
  return out;
}

function globList(key: string, v: Value, site: Site): string[] {
  if (v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
    throw thrown(`agent permissions ${key}= must be a list of glob strings, got a ${typeName(v)}`, site);
  }
  for (const g of v as string[]) {
    const problem = globProblem(g);
    if (problem !== null) throw thrown(`agent permissions ${key}=: ${problem}`, site);
  }
  return (v as string[]).filter((g) => g.trim() !== "");
}

/** A permission glob this runtime will not interpret (the checker reports the same text as W021). */
export function globProblem(g: string): string | null {
  if (g.startsWith("!")) return `the glob ${JSON.stringify(g)} is negated; permission globs list what is allowed, and a negation would allow everything else`;
  if (g.includes("\0")) return `the glob ${JSON.stringify(g)} contains a NUL character`;
  return null;
}

interface CompiledGlob {
  written: string;
  /** the real path of the glob's fixed prefix (symbolic links in it resolved) */
  base: string;
  /** null: the glob has no wildcard and names exactly `base` */
  match: ((relative: string) => boolean) | null;
}

/** Options shared by permission globs and list_files patterns: as in a shell, `*` and `**` skip dot names. */
export const GLOB_OPTIONS = { dot: false } as const;

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

  static async compile(written: readonly string[], root: string): Promise<GlobSet> {
    const globs: CompiledGlob[] = [];
    for (const g of written) {
      const scan = picomatch.scan(g);
      const fixed = scan.isGlob ? scan.base : unescapeGlob(g);
      const base = await realish(path.resolve(root, fixed === "" ? "." : fixed));
      globs.push({ written: g, base, match: scan.isGlob ? picomatch(scan.glob, GLOB_OPTIONS) : null });
    }
    return new GlobSet(written, globs);
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
      if (rel !== null && rel !== "" && g.match(rel)) return true;
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

/** `p` relative to `dir` when `p` is `dir` or inside it ("" for `dir` itself), else null. Posix paths. */
export function relativeUnder(dir: string, p: string): string | null {
  if (p === dir) return "";
  const prefix = dir.endsWith("/") ? dir : dir + "/";
  return p.startsWith(prefix) ? p.slice(prefix.length) : null;
}

/**
 * The real path of `abs` as far as it exists: links in its existing part resolved, the missing rest appended
 * as written. (A path that does not exist yet still has a definite real location: where it would be created.)
 */
export async function realish(abs: string): Promise<string> {
  try {
    return await fs.realpath(abs);
  } catch {
    const parent = path.dirname(abs);
    if (parent === abs) return abs;
    return path.join(await realish(parent), path.basename(abs));
  }
}

/** A glob without wildcards may still escape characters (`a\*b`): the file name is the text without the escapes. */
function unescapeGlob(g: string): string {
  return g.replace(/\\(.)/g, "$1");
}
