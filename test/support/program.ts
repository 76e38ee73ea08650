// Programs written to a temporary directory for one test (tests never write inside the repository).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export interface TmpProgram {
  dir: string;
  /** absolute path of a file in the program */
  file(rel: string): string;
  cleanup(): void;
}

/** Directories their test did not clean up: `test/support/setup.ts` removes them after each test file. */
const leftover = new Set<string>();

export function removeLeftoverPrograms(): void {
  for (const dir of leftover) rmSync(dir, { recursive: true, force: true });
  leftover.clear();
}

export function writeProgram(files: Record<string, string | Uint8Array>): TmpProgram {
  const dir = mkdtempSync(path.join(tmpdir(), "vvm-test-"));
  leftover.add(dir);
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
  return {
    dir,
    file: (rel) => path.join(dir, rel),
    cleanup: () => {
      rmSync(dir, { recursive: true, force: true });
      leftover.delete(dir);
    },
  };
}

/** A one-file program; returns the path of its `main.vvm`. */
export function programFile(source: string): string {
  return writeProgram({ "main.vvm": source }).file("main.vvm");
}
