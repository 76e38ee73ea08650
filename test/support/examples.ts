// The reference programs in ../shared/reference/examples (beside the clone in CI and on developer machines).
// Tests run them from a temporary copy: running writes `.vvm/` next to the entry file.
import { cpSync, existsSync, mkdtempSync, readdirSync, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./cli.ts";

const declared = path.resolve(ROOT, "../shared/reference/examples");
if (!existsSync(declared)) {
  // Every build must check and run these programs: a missing folder is a broken workspace, not a reason to skip.
  throw new Error(`reference examples not found at ${declared} (shared/ must sit beside the repository)`);
}
/** Canonical (realpath) location, so it compares equal to the module paths the loader reports. */
export const REFERENCE_EXAMPLES = realpathSync(declared);

/** A fresh writable copy of the reference examples (without any `.vvm/` state); returns its directory. */
export function copyReferenceExamples(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "vvm-ref-"));
  cpSync(REFERENCE_EXAMPLES, dir, { recursive: true, filter: (src) => path.basename(src) !== ".vvm" });
  return dir;
}

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
