// Running one bash tool command: `/bin/sh -c` in its own process group, standard input empty, output
// captured up to a cap. The whole group is killed when the command times out, prints too much, or the call
// is cancelled, and when the shell itself exits (a background job does not outlive its command). A job
// that left the group (`setsid`, a daemon's double fork) still carries the command's mark in its
// environment: on Linux every process of ours with that mark is killed too.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

export interface CommandLimits {
  timeoutMs: number;
  /** bytes of output shown from the start, and again from the end */
  headBytes: number;
  tailBytes: number;
  /** a command that prints more than this (stdout and stderr together) is killed */
  maxOutputBytes: number;
}

interface CommandEnd {
  /** how it ended: on its own, or killed for one of three reasons; `failed`: it could not be started */
  end: "exited" | "timeout" | "output_cap" | "aborted" | "failed";
  exitCode: number | null;
  signal: string | null;
  /** stdout and stderr as they came, the middle left out past the cap */
  output: string;
  outputBytes: number;
  /** a start failure's code (ENOENT, EACCES, …) */
  error: string | null;
}

/** Commands still running, by process group and mark: killed if vvm itself exits first (a second Ctrl-C), since they are not in the terminal's group. */
const running = new Map<number, string>();
let exitHook = false;

/** The variable each command's processes inherit, with a value new for every command. */
const MARK_VARIABLE = "VVM_BASH_COMMAND";

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * Kill every process whose environment holds `MARK_VARIABLE=mark`: what a command started and took out
 * of its process group. Linux only (/proc); elsewhere the process group is all there is. Only our own
 * processes' environments can be read, so nobody else's is touched. A few rounds: one may fork meanwhile.
 */
function killMarked(mark: string): void {
  const needle = Buffer.from(`${MARK_VARIABLE}=${mark}\0`);
  for (let round = 0; round < 3; round++) {
    let pids: string[];
    try {
      pids = readdirSync("/proc").filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
    } catch {
      return;
    }
    let found = 0;
    for (const pid of pids) {
      let environ: Buffer;
      try {
        environ = readFileSync(`/proc/${pid}/environ`);
      } catch {
        continue; // gone, or not ours
      }
      // a whole variable: at the start, or right after the NUL that ends the one before
      const at = environ.indexOf(needle);
      if (at < 0 || (at > 0 && environ[at - 1] !== 0)) continue;
      found++;
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // already gone
      }
    }
    if (found === 0) return;
  }
}

function killAll(pid: number, mark: string): void {
  killGroup(pid);
  killMarked(mark);
}

export function runCommand(command: string, opts: { cwd: string; env: Record<string, string>; signal: AbortSignal; limits: CommandLimits }): Promise<CommandEnd> {
  const { limits, signal } = opts;
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => running.forEach((mark, pid) => killAll(pid, mark)));
  }
  return new Promise((resolve) => {
    const head: Buffer[] = [];
    let headLen = 0;
    let tail = Buffer.alloc(0);
    let total = 0;
    let end: CommandEnd["end"] = "exited";
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let settled = false;
    let lingering: NodeJS.Timeout | undefined;
    const mark = randomBytes(12).toString("hex");
    const child = spawn("/bin/sh", ["-c", command], { cwd: opts.cwd, env: { ...opts.env, [MARK_VARIABLE]: mark }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const pid = child.pid;
    if (pid !== undefined) running.set(pid, mark);
    const kill = (why: CommandEnd["end"]) => {
      if (end === "exited") end = why;
      if (pid !== undefined) killAll(pid, mark);
    };
    const timer = setTimeout(() => kill("timeout"), limits.timeoutMs);
    const onAbort = () => kill("aborted");
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (headLen < limits.headBytes) {
        const part = chunk.subarray(0, limits.headBytes - headLen);
        head.push(part);
        headLen += part.length;
        chunk = chunk.subarray(part.length);
      }
      if (chunk.length > 0) {
        tail = Buffer.concat([tail, chunk]);
        if (tail.length > limits.tailBytes) tail = tail.subarray(tail.length - limits.tailBytes);
      }
      if (total > limits.maxOutputBytes) kill("output_cap");
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(lingering);
      signal.removeEventListener("abort", onAbort);
      if (pid !== undefined) running.delete(pid);
      const skipped = total - headLen - tail.length;
      const output = Buffer.concat(head).toString("utf8") + (skipped > 0 ? `\n…[${skipped.toLocaleString("en")} bytes of output left out]…\n` : "") + tail.toString("utf8");
      resolve({ end: error === null ? end : "failed", exitCode, signal: exitSignal, output, outputBytes: total, error });
    };
    child.on("error", (err: NodeJS.ErrnoException) => finish(err.code ?? err.message));
    child.on("exit", (code, sig) => {
      exitCode = code;
      exitSignal = sig;
      // what the command left running goes with it, in its group or marked; one that escaped both and
      // still holds the output pipes is not waited for beyond a moment
      if (pid !== undefined) killAll(pid, mark);
      lingering = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(null);
      }, 500);
    });
    child.on("close", () => finish(null));
  });
}
