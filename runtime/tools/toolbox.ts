// The tools one agent call offers, and running the tool uses a model asks for. Which tools are offered
// follows the agent's permissions (nothing without them); every argument is checked before use, and every
// refusal or failure is answered to the model as a tool error so the loop can go on (spec/agent-calls.md §8).
import { getMaxListeners, setMaxListeners } from "node:events";
import { Semaphore } from "async-mutex";
import type { ToolResult, ToolSpec, ToolUse } from "../provider.ts";
import { clipped } from "../text.ts";
import { editFileTool, LIMITS, listFilesTool, readFileTool, searchFilesTool, writeFileTool, type ToolOutput } from "./file-tools.ts";
import { bashTool, COMMAND_LIMITS, type ShellSettings } from "./bash-tool.ts";
import { memorySearchTool, MEMORY_SEARCH_LIMITS, type MemorySearch } from "./memory-search-tool.ts";
import type { ReadTree } from "./globs.ts";
import type { Permissions, ToolPermission } from "./permissions.ts";
import { Sandbox, ToolDenied, ToolFailed } from "./sandbox.ts";

/** How much of a model's one reply the tools take on (Toolbox.run). */
export const TURN_LIMITS = { uses: 32, concurrency: 8, resultChars: 400_000 };

/** What the trace records about one tool use: no file contents, no arguments beyond the path. */
export interface ToolEvent {
  tool: string;
  tool_use_id: string;
  /** false when a permission (or the path rules) refused it */
  allowed: boolean;
  /** the permission that was missing, when one was */
  denied: ToolPermission | null;
  ok: boolean;
  /** why it failed, as a short word (denied, bad_input, unknown_tool, not_found, binary, …) */
  error: string | null;
  path: string | null;
  ms: number;
  input_bytes: number;
  output_bytes: number;
  bytes_written: number | null;
  /** bash only: the command's exit code (null when it was killed or did not run) */
  exit_code?: number | null;
}


type ArgType = "string" | "line";

/** What one call's tools work with beyond their arguments. */
interface ToolContext {
  /** null: the agent has neither read nor write globs */
  sandbox: Sandbox | null;
  lock: PathLock;
  permissions: Permissions;
  programDir: string;
  agent: string;
  shell: ShellSettings;
  memory: MemorySearch | null;
}

/** What the call layer gives the toolbox besides the permissions. */
interface ToolboxOptions {
  programDir: string;
  agent: string;
  shell: ShellSettings;
  /** the call's memory session's search; null: no memory, or memory_mode="fresh" */
  memory?: MemorySearch | null;
  /** real folders the agent may read whole, beside its read globs: its skills' folders, the run's bindings for a call passed refs */
  readTrees?: readonly ReadTree[];
}

interface ToolDef {
  name: string;
  permission: ToolPermission;
  args: Record<string, { type: ArgType; required: boolean; description: string }>;
  describe(ctx: ToolContext): string;
  run(ctx: ToolContext, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutput & { exitCode?: number | null }>;
}

/** The sandbox of a file tool; offered() has made sure there is one. */
const sb = (ctx: ToolContext): Sandbox => ctx.sandbox!;

const DEFS: ToolDef[] = [
  {
    name: "read_file",
    permission: "read",
    args: {
      path: { type: "string", required: true, description: "the file, relative to the program's directory (or absolute)" },
      offset: { type: "line", required: false, description: "the first line to read, counting from 1 (default 1)" },
      limit: { type: "line", required: false, description: `how many lines to read (default and most: ${LIMITS.readLines})` },
    },
    describe: (ctx) =>
      `Read a UTF-8 text file. Paths are relative to the program's directory. You may read files matching: ${sb(ctx).read.describe()}. ` +
      `Returns at most ${LIMITS.readLines} lines and ${LIMITS.readChars.toLocaleString("en")} characters; a note at the end says how to read on.`,
    run: (ctx, a, signal) => readFileTool(sb(ctx), a as { path: string; offset?: number; limit?: number }, signal),
  },
  {
    name: "list_files",
    permission: "read",
    args: { pattern: { type: "string", required: true, description: 'a glob such as "docs/**/*.md" ("*" and "**" skip names starting with a dot); a directory name lists that directory' } },
    describe: (ctx) =>
      `List the files matching a glob, relative to the program's directory, one per line (only files you may read: ${sb(ctx).read.describe()}). ` +
      `Linked directories are not entered. At most ${LIMITS.listFiles} files.`,
    run: (ctx, a, signal) => listFilesTool(sb(ctx), a as { pattern: string }, signal),
  },
  {
    name: "search_files",
    permission: "read",
    args: {
      query: { type: "string", required: true, description: "a JavaScript regular expression, tested against each line" },
      pattern: { type: "string", required: false, description: 'a glob choosing the files to search (default "**")' },
    },
    describe: (ctx) =>
      `Find the lines matching a regular expression in text files you may read (${sb(ctx).read.describe()}); answers path:line: text. ` +
      `At most ${LIMITS.searchMatches} lines; binary files and files over ${LIMITS.textFileBytes / 2 ** 20} MiB are skipped.`,
    run: (ctx, a, signal) => searchFilesTool(sb(ctx), a as { query: string; pattern?: string }, signal),
  },
  {
    name: "write_file",
    permission: "write",
    args: {
      path: { type: "string", required: true, description: "the file, relative to the program's directory (or absolute)" },
      content: { type: "string", required: true, description: "the whole new content of the file" },
    },
    describe: (ctx) =>
      `Create or replace a text file with the given content (missing directories are created). You may write files matching: ${sb(ctx).write.describe()}. ` +
      `Symbolic links are never written through.`,
    run: (ctx, a) => ctx.lock.hold(sb(ctx), a.path as string, () => writeFileTool(sb(ctx), a as { path: string; content: string })),
  },
  {
    name: "edit_file",
    permission: "write",
    args: {
      path: { type: "string", required: true, description: "the file, relative to the program's directory (or absolute)" },
      old: { type: "string", required: true, description: "the exact text to replace; it must occur exactly once in the file" },
      new: { type: "string", required: true, description: "the text to put in its place" },
    },
    describe: (ctx) =>
      `Replace one exact occurrence of a text in an existing file. You may edit files that match both a write glob (${sb(ctx).write.describe()}) and a read glob (${sb(ctx).read.empty ? "none" : sb(ctx).read.describe()}).`,
    run: (ctx, a) => ctx.lock.hold(sb(ctx), a.path as string, () => editFileTool(sb(ctx), a as { path: string; old: string; new: string })),
  },
  {
    name: "bash",
    permission: "bash",
    args: { command: { type: "string", required: true, description: "the command, run by /bin/sh -c in the program's directory" } },
    describe: (ctx) =>
      `Run a shell command (/bin/sh -c) in the program's directory, with standard input empty. Answers its output (stdout and stderr together) and exit code. ` +
      `A command is killed, with everything it started, after ${(ctx.shell.limits?.timeoutMs ?? COMMAND_LIMITS.timeoutMs) / 1000}s or past ${COMMAND_LIMITS.maxOutputBytes / 2 ** 20} MiB of output; ` +
      `at most ${(COMMAND_LIMITS.headBytes + COMMAND_LIMITS.tailBytes).toLocaleString("en")} bytes of output are shown (its start and end). Background jobs do not outlive the command. ` +
      `API keys and other credentials are not in its environment.` +
      (ctx.permissions.bash === "prompt" ? " Each command is shown to a person, who may refuse it." : ""),
    run: (ctx, a, signal) => bashTool({ agent: ctx.agent, mode: ctx.permissions.bash === "prompt" ? "prompt" : "allow", cwd: ctx.programDir, shell: ctx.shell }, a as { command: string }, signal),
  },
  {
    name: "memory_search",
    permission: "memory",
    args: { query: { type: "string", required: true, description: "words the facts you look for would contain (names, @Entities, terms)" } },
    describe: () =>
      `Search your memory's retained facts that the Memory Context did not show, most relevant first. ` +
      `Answers at most ${MEMORY_SEARCH_LIMITS.facts} facts, each with the ledger entry (#seq) and day it was retained.`,
    run: (ctx, a) => memorySearchTool(ctx.memory!, a as { query: string }),
  },
];

/** Is a tool's permission granted? (a tool that is not is neither offered nor run) */
function granted(def: ToolDef, ctx: ToolContext): boolean {
  switch (def.permission) {
    case "read":
      return ctx.sandbox !== null && !ctx.sandbox.read.empty;
    case "write":
      return ctx.sandbox !== null && !ctx.sandbox.write.empty;
    case "bash":
      return ctx.permissions.bash !== "deny";
    case "memory":
      return ctx.memory !== null;
    default: {
      const never: never = def.permission;
      return never;
    }
  }
}

/** What a denied tool tells the model is missing. */
function missing(def: ToolDef): string {
  switch (def.permission) {
    case "read":
    case "write":
      return `the ${def.permission} permission, and this agent has no ${def.permission} globs`;
    case "bash":
      return 'bash="allow" (or "prompt") in the agent\'s permissions, and this agent has bash="deny"';
    case "memory":
      return 'agent memory in a mode other than memory_mode="fresh", and this call has none';
    default: {
      const never: never = def.permission;
      return never;
    }
  }
}

export class Toolbox {
  readonly specs: ToolSpec[];
  private readonly offered: ReadonlySet<string>;

  private constructor(private readonly ctx: ToolContext) {
    const defs = DEFS.filter((d) => granted(d, ctx));
    this.offered = new Set(defs.map((d) => d.name));
    this.specs = defs.map((d) => ({ name: d.name, description: d.describe(ctx), inputSchema: schemaOf(d) }));
  }

  /** The tools `permissions` grants, with paths resolved against the program's directory. */
  static async create(permissions: Permissions, opts: ToolboxOptions): Promise<Toolbox> {
    const trees = opts.readTrees ?? [];
    const files = permissions.read.length > 0 || permissions.write.length > 0 || trees.length > 0;
    const sandbox = files ? await Sandbox.create(opts.programDir, permissions.read, permissions.write, trees) : null;
    return new Toolbox({ sandbox, lock: new PathLock(), permissions, ...opts, memory: opts.memory ?? null });
  }

  /**
   * Run the tool uses of one turn, TURN_LIMITS.concurrency at a time; results in the order asked. A reply is the
   * model's to write, and thousands of uses in one (each a file read, a search worker) took gigabytes: past
   * TURN_LIMITS.uses they are answered "not run", and past TURN_LIMITS.resultChars of results (in the order
   * asked) the rest are withheld. Never rejects.
   */
  async run(uses: ToolUse[], signal: AbortSignal, onEvent: (e: ToolEvent) => void): Promise<ToolResult[]> {
    // each running search or command listens for the turn's end; the gate bounds them, so Node's leak warning would be wrong
    setMaxListeners(Math.max(getMaxListeners(signal), TURN_LIMITS.concurrency + 10), signal);
    const gate = new Semaphore(TURN_LIMITS.concurrency);
    // (made only for a reply past the limit: an error captures its stack, and every turn of every loop comes here)
    const tooMany = uses.length > TURN_LIMITS.uses ? new ToolFailed(`not run: one reply may ask for at most ${TURN_LIMITS.uses} tool uses; ask for the rest in your next reply`, "too_many") : null;
    const results = await Promise.all(uses.map((u, i) => (tooMany === null || i < TURN_LIMITS.uses ? gate.runExclusive(() => this.runOne(u, signal, onEvent)) : this.runOne(u, signal, onEvent, tooMany))));
    let chars = 0;
    return results.map((r) => {
      chars += r.content.length;
      if (chars <= TURN_LIMITS.resultChars) return r;
      const note = `result withheld: this reply's tool results passed ${TURN_LIMITS.resultChars.toLocaleString("en")} characters (the tool did run); ask for it again, or for less at a time`;
      return { toolUseId: r.toolUseId, content: note, isError: true };
    });
  }

  /** One tool use; `refused`: answered with that failure, not run. */
  private async runOne(use: ToolUse, signal: AbortSignal, onEvent: (e: ToolEvent) => void, refused: ToolFailed | null = null): Promise<ToolResult> {
    const t0 = performance.now();
    let output: (ToolOutput & { exitCode?: number | null }) | null = null;
    let failure: ToolDenied | ToolFailed;
    try {
      if (refused !== null) throw refused;
      output = await this.dispatch(use, signal);
    } catch (err) {
      if (err instanceof ToolDenied || err instanceof ToolFailed) failure = err;
      else {
        // an unexpected error from the file system is still the model's problem to hear about, not a crash
        const e = err as NodeJS.ErrnoException;
        failure = new ToolFailed(`the tool failed: ${e.code ?? e.message ?? String(err)}`, "failed");
      }
    }
    const content = output !== null ? output.text : failure!.message;
    const denied = output === null && failure! instanceof ToolDenied;
    onEvent({
      // as the reply wrote them: a made-up tool name or id is reply text of any length, so only its start is kept
      tool: clipped(use.name, 64),
      tool_use_id: clipped(use.id, 64),
      allowed: !denied,
      denied: denied ? (failure! as ToolDenied).permission : null,
      ok: output !== null,
      error: output !== null ? null : denied ? "denied" : (failure! as ToolFailed).reason,
      path: output?.path ?? pathArg(use.input),
      ms: Math.round((performance.now() - t0) * 1000) / 1000,
      input_bytes: jsonBytes(use.input),
      output_bytes: Buffer.byteLength(content),
      bytes_written: output?.bytesWritten ?? null,
      ...(use.name === "bash" ? { exit_code: output?.exitCode ?? null } : {}),
    });
    return { toolUseId: use.id, content, isError: output === null };
  }

  private async dispatch(use: ToolUse, signal: AbortSignal): Promise<ToolOutput & { exitCode?: number | null }> {
    const def = DEFS.find((d) => d.name === use.name);
    if (!def) {
      const offered = [...this.offered];
      throw new ToolFailed(`there is no tool named ${JSON.stringify(use.name)}; ${offered.length ? `the tools are ${offered.join(", ")}` : "this agent has no tools"}`, "unknown_tool");
    }
    if (!this.offered.has(def.name)) throw new ToolDenied(`permission denied: ${def.name} needs ${missing(def)}`, def.permission);
    return def.run(this.ctx, checkArgs(def, use.input), signal);
  }
}

function schemaOf(def: ToolDef): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const [name, a] of Object.entries(def.args)) {
    properties[name] = a.type === "line" ? { type: "integer", minimum: 1, description: a.description } : { type: "string", description: a.description };
  }
  const required = Object.entries(def.args).filter(([, a]) => a.required).map(([n]) => n);
  return { type: "object", properties, required, additionalProperties: false };
}

/** The model's arguments against the tool's schema: an object, the required fields, the right types, nothing else. */
function checkArgs(def: ToolDef, input: unknown): Record<string, unknown> {
  const bad = (msg: string) => new ToolFailed(`bad arguments for ${def.name}: ${msg}`, "bad_input");
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw bad(`expected an object with ${Object.keys(def.args).join(", ")}`);
  const obj = input as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!Object.hasOwn(def.args, key)) throw bad(`unknown field ${JSON.stringify(key)} (expected ${Object.keys(def.args).join(", ")})`);
  }
  const out: Record<string, unknown> = {};
  for (const [name, a] of Object.entries(def.args)) {
    const v = obj[name];
    if (v === undefined || v === null) {
      if (a.required) throw bad(`${name} is required`);
      continue;
    }
    if (a.type === "string" && typeof v !== "string") throw bad(`${name} must be a string`);
    if (a.type === "line" && (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1)) throw bad(`${name} must be a whole number of at least 1`);
    out[name] = v;
  }
  return out;
}

function pathArg(input: unknown): string | null {
  if (typeof input !== "object" || input === null) return null;
  const o = input as Record<string, unknown>;
  const p = typeof o.path === "string" ? o.path : typeof o.pattern === "string" ? o.pattern : null;
  return p === null ? null : clipped(p, 300);
}

function jsonBytes(v: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(v) ?? "");
  } catch {
    return 0;
  }
}

/** Writes and edits of one file in one turn run one after another (two parallel edits would lose one). */
class PathLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async hold<T>(sb: Sandbox, p: string, run: () => Promise<T>): Promise<T> {
    // two spellings of one file (through a linked folder) queue on the same key
    const key = sb.landing(p);
    if (key === null) return run(); // the tool itself refuses the path
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.then(run, run);
    const tail = mine.catch(() => {});
    this.tails.set(key, tail);
    try {
      return await mine;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
