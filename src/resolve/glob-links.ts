// W026: a literal `read`/`write` glob whose fixed folders, below the program's folder, go through a
// symbolic link that leads out of it. The call layer resolves a glob's fixed prefix through links
// (spec/agent-calls.md §8), so a cloned repository that ships `out -> ~/.ssh` beside a program granting
// `write: ["out/**"]` would let its agent write into ~/.ssh while the glob reads as a project folder.
import { lstatSync, realpathSync } from "node:fs";
import path from "node:path";
import type { Expr, KwArg } from "../../grammar/ast.ts";
import { literalString, permissionEntries, type ValueProblem } from "./agent-config.ts";
import { realish, relativeUnder, splitGlob } from "./glob-prefix.ts";

/** The literal `read` and `write` globs of a literal `perm(...)` or permissions object, with their expressions. */
function literalGlobs(v: Expr): { mode: string; glob: string; at: Expr }[] {
  const out: { mode: string; glob: string; at: Expr }[] = [];
  for (const { key, value } of permissionEntries(v)) {
    if ((key !== "read" && key !== "write") || value.kind !== "List") continue;
    for (const item of value.items) {
      const glob = literalString(item);
      if (glob !== null) out.push({ mode: key, glob, at: item });
    }
  }
  return out;
}

/** `dir`'s real path, or null when it cannot be resolved (a link loop grants nothing: the call layer finds no folder there). */
function real(dir: string): string | null {
  try {
    return realpathSync.native(dir);
  } catch {
    return null;
  }
}

/** The first link on the way from `root` down `segments`, for the message; any error ends the walk. */
function firstLink(root: string, segments: string[]): string | null {
  let dir = root;
  for (const segment of segments) {
    if (segment === "" || segment === ".") continue;
    dir = path.join(dir, segment);
    try {
      const st = lstatSync(dir, { throwIfNoEntry: false });
      if (st?.isSymbolicLink()) return dir;
      if (st === undefined || !st.isDirectory()) return null;
    } catch {
      return null;
    }
  }
  return null;
}

/** W026 problems of one `permissions=` configuration entry; `programDir` is the folder relative globs are read from. */
export function linkedGlobProblems(kw: KwArg, programDir: string): ValueProblem[] {
  if (kw.name !== "permissions") return [];
  const globs = literalGlobs(kw.value);
  const root = globs.length > 0 ? real(programDir) : null;
  if (root === null) return [];
  const out: ValueProblem[] = [];
  for (const { mode, glob, at } of globs) {
    const { fixed } = splitGlob(glob);
    // an absolute glob says where it leads; one with `..` is refused when the call starts
    if (path.isAbsolute(glob) || glob.split("/").includes("..")) continue;
    // where the call layer resolves the fixed folders; where it cannot (a link loop, an unreadable folder), it
    // grants nothing, so there is nothing to warn about
    let reached: string;
    try {
      reached = realish(path.join(programDir, fixed));
    } catch {
      continue;
    }
    if (relativeUnder(root, reached) !== null) continue;
    const link = firstLink(programDir, fixed.split("/"));
    out.push({
      at,
      message: `${mode} glob "${glob}" goes through ${link === null ? "a symbolic link" : `the symbolic link ${path.relative(programDir, link)}`}, which leads out of the program's folder (to ${reached}): the agent could ${mode} there (spec/agent-calls.md §8)`,
    });
  }
  return out;
}
