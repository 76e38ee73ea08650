// Golden snapshots (`vvm test --update`): `NAME.test.snap.yaml` beside `NAME.test.yaml` (`.snap.yml` beside
// `.yml`: a pair of test files with one stem keep a snapshot each) holds, per test
// name, the exports and every project and user memory its run left (digest, ledger kinds, retained facts).
// When a test has an entry, each run is compared with it (spec/testing.md).
import { isMap, stringify } from "yaml";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { MAX_SCRIPT_BYTES } from "../../runtime/providers/script.ts";
import { FileRefused, readTextFile } from "../../runtime/text-file.ts";
import { diff } from "./test-expect.ts";
import { parseYaml, TEST_FILE, TestFileError, type Json } from "./test-file.ts";
import type { MemoryState } from "./test-memory.ts";

export interface Snapshot {
  /** null: the run printed no exports (it raised) */
  exports: { [key: string]: Json } | null;
  /** by `scope:key` */
  memory: { [scopeKey: string]: { digest: string | null; ledger: string[]; facts: string[] } };
}

const HEADER = "# Written by `vvm test --update`: the exports and memory each test's run left. Every run of\n# vvm test is compared with it; run --update again to accept a change (spec/testing.md).\n";

/** The snapshot file of a test file; never the test file itself (the caller only passes `*.test.yaml` names). */
export function snapshotFile(testFile: string): string {
  const m = TEST_FILE.exec(testFile);
  if (m === null) throw new Error(`${testFile} is not named like a test file`);
  return `${testFile.slice(0, m.index)}.test.snap.${m[1]}`;
}

export function snapshotOf(exports: Snapshot["exports"], memories: MemoryState[]): Snapshot {
  const memory: Snapshot["memory"] = {};
  for (const m of memories) memory[`${m.scope}:${m.key}`] = { digest: m.digest, ledger: m.ledger, facts: m.facts };
  return { exports, memory };
}

/** The snapshots of a test file by test name; none when it has no snapshot file. */
export async function readSnapshots(file: string, shown: string): Promise<Map<string, Snapshot>> {
  let text: string;
  try {
    text = readTextFile(file, MAX_SCRIPT_BYTES);
  } catch (err) {
    if (err instanceof FileRefused && err.code === "ENOENT") return new Map();
    if (err instanceof FileRefused) throw new TestFileError(`${shown}: ${err.message} (run vvm test --update to write it again)`);
    throw err;
  }
  const { doc } = parseYaml(text, shown, " (run vvm test --update to write it again)");
  const bad = (what: string): never => {
    throw new TestFileError(`${shown}: ${what} (run vvm test --update to write it again)`);
  };
  if (!isMap(doc.contents)) bad('expected an object with "tests"');
  const tests = (doc.toJSON() as { tests?: unknown }).tests;
  if (typeof tests !== "object" || tests === null || Array.isArray(tests)) return bad('expected "tests", an object of snapshots by test name');
  const out = new Map<string, Snapshot>();
  for (const [name, s] of Object.entries(tests as Record<string, unknown>)) {
    const snap = s as Partial<Snapshot> | null;
    if (typeof snap !== "object" || snap === null || !("exports" in snap) || typeof snap.memory !== "object" || snap.memory === null) bad(`test ${JSON.stringify(name)}: expected { exports, memory }`);
    out.set(name, snap as Snapshot);
  }
  return out;
}

/**
 * Writes the snapshots (by test name, in the order given), replacing the file whole: through a fresh temporary
 * file (never a link planted where one would go), and never over a link or anything but a regular file.
 */
export async function writeSnapshots(file: string, snapshots: Map<string, Snapshot>): Promise<void> {
  // fromEntries defines each name as a field, `__proto__` included (an assignment would set the prototype)
  const tests: Record<string, Snapshot> = Object.fromEntries(snapshots);
  await nodeFs.writeAtomic(file, HEADER + stringify({ tests }, { lineWidth: 0 }));
}

/** Where a run differs from its snapshot, or null. */
export function snapshotDiff(want: Snapshot, got: Snapshot): string | null {
  return diff(want as unknown as Json, got as unknown as Json, "snapshot", false);
}
