// The reference programs in ../shared/reference/examples (beside the clone in CI and on developer machines).
// Tests run them from a temporary copy: running writes `.vvm/` next to the entry file.
import { cpSync, mkdtempSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./cli.ts";

export const REFERENCE_EXAMPLES = path.resolve(ROOT, "../shared/reference/examples");

/** A fresh writable copy of the reference examples; returns its directory. */
export function copyReferenceExamples(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "vvm-ref-"));
  cpSync(REFERENCE_EXAMPLES, dir, { recursive: true });
  return dir;
}

/** Top-level `.vvm` programs of a directory, sorted (modules in subfolders are not programs). */
export function programsIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".vvm"))
    .sort()
    .map((f) => path.join(dir, f));
}
