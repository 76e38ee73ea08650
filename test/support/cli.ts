// Run the real CLI in-process (fast) or as a child process (for signals, crashes and multi-process tests).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli.ts";
import type { CliIO } from "../../src/io.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  stderrIsTTY?: boolean;
  signal?: AbortSignal;
  /** in-process only: what the CLI reads as standard input (default: nothing, as from /dev/null) */
  stdin?: string | Uint8Array;
  /** spawnCli only: a file descriptor for the child's stdout instead of a pipe */
  stdoutFd?: number;
  /** spawnCli only: a file descriptor the child reads as standard input, or "pipe" for child.stdin (default: none) */
  stdinFd?: number | "pipe";
  /** in-process only: a person at a terminal, giving this answer to any question (default: no terminal) */
  answer?: string | null;
  /** in-process only: the person presses Ctrl-C at the question (this controller, the run's signal, is aborted as it is asked) */
  ctrlCAtQuestion?: AbortController;
}

/** All a test takes from the caller's environment: where programs are found and temporary files go. */
const INHERITED = ["PATH", "TMPDIR"];
/** A HOME that cannot exist (its parent is this file): a test that writes user-scope memory passes its own. */
const NO_HOME = path.join(fileURLToPath(import.meta.url), "no-home");

/**
 * The whole environment of the CLI under test, built from nothing rather than copied, so no test depends
 * on what the person running it exported: no NO_COLOR, FORCE_COLOR, TERM, CI, COLUMNS, LANG or LC_*, no
 * ANTHROPIC_* (the simulator answers), TZ=UTC, HOME=NO_HOME. `extra` sets variables (undefined removes one).
 */
export function testEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { HOME: NO_HOME, TZ: "UTC" };
  for (const name of INHERITED) if (process.env[name] !== undefined) env[name] = process.env[name];
  return { ...env, ...extra };
}

/** The CliIO `main` gets in a test: testEnv, not a terminal unless asked; output goes to `write`. */
export function testIO(write: (stream: "out" | "err", s: string) => void, opts: CliOptions = {}): CliIO {
  return {
    stdout: { write: (s: string) => write("out", s) },
    stderr: { write: (s: string) => write("err", s) },
    env: testEnv(opts.env),
    cwd: opts.cwd ?? ROOT,
    stderrIsTTY: opts.stderrIsTTY ?? false,
    signal: opts.signal ?? new AbortController().signal,
    stdin: async function* () {
      yield typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : (opts.stdin ?? new Uint8Array());
    },
    ask:
      opts.answer === undefined
        ? undefined
        : async (question: string) => {
            write("err", question);
            opts.ctrlCAtQuestion?.abort();
            return opts.answer ?? null;
          },
  };
}

export async function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const out = { out: "", err: "" };
  const code = await main(args, testIO((stream, s) => (out[stream] += s), opts));
  return { code, stdout: out.out, stderr: out.err };
}

/** The CLI in a child process, from the TypeScript sources (no build step needed). */
export function spawnCli(args: string[], opts: CliOptions = {}) {
  // tsx is resolved from this file, not from the child's cwd, so children can run anywhere.
  return spawn(process.execPath, ["--import", import.meta.resolve("tsx"), path.join(ROOT, "src/main.ts"), ...args], {
    cwd: opts.cwd ?? ROOT,
    env: testEnv(opts.env),
    stdio: [opts.stdinFd ?? "ignore", opts.stdoutFd ?? "pipe", "pipe"],
  });
}

export function collect(child: ReturnType<typeof spawnCli>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code, sig) => resolve({ code: code ?? (sig ? 128 : -1), stdout, stderr }));
  });
}

/**
 * SIGINT to a spawned CLI `afterMs` after now, then up to `limitMs` for it to exit (SIGKILL past that, so a
 * process that does not hear the signal fails the test rather than hanging it). `exit` is null when it had to
 * be killed; `ms` is how long it took to exit after the signal.
 */
/**
 * Wait until `child` has used `cpuMs` of processor time (from /proc; where there is none, that much wall time):
 * a test of what a process does after a second of computing must not count the seconds a loaded machine
 * keeps it waiting for a core.
 */
export async function afterCpu(child: ReturnType<typeof spawnCli>, cpuMs: number): Promise<void> {
  const tick = 1000 / 100; // USER_HZ: Linux reports 100 clock ticks a second to user space
  const t0 = Date.now();
  for (;;) {
    let used: number;
    try {
      // fields 14 and 15 (utime, stime) counted after the command name's closing parenthesis
      const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      used = (Number(f[11]) + Number(f[12])) * tick;
    } catch {
      used = Date.now() - t0;
    }
    if (used >= cpuMs || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function sigintAfter(child: ReturnType<typeof spawnCli>, afterMs: number, limitMs: number): Promise<{ exit: { code: number | null; signal: NodeJS.Signals | null } | null; stdout: string; ms: number }> {
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  let stdout = "";
  child.stdout!.on("data", (d) => (stdout += d));
  await new Promise((r) => setTimeout(r, afterMs));
  const t0 = Date.now();
  child.kill("SIGINT");
  const exit = await Promise.race([exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), limitMs))]);
  if (exit === null) child.kill("SIGKILL");
  return { exit, stdout, ms: Date.now() - t0 };
}
