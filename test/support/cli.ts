// Run the real CLI in-process (fast) or as a child process (for signals, crashes and multi-process tests).
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli.ts";

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
  /** spawnCli only: a file descriptor for the child's stdout instead of a pipe */
  stdoutFd?: number;
}

/** Environment for tests: no API key (sim is the default), no colours unless asked. */
function testEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.ANTHROPIC_API_KEY;
  delete env.ANTHROPIC_BASE_URL;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export async function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: testEnv(opts.env),
    cwd: opts.cwd ?? ROOT,
    stderrIsTTY: opts.stderrIsTTY ?? false,
    signal: opts.signal ?? new AbortController().signal,
  });
  return { code, stdout, stderr };
}

/** The CLI in a child process, from the TypeScript sources (no build step needed). */
export function spawnCli(args: string[], opts: CliOptions = {}) {
  // tsx is resolved from this file, not from the child's cwd, so children can run anywhere.
  return spawn(process.execPath, ["--import", import.meta.resolve("tsx"), path.join(ROOT, "src/main.ts"), ...args], {
    cwd: opts.cwd ?? ROOT,
    env: testEnv(opts.env),
    stdio: ["ignore", opts.stdoutFd ?? "pipe", "pipe"],
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
