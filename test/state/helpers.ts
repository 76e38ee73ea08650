// A throwaway project with a run directory in it, for the state tests that replace the secret scanner.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RunDirectory } from "../../runtime/state/run-dir.ts";

const dirs: string[] = [];

/** A new project folder holding main.vvm, and a run directory of it; removed by removeRuns(). */
export async function newRun(): Promise<RunDirectory> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "vvm-state-"));
  dirs.push(dir);
  writeFileSync(path.join(dir, "main.vvm"), "export 1\n");
  return RunDirectory.create({ entryPath: path.join(dir, "main.vvm"), source: "export 1\n", warn: () => {} });
}

export function removeRuns(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}
