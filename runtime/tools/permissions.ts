// An agent's `permissions` value (usually `perm(...)`) as the tool loop enforces it. Kept free of the glob
// library, so a run whose agents have no file permissions never loads the tools (globs.ts, toolbox.ts).
// Rules: spec/agent-calls.md §8.
import { negatedGlob } from "../negated-glob.ts";
import { thrown, aTypeName, notStringList, type Site, type Value } from "../values.ts";

export type PermissionMode = "allow" | "deny" | "prompt";

/** What a tool needs: read or write globs, bash "allow"/"prompt", or the agent's memory (not fresh). */
export type ToolPermission = "read" | "write" | "bash" | "memory";

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
  if (!(v instanceof Map)) throw thrown(`agent permissions= must be perm(...) or an object of permissions, got ${aTypeName(v)}`, site);
  const out: Permissions = { read: [], write: [], execute: [], bash: "deny", network: "deny" };
  for (const [key, value] of v) {
    if ((GLOB_KEYS as readonly string[]).includes(key)) {
      out[key as (typeof GLOB_KEYS)[number]] = globList(key, value, site);
    } else if ((MODE_KEYS as readonly string[]).includes(key)) {
      if (value === null) continue;
      if (typeof value !== "string" || !MODES.includes(value)) {
        throw thrown(`agent permissions ${key}= must be "allow", "deny" or "prompt", got ${typeof value === "string" ? JSON.stringify(value) : aTypeName(value)}`, site);
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
  const got = notStringList(v);
  if (got !== null) throw thrown(`agent permissions ${key}= must be a list of glob strings, got ${got}`, site);
  for (const g of v as string[]) {
    const problem = globProblem(g);
    if (problem !== null) throw thrown(`agent permissions ${key}=: ${problem}`, site);
  }
  return (v as string[]).filter((g) => g.trim() !== "");
}

/** Longer globs are refused (the glob library itself stops at 64 KiB). */
const MAX_GLOB_CHARS = 4096;

/** A permission glob this runtime will not interpret (the checker reports the same text as W021). */
export function globProblem(g: string): string | null {
  if (negatedGlob(g)) return `the glob ${JSON.stringify(g)} is negated; permission globs list what is allowed, and a negation would allow everything else`;
  if (g.includes("\0")) return `the glob ${JSON.stringify(g)} contains a NUL character`;
  if (g.length > MAX_GLOB_CHARS) return `a glob is ${g.length} characters long (at most ${MAX_GLOB_CHARS})`;
  return null;
}

/** Does the agent get any tools at all? (read or write globs, or bash) */
export function grantsTools(p: Permissions): boolean {
  return p.read.length > 0 || p.write.length > 0 || p.bash !== "deny";
}
