// Finding the `.vvm` programs of a folder.
import { readdirSync } from "node:fs";
import path from "node:path";

/**
 * Top-level `.vvm` programs of a directory, sorted (modules in subfolders are not programs, and neither is
 * the `.vvm` memory folder a run of the README's memory example leaves beside them).
 */
export function programsIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /^[^.].*\.vvm$/.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Every `.vvm` file below a directory, modules in subfolders included, sorted. */
export function vvmFilesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".vvm") && !f.split(path.sep).includes(".vvm"))
    .map((f) => path.join(dir, f))
    .sort();
}
