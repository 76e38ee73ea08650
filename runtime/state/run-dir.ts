// Filesystem state mode (spec/state.md): the run directory `.vvm/runs/<run-id>/` next to the entry program,
// the binding file of each agent call, the ref value it returns, and what a call passed refs may read.
// The runtime writes every file itself: a binding is complete (temporary file + rename) or absent.
import { randomBytes } from "node:crypto";
import { closeSync, constants, lstatSync, mkdirSync, openSync, realpathSync, writeSync } from "node:fs";
import path from "node:path";
import { nodeFs, type MemoryFs } from "../memory/fsio.ts";
import { preloadSecretRules } from "../memory/secrets.ts";
import { isRef, makeError, someValue, type Value, type VObject } from "../values.ts";
import { RUN_OUTPUT, StateFile, type RunStatus } from "./state-file.ts";
import { INDEX_CHARS, summarize, tableCell } from "./summary.ts";

/** `.vvm/runs` under the entry program's directory. */
export const RUNS_DIR = path.join(".vvm", "runs");
/** `YYYYMMDD-HHMMSS-<6 hex>`: sorts by start time; the random part keeps simultaneous runs apart. */
export const RUN_ID = /^\d{8}-\d{6}-[0-9a-f]{6}$/;
/** A binding's name in state.md is cut to this many characters. */
export const NAME_CHARS = 60;
/** `b000001`: binding files are numbered by a counter, never named after variables. */
export const BINDING_ID = /^b\d{6,}$/;

/** The run directory could not be made: the run does not start. */
export class RunDirError extends Error {
  override name = "RunDirError";
}

interface RunDirOptions {
  /** the entry program, absolute */
  entryPath: string;
  /** its source, copied to program.vvm */
  source: string;
  warn: (message: string) => void;
  fs?: MemoryFs;
  now?: () => Date;
}

/** One binding to write: the call's final text (memory blocks already stripped). */
interface BindRequest {
  /** the variable the call is assigned to, or its name= label; null: `_anon_N` */
  name: string | null;
  agent: string;
  text: string;
  /** the call's retry=: further attempts at a failed write */
  retries: number;
  /** wait before write attempt `attempt + 1`; false when the call was cancelled meanwhile */
  pause: (attempt: number) => Promise<boolean>;
}

export class RunDirectory {
  private bindings = 0;
  private anon = 0;
  /** the ref values bind() returned: only these grant a call read access to the bindings */
  private readonly made = new WeakSet<VObject>();
  private constructor(
    readonly id: string,
    /** absolute */
    readonly dir: string,
    /** as refs give it: relative to the entry program's directory */
    readonly shown: string,
    private readonly fs: MemoryFs,
    private readonly now: () => Date,
    private readonly state: StateFile,
    /** bindings/ as made: where every binding is written and what a ref grants, however the path reads later */
    private readonly bindingsDir: PinnedFolder,
    /** the run directory as made: where state.md is written */
    private readonly runFolder: PinnedFolder,
  ) {}

  /** Make `.vvm/runs/<run-id>/` with program.vvm, state.md (status running), bindings/ and imports/. */
  static async create(opts: RunDirOptions): Promise<RunDirectory> {
    const fs = opts.fs ?? nodeFs;
    const now = opts.now ?? (() => new Date());
    // names and summaries are scanned before they go into state.md: the detectors load while the first call runs
    preloadSecretRules();
    const base = path.dirname(opts.entryPath);
    const vvm = path.join(base, ".vvm");
    const runs = path.join(base, RUNS_DIR);
    realDir(vvm);
    ignoreRuns(vvm);
    realDir(runs);
    const started = now();
    const id = makeRunDir(runs, started);
    const dir = path.join(runs, id);
    const shown = path.join(RUNS_DIR, id);
    try {
      mkdirSync(path.join(dir, "bindings"));
      mkdirSync(path.join(dir, "imports"));
      await fs.writeAtomic(path.join(dir, "program.vvm"), opts.source, undefined, RUN_OUTPUT);
    } catch (err) {
      throw new RunDirError(`cannot set up ${shown} (${code(err)})`);
    }
    // one header line, whatever the file is called
    const program = tableCell(path.basename(opts.entryPath), 200);
    // state.md is written only while the run directory leads where it did when made (a link swapped in for
    // it, .vvm/runs or .vvm would take the writes elsewhere), and inside it as opened then
    const runFolder = new PinnedFolder(dir, "the run directory now leads elsewhere than when the run began, a link?");
    const state = new StateFile(fs, path.join(dir, "state.md"), id, program, started, opts.warn, (write) => runFolder.write(write));
    const bindings = new PinnedFolder(path.join(dir, "bindings"), "bindings/ now leads elsewhere than when the run began (a link?)");
    const run = new RunDirectory(id, dir, shown, fs, now, state, bindings, runFolder);
    run.state.trace(["Started"], started);
    await run.state.flush();
    return run;
  }

  /**
   * Whether a call's input carries, anywhere, a ref value this run made (then the call is told how to read refs
   * and may read the bindings). An object that only looks like one (untrusted JSON with a `ref` field) does not count.
   */
  holdsRef(v: Value): boolean {
    return someValue(v, (x) => isRef(x) && this.made.has(x));
  }

  /**
   * What grants this run's bindings, and nothing else: bindings/'s real path as made, which the call's tools
   * never resolve again (a link swapped in later leads nowhere), named relative to `programDir` in the tools'
   * descriptions. Null once bindings/ leads elsewhere (a link swapped in meanwhile, by a command an agent ran
   * or another program, would take the refs' read grant there); asked right before the call's tools are made.
   */
  bindingsTree(programDir: string): { real: string; shown: string } | null {
    if (!this.bindingsDir.inPlace()) return null;
    const rel = path.relative(programDir, path.join(this.dir, "bindings")).split(path.sep).join("/");
    return { real: this.bindingsDir.real, shown: `${rel}/**` };
  }

  /** The Ref Reading Protocol a call passed refs gets with its system prompt. */
  protocol(): string {
    const at = `${this.shown.split(path.sep).join("/")}/bindings/`;
    return [
      "## Ref Reading Protocol",
      "Parts of your input are ref values: objects whose `ref` field is the path of a file holding an earlier agent's complete output.",
      "- `summary` is a short preview of that output; when it is enough for the task, use it.",
      `- When you need the full content, read the file at \`ref\` with the read_file tool (you may read ${at}**).`,
      "- When you rely on a specific part, cite it by its file name (for example b000001.md).",
    ].join("\n");
  }

  /**
   * Write the call's text to the next binding file and return its ref value, or `binding_failed` when it
   * cannot be written after the call's retries. Recorded in state.md either way.
   */
  async bind(req: BindRequest): Promise<Value> {
    const n = ++this.bindings;
    const id = `b${String(n).padStart(6, "0")}`;
    const name = req.name ?? `_anon_${++this.anon}`;
    const failure = await this.write(`${id}.md`, req);
    // a name= may come from the program's data, and a summary from the reply: either may hold a secret,
    // so state.md shows them once its next write has scanned them
    if (failure !== null) {
      const [shownName] = this.state.cells([[name, NAME_CHARS]]);
      this.state.trace([shownName, ` = @${tableCell(req.agent, NAME_CHARS)} failed: ${id} could not be written (${code(failure)})`], this.now());
      return makeError("binding_failed", `the reply could not be written to ${path.join(this.shown, "bindings", `${id}.md`)} (${code(failure)})`, new Map<string, Value>([["binding", id]]));
    }
    const summary = summarize(req.text);
    const [shownName, shownSummary] = this.state.cells([
      [name, NAME_CHARS],
      [summary, INDEX_CHARS],
    ]);
    this.state.bind(shownName, id, shownSummary);
    this.state.trace([shownName, ` = @${tableCell(req.agent, NAME_CHARS)} (${id})`], this.now());
    const ref: VObject = new Map<string, Value>([
      ["ref", `${this.shown}/bindings/${id}.md`.split(path.sep).join("/")],
      ["summary", summary],
      ["mime", "text/markdown"],
      ["bytes", Buffer.byteLength(req.text)],
    ]);
    this.made.add(ref);
    return ref;
  }

  /** The binding id (`b000001`) of a ref value this run made; null for anything else. */
  bindingOf(v: Value): string | null {
    return isRef(v) && this.made.has(v) ? path.basename(String(v.get("ref")), ".md") : null;
  }

  /** The binding written (inside bindings/ as it was when the run began), in up to 1 + retries attempts: null, or the last attempt's error. */
  private async write(name: string, req: BindRequest): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.bindingsDir.write((at) => this.fs.writeAtomic(path.join(at, name), req.text, undefined, RUN_OUTPUT));
        return null;
      } catch (err) {
        if (attempt > req.retries || !(await req.pause(attempt))) return err;
      }
    }
  }

  /** A call that ended in an error value before any reply: a trace line, no binding. */
  noteFailure(name: string | null, agent: string, kind: string): void {
    this.state.trace([this.state.cells([[name ?? "(unassigned)", NAME_CHARS]])[0], ` = @${tableCell(agent, NAME_CHARS)} failed: error(kind=${JSON.stringify(kind)})`], this.now());
  }

  /** The run's end: status and a last trace line, written before the CLI prints the exports. */
  async finish(status: Exclude<RunStatus, "running">, note: string): Promise<void> {
    this.state.setStatus(status);
    this.state.trace([note], this.now());
    await this.state.flush();
    this.bindingsDir.close();
    this.runFolder.close();
  }
}

/** A new run directory under `runs`: its id. Two runs in the same second that drew the same six hex digits draw again. */
function makeRunDir(runs: string, started: Date): string {
  for (let tries = 0; ; tries++) {
    const id = runId(started);
    try {
      mkdirSync(path.join(runs, id));
      return id;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || tries > 10) throw new RunDirError(`cannot create ${path.join(RUNS_DIR, id)} (${code(err)})`);
    }
  }
}

function runId(at: Date): string {
  const stamp = at.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${stamp}-${randomBytes(3).toString("hex")}`;
}

/**
 * Whether `p` still resolves to `real`. The real path, not the device and inode: a directory removed and
 * another linked in its place can be given the same inode number at once (ext4 does).
 */
function sameRealPath(p: string, real: string): boolean {
  try {
    return realpathSync.native(p) === real;
  } catch {
    return false;
  }
}

/** The tools' module, loaded with the first write rather than by every command that reads runs. */
let sandbox: Promise<typeof import("../tools/sandbox.ts")> | undefined;

/**
 * A folder of the run (the run directory, bindings/), written only while its path still leads where it did
 * when the run began, and then inside the folder as opened at the first write (openFolder: /proc/self/fd/N on
 * Linux). The check resolves the path and a write would resolve it again: a link swapped in between (by a
 * command an agent ran, another program) would take the write elsewhere, where the opened folder stays the one
 * checked. Opened once for the run, not for each write (12-37 µs a binding); closed when the run finishes.
 */
class PinnedFolder {
  /** where the path led when the run began */
  readonly real: string;
  private opened: Promise<{ path: string; close: () => void }> | null = null;

  constructor(
    private readonly dir: string,
    /** the error a write meets once the path leads elsewhere */
    private readonly moved: string,
  ) {
    this.real = realpathSync.native(dir);
  }

  inPlace(): boolean {
    return sameRealPath(this.dir, this.real);
  }

  async write(write: (at: string) => Promise<unknown>): Promise<void> {
    if (!this.inPlace()) throw new Error(this.moved);
    this.opened ??= (sandbox ??= import("../tools/sandbox.ts")).then(({ openFolder }) => {
      const folder = openFolder(this.real);
      if (typeof folder === "string") throw new Error(this.moved);
      return folder;
    });
    const opened = this.opened;
    // a folder that could not be opened is tried again at the next write
    const folder = await opened.catch((err: unknown) => {
      if (this.opened === opened) this.opened = null;
      throw err;
    });
    await write(folder.path);
  }

  close(): void {
    void this.opened?.then((f) => f.close(), () => {});
    this.opened = null;
  }
}

/** `dir` as a real directory of its own: made when absent; a link (or a file) there is refused, never followed. */
function realDir(dir: string): void {
  try {
    mkdirSync(dir);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw new RunDirError(`cannot create ${dir} (${code(err)})`);
  }
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw new RunDirError(`${dir} is a symbolic link; run state is never written through a link (remove it, or run in-context)`);
  if (!st.isDirectory()) throw new RunDirError(`${dir} is not a directory`);
}

/** `.vvm/.gitignore` listing `runs/`, made once when absent (never changed after, and never the project's own .gitignore). */
function ignoreRuns(vvm: string): void {
  let fd: number;
  try {
    fd = openSync(path.join(vvm, ".gitignore"), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  } catch {
    return; // already there (whatever it holds is the user's), or not writable: runs still work
  }
  try {
    writeSync(fd, "runs/\n");
  } finally {
    closeSync(fd);
  }
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}
