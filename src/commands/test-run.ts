// One test's run: a fresh temporary copy of the program's directory (optionally seeded with a memory
// fixture), then the program run by `vvm run`'s own code (runCommand) under --strict-script with the
// test's rules, a HOME of its own and no provider but the script. What it printed, how it ended, what the
// script saw and what the trace counted are kept for the expectations; the copy is removed afterwards.
import { cp, lstat, mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { displayPath, type CliIO } from "../io.ts";
import type { RunOutcome } from "../../runtime/context.ts";
import { MAX_SCRIPT_BYTES, parseScript, ScriptError, type ScriptProvider } from "../../runtime/providers/script.ts";
import { FileRefused, readTextFile } from "../../runtime/text-file.ts";
import { relativeUnder } from "../resolve/glob-prefix.ts";
import { loadProgram, type LoadedModule } from "../resolve/loader.ts";
import { errorKind, type VObject } from "../../runtime/values.ts";
import { runCommand } from "./run.ts";
import { describeRule, unansweredLine } from "./script-report.ts";
import type { Json, TestCase, TestFile } from "./test-file.ts";
import type { Roots } from "./test-memory.ts";

export interface RunResult {
  /** `vvm run`'s exit code */
  code: number;
  /** its stderr, for the reason of a run that never started */
  stderr: string;
  /** the exports it printed; null when it printed none */
  exports: { [key: string]: Json } | null;
  /** how the program ended; null when it never ran (an invalid program, a missing input) */
  outcome: RunOutcome["kind"] | null;
  raised: { kind: string | null; message: string | null } | null;
  /** calls and judges no rule answered, and rules that answered nothing, as lines to show */
  unanswered: string[];
  unused: string[];
  /** finished calls per agent name (as traces name them), and judges */
  calls: Map<string, number>;
  judges: number;
  roots: Roots;
}

/** Never copied into a test's directory: earlier runs' state, version control, dependencies. */
const SKIPPED = new Set([".vvm", ".git", "node_modules"]);

/** Runs one test and hands its result to `check` while the copy still exists (memory is read from it). */
export async function runTest<T>(file: TestFile, t: TestCase, allowBash: boolean, io: CliIO, check: (r: RunResult) => Promise<T>): Promise<T> {
  // real: compared with the program's real folder (a copy cannot go inside what it copies)
  let tmp: string;
  try {
    tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), "vvm-test-")));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new TestSetupError(`cannot make a temporary folder in ${os.tmpdir()} (${code === "ENOENT" ? "no such folder" : (code ?? (err as Error).message)}): set TMPDIR to a folder that exists and can be written`);
  }
  try {
    // the folder of the program's real file: a program that is a link (main.vvm -> ~/notes/scribe.vvm) is run in
    // a copy of its real folder, never in place through a path the copy does not hold
    const realProgram = await realpath(file.program);
    const programDir = path.dirname(realProgram);
    const project = path.join(tmp, "project");
    const home = path.join(tmp, "home");
    // a file of the copy is named as the person knows it: the original, as vvm shows paths (`sub/bad.vvm`)
    const showPath = (f: string) => (within(project, f) ? displayPath(path.join(programDir, path.relative(project, f)), io) : f);
    // Node's cp refuses a copy into the folder it copies, with nothing a person could act on
    if (within(programDir, tmp)) throw new TestSetupError(`the temporary folder ${tmp} is inside the program's folder ${programDir}, which each test copies into it: set TMPDIR to a folder outside it`);
    // only the program's folder is copied: a module or a ./ skill elsewhere would be missing from the copy, and the
    // run would name a path in it that the person never wrote
    const away = importedFromOutside((await loadProgram(realProgram)).modules, programDir);
    if (away !== null) {
      throw new TestSetupError(`${displayPath(file.program, io)} imports ${away.what} ${displayPath(away.path, io)}, which lies outside the program's folder ${displayPath(programDir, io)}: a test runs a copy of that folder alone, so it cannot run this program`);
    }
    // a test file comes with the repository: the files it names are its folder's, never the user's elsewhere
    const inTestDir = confinedTo(await realpath(path.dirname(file.file)), io);
    if (t.memory !== null) await inTestDir(t.memory, "memory");
    if (t.userMemory !== null) await inTestDir(t.userMemory, "user_memory");
    if (t.script.kind === "file") await inTestDir(t.script.path, "script");
    if (t.inputFile !== null) await inTestDir(t.inputFile, "input_file");
    await copyTree(programDir, project);
    await mkdir(home);
    if (t.memory !== null) await copyFixture(t.memory, path.join(project, ".vvm", "memory"), "memory", displayPath(t.memory, io));
    if (t.userMemory !== null) await copyFixture(t.userMemory, path.join(home, ".vvm", "memory"), "user_memory", displayPath(t.userMemory, io));
    const script = path.join(tmp, t.script.kind === "file" ? path.basename(t.script.path) : path.basename(file.file));
    await writeFile(script, t.script.kind === "file" ? await readScript(t.script.path, displayPath(t.script.path, io)) : t.script.text);
    if (t.inputFile !== null) await inputFileReadable(t.inputFile, displayPath(t.inputFile, io));
    const trace = path.join(tmp, "trace.jsonl");
    const entry = path.join(project, path.basename(realProgram));

    let stdout = "";
    let stderr = "";
    const runIO: CliIO = {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      // No API key and no VVM_* settings of the caller: only what finds programs, a HOME of the test's own
      // (user memory), and no backoff between retries (a script has no server to spare; `delay` still waits).
      env: { PATH: io.env.PATH ?? "", HOME: home, VVM_RETRY_BASE_MS: "0" },
      cwd: project,
      stderrIsTTY: false,
      signal: io.signal,
      stdin: async function* () {},
    };
    let outcome: RunOutcome | null = null;
    let provider: ScriptProvider | null = null;
    const code = await runCommand(
      entry,
      {
        provider: "script",
        script,
        strictScript: true,
        judgeModel: "haiku",
        trace,
        lockTimeout: 10_000,
        memoryBudget: 2000,
        // whatever a binding computes, no memory outside the test's folder (its copy and its HOME)
        confineMemory: tmp,
        // a test's script chooses the commands: a cloned repository's tests would run them as you
        ...(allowBash ? {} : { commandsRefused: "vvm test runs no command a test's script asks for unless it is given --allow-bash" }),
        concurrency: 8,
        input: t.inputFile ?? undefined,
        arg: Object.entries(t.inputs ?? {}).map(([name, v]) => ({ name, text: JSON.stringify(v) })),
        fromTest: { inputFileShown: t.inputFile === null ? null : displayPath(t.inputFile, io) },
      },
      runIO,
      (o, s) => {
        outcome = o;
        provider = s;
      },
    );
    const o = outcome as RunOutcome | null;
    const p = provider as ScriptProvider | null;
    const counted = await countCalls(trace);
    return await check({
      code,
      // vvm run names the copy's files relative to the copy (its working directory)
      stderr: stderr.replace(/^[^\s:][^:\n]*(?=:\d+:\d+: )/gm, (f) => showPath(path.resolve(project, f))),
      exports: exportsOf(stdout),
      outcome: o?.kind ?? null,
      raised: o?.kind === "raised" ? raisedOf(o.error as VObject) : null,
      unanswered: (p?.unanswered ?? []).map((c) => unansweredLine(c, showPath)),
      unused: (p?.unused() ?? []).map((r) => describeRule(r)),
      ...counted,
      roots: { entryDir: project, homeDir: home },
    });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** The first module, or skill folder named by a `./` or `../` path, that a program's modules import from outside `dir`. */
function importedFromOutside(modules: LoadedModule[], dir: string): { what: string; path: string } | null {
  for (const m of modules) {
    if (!within(dir, m.path)) return { what: "the module", path: m.path };
    for (const s of m.program?.body ?? []) {
      if (s.kind !== "SkillImport" || !/^\.\.?\//.test(s.source.value)) continue;
      const folder = path.resolve(path.dirname(m.path), s.source.value);
      if (!within(dir, folder)) return { what: `the skill '${s.skill.value}' from`, path: folder };
    }
  }
  return null;
}

/** A test's own problem with its files (a fixture that is not a folder): said as the test's failure. */
export class TestSetupError extends Error {
  override name = "TestSetupError";
}

/**
 * A check that a file a test names lies in `dir` (real) once its links are followed: a hostile repository's
 * `input_file: ../../.docker/config.json` (or a link to it) would put the user's file into the exports, which
 * `--update` writes into the snapshot file beside the test. A path that cannot be resolved is left to the
 * reading that follows, which fails on it.
 */
function confinedTo(dir: string, io: CliIO): (file: string, field: string) => Promise<void> {
  return async (file, field) => {
    let real: string;
    try {
      real = await realpath(file);
    } catch {
      return;
    }
    if (within(dir, real)) return;
    const how = real === file ? "lies outside the test file's folder" : `leads through a symbolic link out of the test file's folder (to ${displayPath(real, io)})`;
    throw new TestSetupError(`${field} ${displayPath(file, io)} ${how}: a test names only files in its test file's folder, as it comes with them`);
  };
}

/** A script file's text, checked here so that a mistake names the file where it is, not the test's copy of it. */
async function readScript(file: string, shown: string): Promise<string> {
  let text: string;
  try {
    text = readTextFile(file, MAX_SCRIPT_BYTES);
  } catch (err) {
    if (err instanceof FileRefused) throw new TestSetupError(`script ${shown}: ${err.message}`);
    throw err;
  }
  try {
    parseScript(text, shown);
  } catch (err) {
    if (err instanceof ScriptError) throw new TestSetupError(err.message);
    throw err;
  }
  return text;
}

/**
 * A test's input_file must be a regular file: vvm run --input would wait on a FIFO for a writer that never
 * comes (a test runs unattended, and that wait is in a thread not even Ctrl-C ends). What else can be wrong
 * with it vvm run says, naming the file.
 */
async function inputFileReadable(file: string, shown: string): Promise<void> {
  let st;
  try {
    st = await stat(file);
  } catch {
    return; // vvm run says "no such file"
  }
  if (!st.isFile() && !st.isDirectory()) throw new TestSetupError(`input_file ${shown}: not a regular file`);
}

/** A folder copied for a test holds at most this much: a program beside a dataset or in a home folder is refused. */
export const MAX_COPY_BYTES = 256 * 2 ** 20;
const MAX_COPY_ENTRIES = 20_000;

/** Regular files and folders only: links are not copied (a copy must not reach outside itself). */
async function copyTree(from: string, to: string, what = "the program's folder"): Promise<void> {
  let bytes = 0;
  let entries = 0;
  try {
    await cp(from, to, {
      recursive: true,
      filter: async (src) => {
        if (src !== from && SKIPPED.has(path.basename(src))) return false;
        const st = await lstat(src);
        bytes += st.isFile() ? st.size : 0;
        if (bytes > MAX_COPY_BYTES || ++entries > MAX_COPY_ENTRIES) {
          throw new TestSetupError(`${what} ${from} holds more than ${MAX_COPY_BYTES / 2 ** 20} MiB or ${MAX_COPY_ENTRIES.toLocaleString("en")} files, and each test runs in a copy of it: put the program in a folder of its own`);
        }
        return st.isFile() || st.isDirectory();
      },
    });
  } catch (err) {
    if (err instanceof TestSetupError) throw err;
    // an unreadable file (mode 000, another user's) is the folder's problem, said as the test's failure
    const e = err as NodeJS.ErrnoException;
    throw new TestSetupError(`${what} ${from} cannot be copied for the test (${e.code ?? e.message}${e.path ? `: ${path.relative(from, e.path) || e.path}` : ""})`);
  }
}

/** `shown` is the folder as the person knows it (relative to the current directory). */
async function copyFixture(from: string, to: string, field: string, shown: string): Promise<void> {
  let isDir = false;
  try {
    isDir = (await stat(from)).isDirectory();
  } catch {
    // said below
  }
  if (!isDir) throw new TestSetupError(`${field}: ${shown} is not a folder (give a folder laid out as .vvm/memory)`);
  const real = await realpath(from);
  if (within(real, to)) throw new TestSetupError(`${field}: ${shown} holds the test's own copy of the program (${to}), so it cannot be copied into it: give a folder laid out as .vvm/memory`);
  await mkdir(path.dirname(to), { recursive: true });
  await copyTree(real, to, field);
}

/** Whether `p` is `dir` or inside it (both real paths). */
const within = (dir: string, p: string) => relativeUnder(dir, p) !== null;

function exportsOf(stdout: string): { [key: string]: Json } | null {
  if (stdout.trim() === "") return null;
  try {
    const v = JSON.parse(stdout) as Json;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

function raisedOf(error: VObject): { kind: string | null; message: string | null } {
  // read in place: the whole value can be too large or too deep to copy (its data is the program's)
  const e = error.get("error");
  const message = e instanceof Map ? e.get("message") : undefined;
  return { kind: errorKind(error), message: typeof message === "string" ? message : null };
}

/** `call` and `judge` events of the trace: one each per finished call and judge. */
async function countCalls(trace: string): Promise<{ calls: Map<string, number>; judges: number }> {
  const calls = new Map<string, number>();
  let judges = 0;
  let text: string;
  try {
    text = await readFile(trace, "utf8");
  } catch {
    return { calls, judges }; // the run never started
  }
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const e = JSON.parse(line) as { type?: unknown; agent?: unknown };
    if (e.type === "call" && typeof e.agent === "string") calls.set(e.agent, (calls.get(e.agent) ?? 0) + 1);
    else if (e.type === "judge") judges++;
  }
  return { calls, judges };
}
