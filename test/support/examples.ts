// The reference programs in ../shared/reference/examples: beside the clone in CI (where every build must
// check and run them), absent from a fresh clone elsewhere, where the tests that use them skip and say so
// in one line.
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./cli.ts";

const declared = path.resolve(ROOT, "../shared/reference/examples");

/** Canonical (realpath) location, so it compares equal to the module paths the loader reports; null when absent. */
export const REFERENCE_EXAMPLES: string | null = existsSync(declared) ? realpathSync(declared) : null;
if (REFERENCE_EXAMPLES === null) console.log(`skipped: the reference examples (${declared} is not there; CI puts ../shared beside the repository)`);

/** The reference examples' folder, in tests that skip when it is absent (`describe.skipIf(!REFERENCE_EXAMPLES)`). */
export function referenceExamples(): string {
  if (REFERENCE_EXAMPLES === null) throw new Error(`reference examples not found at ${declared}`);
  return REFERENCE_EXAMPLES;
}
