// The model layer `vvm run` builds: provider selection, the call runtime, memory store, trace file,
// live progress and the closing summary line. Nothing here writes to stdout.
import { statSync } from "node:fs";
import path from "node:path";
import pc from "picocolors";
import { displayPath, homeDir, progressStyle, UsageError, useColor, warningLine, type CliIO, type ProgressMode } from "../io.ts";
import type { ProgressPort } from "../../runtime/progress-port.ts";
import { createNarrator, type CliNarrator } from "./narration.ts";
import type { AgentRuntime } from "../../runtime/agent-runtime.ts";
// type-only: erased, so the store itself still loads on first use (lazyMemoryStore)
import type { MemoryStore, MemoryStoreOptions } from "../../runtime/memory/index.ts";
import type { Provider } from "../../runtime/provider.ts";
import type { ScriptProvider } from "../../runtime/providers/script.ts";
import { noTrace, type TraceSink } from "../../runtime/trace.ts";
import { MODEL_ALIASES, resolveModel, type ModelAlias, type ModelOverrides } from "../../runtime/providers/models.ts";
import { SimProvider } from "../../runtime/providers/sim.ts";
import { Accounting, Progress } from "../../runtime/calls/accounting.ts";
import { Costs } from "../../runtime/calls/costs.ts";
import { priceTable } from "./prices-file.ts";
import { printable, vvmLine } from "../printable.ts";
import { CallRuntime, DEFAULT_RETRY_TUNING } from "../../runtime/calls/runtime.ts";
import { FileTrace } from "../../runtime/calls/trace-file.ts";
import type { RunDirectory } from "../../runtime/state/run-dir.ts";
import { openRunState, type StateMode } from "./run-state.ts";
import { commandConfirm } from "./confirm-command.ts";
import type { LoadedSkill } from "../../runtime/skills.ts";

interface ModelLayer {
  agents: AgentRuntime;
  trace: TraceSink;
  /** `--state filesystem`: this run's directory (null in-context) */
  runState: RunDirectory | null;
  /** `--script`: the script provider, whose findings (calls no rule answered, rules never used) close() reports; else null */
  script: ScriptProvider | null;
  /** Erase the live progress line for good: the program is done, and stdout output must not land on top of it. */
  stopProgress(): void;
  /** what the interpreter tells how far each pmap is (the progress line); undefined when none is drawn */
  progress: ProgressPort | undefined;
  /** `--narrate`: what the interpreter tells each binding (the call layer has it too); undefined without it */
  narrator: CliNarrator | undefined;
  /** the calls and judges --max-cost refused (the run then exits 1) */
  costRefusals(): number;
  close(): Promise<void>;
}

/** The `vvm run` flags this layer reads. */
export interface ModelFlags {
  provider: "auto" | "anthropic" | "sim" | "script";
  script?: string;
  /** `--strict-script`: a call no rule answers fails instead of going to the simulator; unused rules are listed */
  strictScript?: boolean;
  judgeModel: string;
  trace?: string;
  /** milliseconds */
  lockTimeout: number;
  memoryBudget: number;
  /** `--max-cost`: dollars; absent, no cap */
  maxCost?: number;
  /** `--usage`: a table per agent after the summary line */
  usage?: boolean;
  /** `--progress` (default auto: on a terminal only) */
  progress?: ProgressMode;
  /** `--narrate`: each binding, call and judge told on stderr as it happens */
  narrate?: boolean;
  /** `--state`: where agent replies live (filesystem: binding files, and calls return refs) */
  state?: StateMode;
  /** not a flag: `vvm test` keeps every memory inside its test's folder (MemoryStoreOptions.confine) */
  confineMemory?: string;
  /** not a flag: why the bash tool runs no command in this run (`vvm test` without --allow-bash) */
  commandsRefused?: string;
}

export type ModelLayerOptions = ModelFlags & {
  entryPath: string;
  io: CliIO;
  /** the program's skills, as the checker loaded them */
  skills?: Map<string, LoadedSkill>;
  /** `--input FILE` (read already): opening the trace must not truncate it */
  input?: string;
  /** the program's modules (absolute paths; the entry among them): opening the trace must not truncate one */
  modules?: readonly string[];
};

export async function createModelLayer(opts: ModelLayerOptions): Promise<ModelLayer> {
  const { io } = opts;
  const color = pc.createColors(useColor(io));
  // Set once progress exists; a warning erases the progress line first (it is redrawn on the next change).
  let progress: Progress | null = null;
  const warn = (message: string) => {
    progress?.erase();
    // a warning may quote a memory file, a model's reply or a path: none of their control characters reach the terminal
    io.stderr.write(warningLine(io, message));
  };
  const provider = await selectProvider(opts);
  const script = provider.name === "script" ? (provider as ScriptProvider) : null;
  const maxTokens = envInt(io.env, "VVM_MAX_TOKENS");
  const retryBase = envInt(io.env, "VVM_RETRY_BASE_MS", 0);
  const models = modelOverrides(io.env);

  let fileTrace: FileTrace | null = null;
  if (opts.trace) {
    // `-` reads as standard output (as it is standard input for --input); a file named "-" would appear instead
    if (opts.trace === "-") throw new UsageError("--trace -: the trace goes to a file, and standard output holds the exports: name one, such as --trace run.jsonl");
    const file = path.resolve(io.cwd, opts.trace);
    const clash = traceClash(file, opts);
    if (clash !== null) throw new UsageError(`--trace ${opts.trace}: that is ${clash}; choose another file`);
    try {
      fileTrace = new FileTrace(file, opts.trace, warn);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENXIO") throw new UsageError(`--trace ${opts.trace}: a FIFO that nothing reads (start its reader first)`);
      throw new UsageError(`--trace ${opts.trace}: cannot write the trace file (${code ?? (err as Error).message})`);
    }
    fileTrace.emit({
      type: "run",
      started_at: new Date().toISOString(),
      program: opts.entryPath,
      provider: provider.name,
      judge_model: resolveModel(opts.judgeModel, models),
    });
  }
  const trace: TraceSink = fileTrace ?? noTrace;

  // VVM_PRICES adds or replaces models' rates; a bad file is a usage error before anything runs
  const accounting = new Accounting(new Costs(priceTable(io.env, io.cwd), opts.maxCost ?? null));
  const style = progressStyle(io, opts.progress);
  progress = style ? new Progress(accounting, (s) => io.stderr.write(s), style) : null;
  const memory = lazyMemoryStore({
    entryDir: path.dirname(opts.entryPath),
    homeDir: homeDir(io),
    lockTimeoutMs: opts.lockTimeout,
    budgetTokens: opts.memoryBudget,
    warn,
    showPath: (file) => displayPath(file, io),
    confine: opts.confineMemory,
  });
  const runState = opts.state === "filesystem" ? await openRunState(opts.entryPath, io, warn) : null;
  const narrator = opts.narrate
    ? createNarrator({
        line: (text) => {
          progress?.erase();
          io.stderr.write(text + "\n");
        },
        color: useColor(io),
        showPath: (file) => displayPath(file, io),
      })
    : undefined;
  const agents = new CallRuntime({
    narrator,
    provider,
    memory,
    judgeModel: opts.judgeModel,
    models,
    trace,
    accounting,
    maxTokens,
    // tool paths and permission globs are relative to the program's directory
    programDir: path.dirname(opts.entryPath),
    runState,
    // bash tool commands: this environment less its credentials (runtime/tools/shell-env.ts); bash="prompt" asks here
    shell: { env: io.env, confirm: commandConfirm(io.ask, color, () => progress?.erase()), refused: opts.commandsRefused ?? null },
    skills: opts.skills ?? new Map(),
    retry: retryBase === undefined ? DEFAULT_RETRY_TUNING : { ...DEFAULT_RETRY_TUNING, baseMs: retryBase },
  });

  let closed = false;
  return {
    agents,
    trace,
    runState,
    script,
    stopProgress: () => progress?.clear(),
    progress: progress?.fanOuts,
    narrator,
    costRefusals: () => accounting.costs.refused,
    async close() {
      if (closed) return;
      closed = true;
      progress?.clear();
      try {
        await memory.close();
      } finally {
        if (fileTrace) {
          fileTrace.emit({ type: "summary", ...accounting.traceFields() });
          fileTrace.close();
        }
        if (script) {
          const { scriptReport } = await import("./script-report.ts");
          io.stderr.write(scriptReport(script, opts.script ?? "the script", (f) => displayPath(f, io), color.yellow));
        }
        // model ids come from the program: printed escaped
        io.stderr.write(printable(accounting.summary(provider.name), false) + "\n");
        if (opts.usage) io.stderr.write(accounting.costs.table().map((l) => printable(l, false) + "\n").join(""));
      }
    },
  };
}

/**
 * Which file the run reads the trace would be, or null. Opening the trace truncates it, so it is compared by
 * identity (device and inode, through links), not by name: a link or a second hard link to the program
 * named as the trace file would otherwise empty the program.
 */
function traceClash(trace: string, opts: ModelLayerOptions): string | null {
  const target = fileIdentity(trace);
  if (target === null) return null; // a new file clashes with nothing
  const read: [string | undefined, string][] = [
    [opts.entryPath, "the program itself"],
    [opts.script, "the --script file"],
    [opts.input === "-" ? undefined : opts.input, "the --input file"],
  ];
  // a module the program imports, and a skill's instructions, are the program's sources as much as its entry
  for (const m of opts.modules ?? []) if (m !== opts.entryPath) read.push([m, `a module of the program (${displayPath(m, opts.io)})`]);
  for (const s of opts.skills?.values() ?? []) if (s.ok) read.push([path.join(s.dir, "SKILL.md"), `the SKILL.md of skill '${s.name}'`]);
  for (const [file, what] of read) if (file !== undefined && fileIdentity(path.resolve(opts.io.cwd, file)) === target) return what;
  return null;
}

function fileIdentity(file: string): string | null {
  try {
    const st = statSync(file);
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}

async function selectProvider(opts: ModelLayerOptions): Promise<Provider> {
  const { io } = opts;
  const key = io.env.ANTHROPIC_API_KEY;
  let kind = opts.provider;
  if (opts.strictScript && opts.script === undefined) throw new UsageError("--strict-script needs --script FILE");
  if (opts.script !== undefined) {
    if (kind !== "auto" && kind !== "script") throw new UsageError(`--script cannot be combined with --provider ${kind}`);
    kind = "script";
  }
  switch (kind) {
    case "script": {
      if (opts.script === undefined) throw new UsageError("--provider script needs --script FILE");
      const { loadScript, ScriptError, ScriptProvider } = await import("../../runtime/providers/script.ts");
      try {
        return new ScriptProvider(await loadScript(path.resolve(io.cwd, opts.script), opts.script), { strict: opts.strictScript });
      } catch (err) {
        if (err instanceof ScriptError) throw new UsageError(err.message);
        throw err;
      }
    }
    case "anthropic":
      if (!key) throw new UsageError("--provider anthropic needs ANTHROPIC_API_KEY in the environment (get a key at https://console.anthropic.com)");
      return await anthropic(io, key);
    case "sim":
      return new SimProvider();
    case "auto":
      if (key) return await anthropic(io, key);
      io.stderr.write("vvm: ANTHROPIC_API_KEY is not set, so this run is offline: the simulator answers every call and judge. Set ANTHROPIC_API_KEY to call Claude (--provider sim hides this line)\n");
      return new SimProvider();
    default: {
      const never: never = kind;
      throw new UsageError(`unknown provider ${String(never)}`);
    }
  }
}

async function anthropic(io: CliIO, apiKey: string): Promise<Provider> {
  const baseURL = io.env.ANTHROPIC_BASE_URL || undefined;
  if (baseURL !== undefined && !URL.canParse(baseURL)) {
    throw new UsageError(`ANTHROPIC_BASE_URL=${baseURL} is not a URL (expected e.g. https://api.anthropic.com)`);
  }
  const { AnthropicProvider } = await import("../../runtime/providers/anthropic.ts");
  // The CLI's environment is the process environment for a real run; tests pass their own.
  return new AnthropicProvider({
    apiKey,
    baseURL,
    log: (message) => io.stderr.write(vvmLine(message)),
  });
}

// The SDK, YAML and secretlint cost hundreds of milliseconds to load: programs that never use them
// (most runs under sim, every run without memory) should not pay for them at start-up.
function lazyMemoryStore(opts: MemoryStoreOptions): MemoryStore {
  let store: Promise<MemoryStore> | null = null;
  const get = () => (store ??= import("../../runtime/memory/index.ts").then((m) => m.createMemoryStore(opts)));
  return {
    open: async (...args) => (await get()).open(...args),
    close: async () => {
      if (store) await (await store).close();
    },
  };
}

/** VVM_MODEL_HAIKU, VVM_MODEL_SONNET, VVM_MODEL_OPUS: a model id used instead of the alias's own. */
function modelOverrides(env: NodeJS.ProcessEnv): ModelOverrides {
  const out: ModelOverrides = {};
  for (const alias of Object.keys(MODEL_ALIASES) as ModelAlias[]) {
    const id = env[`VVM_MODEL_${alias.toUpperCase()}`];
    if (id) out[alias] = id;
  }
  return out;
}

function envInt(env: NodeJS.ProcessEnv, name: string, min = 1): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name}=${raw}: expected a whole number of at least ${min}`);
  return n;
}
