// `vvm test [PATH…]`: run the tests of `*.test.yaml` files (spec/testing.md), one line per test on stdout,
// ending with `N passed, N failed`; exit 1 when a test failed or a test file is malformed.
import { readdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { printable, vvmLine } from "../printable.ts";
import { displayPath, EXIT, type CliIO } from "../io.ts";
import { loadTestFile, TEST_FILE, TestFileError, type TestCase, type TestFile } from "./test-file.ts";
import { firstFailure } from "./test-expect.ts";
import { allMemories } from "./test-memory.ts";
import { runTest, TestSetupError } from "./test-run.ts";
import { readSnapshots, snapshotDiff, snapshotFile, snapshotOf, writeSnapshots, type Snapshot } from "./test-snapshot.ts";

export interface TestFlags {
  /** write each passing test's exports and memory as its snapshot */
  update?: boolean;
  /** let the bash tool run the commands a test's script asks for (as you, in the test's copy) */
  allowBash?: boolean;
}

/** Folders a search never enters: state, version control, dependencies. */
const NOT_SEARCHED = new Set([".vvm", ".git", "node_modules"]);

export async function testCommand(paths: string[], flags: TestFlags, io: CliIO): Promise<number> {
  const files: string[] = [];
  for (const p of paths.length > 0 ? paths : ["."]) {
    if (p.trim() === "") {
      // an unset shell variable: resolved, it would be the working directory, and run every test under it
      io.stderr.write(vvmLine("an empty path: name a test file or folder, or none for the current directory"));
      return EXIT.usage;
    }
    const abs = path.resolve(io.cwd, p);
    let isDir: boolean;
    try {
      isDir = (await stat(abs)).isDirectory();
    } catch {
      io.stderr.write(vvmLine(`${p}: no such file or folder`));
      return EXIT.usage;
    }
    if (!isDir && abs.endsWith(".vvm")) {
      // a program named where its tests belong: its test file is beside it
      io.stderr.write(vvmLine(`${p}: a program, not a test file; its tests would be in ${p.replace(/\.vvm$/, ".test.yaml")} (spec/testing.md)`));
      return EXIT.usage;
    }
    if (!isDir && !TEST_FILE.test(abs)) {
      // its snapshot file is named after it: any other name would have --update write over the tests
      io.stderr.write(vvmLine(`${p}: not a test file: a test file's name ends in .test.yaml or .test.yml (spec/testing.md)`));
      return EXIT.usage;
    }
    if (!isDir) files.push(abs);
    else {
      const found = await findTestFiles(abs);
      if (found.length === 0) {
        io.stderr.write(vvmLine(`${p}: no test files (*.test.yaml, *.test.yml) in this folder or below it`));
        return EXIT.usage;
      }
      files.push(...found);
    }
  }
  const out = (line: string) => io.stdout.write(printable(line, false) + "\n");
  let passed = 0;
  let failed = 0;
  for (const abs of [...new Set(files)]) {
    const shown = displayPath(abs, io);
    let file: TestFile;
    let snapshots: Map<string, Snapshot>;
    const snapFile = snapshotFile(abs);
    try {
      file = await loadTestFile(abs, shown);
      snapshots = flags.update ? new Map() : await readSnapshots(snapFile, displayPath(snapFile, io));
      await programExists(file, io);
    } catch (err) {
      if (!(err instanceof TestFileError)) throw err;
      out(`ERROR ${err.message}`);
      failed++;
      continue;
    }
    const previous = flags.update ? await readSnapshots(snapFile, displayPath(snapFile, io)).catch(() => new Map<string, Snapshot>()) : null;
    const written = new Map<string, Snapshot>();
    for (const t of file.tests) {
      const r = await runOne(file, t, snapshots.get(t.name) ?? null, flags.allowBash === true, io);
      if (io.signal.aborted) {
        io.stderr.write("vvm: interrupted\n");
        return EXIT.interrupted;
      }
      if (r.failure === null) {
        passed++;
        out(`PASS  ${shown}: ${t.name}`);
      } else {
        failed++;
        out(`FAIL  ${shown}:${t.line}: ${t.name}: ${r.failure}`);
      }
      for (const u of r.unused) out(`        unused ${u}`);
      // a failing test keeps the snapshot it had: --update records behaviour the test accepts, not a regression
      const keep = r.failure === null ? r.snapshot : (previous?.get(t.name) ?? null);
      if (keep !== null) written.set(t.name, keep);
    }
    if (flags.update) {
      try {
        await writeSnapshots(snapFile, written);
        out(`wrote ${displayPath(snapFile, io)} (${written.size} snapshot${written.size === 1 ? "" : "s"})`);
      } catch (err) {
        // a link (or a folder) where the snapshot belongs, a read-only folder: said, and counted as a failure
        out(`ERROR ${displayPath(snapFile, io)}: cannot write it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
        failed++;
      }
    }
  }
  io.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed > 0 ? EXIT.testFailed : EXIT.ok;
}

interface Ran {
  failure: string | null;
  unused: string[];
  snapshot: Snapshot | null;
}

async function runOne(file: TestFile, t: TestCase, want: Snapshot | null, allowBash: boolean, io: CliIO): Promise<Ran> {
  try {
    return await runTest(file, t, allowBash, io, async (r) => {
      let failure = await firstFailure(t, r, io.signal);
      const snapshot = snapshotOf(r.exports, await allMemories(r.roots, io.signal));
      if (failure === null && want !== null) failure = snapshotDiff(want, snapshot);
      return { failure, unused: r.unused, snapshot };
    });
  } catch (err) {
    if (err instanceof TestSetupError) return { failure: err.message, unused: [], snapshot: null };
    throw err;
  }
}

async function programExists(file: TestFile, io: CliIO): Promise<void> {
  let what = "no such file (program: names it, relative to the test file)";
  try {
    const st = await stat(file.program);
    // a .vvm file, links followed, as a module is (spec/language.md §12): a cloned repository's test naming
    // ~/.aws/credentials as its program had the file's lines shown in the reasons it did not run
    const real = st.isFile() ? await realpath(file.program) : "";
    if (real.endsWith(".vvm")) return;
    what = st.isFile() ? `not a .vvm file${real === file.program ? "" : ` (it leads to ${displayPath(real, io)})`}` : st.isDirectory() ? "a folder, not a program file" : "not a regular file";
  } catch {
    // no such file
  }
  throw new TestFileError(`${file.programAt}: program ${displayPath(file.program, io)}: ${what}`);
}

/** `*.test.yaml` under a folder, sorted; links are not followed. */
async function findTestFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && !NOT_SEARCHED.has(e.name)) out.push(...(await findTestFiles(p)));
    else if (e.isFile() && TEST_FILE.test(e.name)) out.push(p);
  }
  return out.sort();
}
