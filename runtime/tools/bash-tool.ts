// The bash tool: one shell command in the program's directory, offered when the agent's permissions say
// bash="allow" or "prompt" (spec/agent-calls.md §8 "bash"). "prompt" asks a person through the callback the
// CLI injects (the runtime never touches the terminal); without one nobody can be asked and the use is denied.
import type { ToolOutput } from "./file-tools.ts";
import { stopIfAborted, ToolDenied, ToolFailed } from "./sandbox.ts";
import { commandEnv } from "./shell-env.ts";
import { runCommand, type CommandLimits } from "./shell.ts";

/** What a person is asked before a command runs under bash="prompt". */
export interface CommandQuestion {
  agent: string;
  command: string;
  /** the directory it would run in */
  cwd: string;
}

/** How the bash tool runs commands in this run (given by the CLI as plain values). */
export interface ShellSettings {
  /** the environment vvm was started with; credentials are withheld from commands (shell-env.ts) */
  env: Readonly<Record<string, string | undefined>>;
  /** asks a person whether a command may run (bash="prompt"); null: no terminal, so "prompt" denies */
  confirm: ((q: CommandQuestion) => Promise<boolean>) | null;
  /** why no command runs in this run whatever the agent's bash mode (vvm test without --allow-bash), or null */
  refused?: string | null;
  limits?: Partial<CommandLimits>;
}

export const COMMAND_LIMITS: CommandLimits = {
  timeoutMs: 2 * 60_000,
  headBytes: 15_000,
  tailBytes: 15_000,
  maxOutputBytes: 16 * 2 ** 20,
};

const MAX_COMMAND_CHARS = 100_000;

interface BashContext {
  agent: string;
  mode: "allow" | "prompt";
  /** the program's directory: where commands run */
  cwd: string;
  shell: ShellSettings;
}

export async function bashTool(ctx: BashContext, args: { command: string }, signal: AbortSignal): Promise<ToolOutput & { exitCode: number | null }> {
  const { command } = args;
  if (command.trim() === "") throw new ToolFailed("command is empty", "bad_input");
  if (command.length > MAX_COMMAND_CHARS) throw new ToolFailed(`command is longer than ${MAX_COMMAND_CHARS.toLocaleString("en")} characters`, "bad_input");
  if (command.includes("\0")) throw new ToolFailed("command contains a NUL character", "bad_input");
  if (ctx.shell.refused) throw new ToolDenied(`permission denied: ${ctx.shell.refused}; the command did not run`, "bash");
  if (ctx.mode === "prompt") {
    const { confirm } = ctx.shell;
    if (confirm === null) {
      throw new ToolDenied('permission denied: this agent has bash="prompt", and there is no terminal to ask (standard input or stderr is not a terminal), so the command did not run', "bash");
    }
    if (!(await confirm({ agent: ctx.agent, command, cwd: ctx.cwd }))) {
      throw new ToolDenied('permission denied: this agent has bash="prompt", and the person at the terminal said no; the command did not run', "bash");
    }
    stopIfAborted(signal);
  }
  const limits = { ...COMMAND_LIMITS, ...ctx.shell.limits };
  const r = await runCommand(command, { cwd: ctx.cwd, env: commandEnv(ctx.shell.env).env, signal, limits });
  const so_far = r.output === "" ? " (it printed nothing)" : `; its output so far:\n${r.output}`;
  switch (r.end) {
    case "exited": {
      const how = r.exitCode !== null ? `exit code ${r.exitCode}` : `ended by signal ${r.signal ?? "?"}`;
      return { text: `${r.output}${r.output === "" || r.output.endsWith("\n") ? "" : "\n"}[bash: ${how}]`, exitCode: r.exitCode };
    }
    case "timeout":
      throw new ToolFailed(`the command did not finish within ${limits.timeoutMs / 1000}s and was killed, with everything it started${so_far}`, "timeout");
    case "output_cap":
      throw new ToolFailed(`the command printed more than ${limits.maxOutputBytes / 2 ** 20} MiB and was killed, with everything it started; send its output to a file or filter it${so_far}`, "too_large");
    case "aborted":
      throw new ToolFailed("stopped: the call was cancelled or ran out of time; the command was killed", "aborted");
    case "failed":
      throw new ToolFailed(`the command could not be started (${r.error ?? "unknown error"})`, "failed");
    default: {
      const never: never = r.end;
      return never;
    }
  }
}
