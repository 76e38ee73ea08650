// W026: a literal `read`/`write` glob whose fixed folders, below the program's folder, go through a
// symbolic link that leads out of it. The call layer resolves a glob's fixed prefix through links
// (spec/agent-calls.md §8), so a cloned repository that ships `out -> ~/.ssh` beside a program granting
// `write: ["out/**"]` would let its agent write into ~/.ssh while the glob reads as a project folder.
import { lstatSync, realpathSync } from "node:fs";
import path from "node:path";
import type { Expr, KwArg } from "../../grammar/ast.ts";
import { literalString, type ValueProblem } from "./agent-config.ts";

/** A character that starts a glob's wildcard part (picomatch's and the shell's). */
const WILD = /[*?[\]{}()!+@\\]/;

/** The literal `read` and `write` globs of a literal `perm(...)` or permissions object, with their expressions. */
function literalGlobs(v: Expr): { mode: string; glob: string; at: Expr }[] {
  let entries: { key: string; value: Expr }[];
  if (v.kind === "Call" && v.callee.kind === "Name" && v.callee.name === "perm") entries = v.kwargs.map((k) => ({ key: k.name, value: k.value }));
  else if (v.kind === "Object") entries = v.entries.map((e) => ({ key: e.key, value: e.value }));
  else return [];
  const out: { mode: string; glob: string; at: Expr }[] = [];
  for (const { key, value } of entries) {
    if ((key !== "read" && key !== "write") || value.kind !== "List") continue;
    for (const item of value.items) {
      const glob = literalString(item);
      if (glob !== null) out.push({ mode: key, glob, at: item });
    }
  }
  return out;
}

/** `dir`'s real path, or null when it cannot be resolved. */
function real(dir: string): string | null {
  try {
    return realpathSync.native(dir);
  } catch {
    return null;
  }
}

/** W026 problems of one `permissions=` configuration entry; `programDir` is the folder relative globs are read from. */
export function linkedGlobProblems(kw: KwArg, programDir: string): ValueProblem[] {
  if (kw.name !== "permissions") return [];
  const globs = literalGlobs(kw.value);
  const root = globs.length > 0 ? real(programDir) : null;
  if (root === null) return [];
  const out: ValueProblem[] = [];
  for (const { mode, glob, at } of globs) {
    const fixed = glob.split("/");
    // an absolute glob says where it leads; one with `..` is refused when the call starts
    if (path.isAbsolute(glob) || fixed.includes("..")) continue;
    const end = fixed.findIndex((s) => WILD.test(s));
    let dir = programDir;
    for (const segment of end < 0 ? fixed : fixed.slice(0, end)) {
      if (segment === "" || segment === ".") continue;
      dir = path.join(dir, segment);
      const st = lstatSync(dir, { throwIfNoEntry: false });
      if (st === undefined) break;
      if (!st.isSymbolicLink()) continue;
      const target = real(dir);
      if (target !== null && (target === root || target.startsWith(root + path.sep))) continue;
      const shown = path.relative(programDir, dir);
      out.push({
        at,
        message: `${mode} glob "${glob}" goes through the symbolic link ${shown}, which leads out of the program's folder${target === null ? "" : ` (to ${target})`}: the agent could ${mode} there (spec/agent-calls.md §8)`,
      });
      break;
    }
  }
  return out;
}
