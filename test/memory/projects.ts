// Projects for the `vvm memory` command tests: a program whose agent keeps a memory, the script that
// answers it, the checks every command's result gets, and a `vvm run` committing patches in a child
// process while a test acts on the same memory.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { expect } from "vitest";
import { collect, spawnCli, type CliResult } from "../support/cli.ts";
import type { Standin } from "../support/standin.ts";
import { patchReply } from "./helpers.ts";

export const agent = (key: string) => `agent scribe(model="haiku", prompt="Keep the on-call notes.", memory={ scope: "project", key: ${JSON.stringify(key)} })`;
export const program = (key: string, task: string) => [agent(key), `r = @scribe \`${task}\`()`, "export r"].join("\n");
export const block = (patch: string) => "```vvm-memory\n" + patch + "\n```";

/** A --script file: each rule answers the task that contains `match` with "Noted: <match>." and `reply` below it. */
export function scriptFor(rules: [match: string, reply: string][]): string {
  return ["rules:", ...rules.flatMap(([match, reply]) => ["  - kind: agent", `    match: ${JSON.stringify(match)}`, "    reply: |", `      Noted: ${match}.`, ...reply.split("\n").map((l) => "      " + l)])].join("\n");
}

export function ok(res: CliResult): CliResult {
  if (res.code !== 0) throw new Error(`exit ${res.code}\n${res.stdout}\n${res.stderr}`);
  return res;
}

/** A user's mistake never ends in a JavaScript stack trace. */
export const noStack = (res: CliResult) => expect(res.stderr).not.toMatch(/\n\s+at .+:\d+/);

/**
 * `vvm run` in a child process, committing 30 patches to memory "busy" (one per item, each a new digest and
 * one fact) against the stand-in; `running()` turns false once it has exited.
 */
export async function busyRun(dir: string, standin: Standin): Promise<{ done: Promise<CliResult>; running: () => boolean }> {
  const items = Array.from({ length: 30 }, (_, i) => i + 1);
  await writeFile(path.join(dir, "busy.vvm"), [agent("busy"), "def note(n):", "  return @scribe `Record item {n}.`(n)", `out = map([${items.join(", ")}], note)`, "export out"].join("\n"));
  let n = 0;
  standin.setHandler(() => {
    const i = ++n;
    return { type: "text", delayMs: 5, text: patchReply({ digest: `## Count\n- item ${i} recorded\n`, retain: [`item ${i} recorded`] }, `done ${i}`) };
  });
  const done = collect(spawnCli(["run", "busy.vvm"], { cwd: dir, env: standin.env() }));
  let running = true;
  void done.then(() => (running = false));
  return { done, running: () => running };
}

/** Each `vvm memory` command line refused with its exit code and a message matching `message`, with nothing on stdout and no stack trace. */
export async function expectRefused(cases: [args: string[], code: number, message: RegExp][], memory: (args: string[]) => Promise<CliResult>): Promise<void> {
  for (const [args, code, message] of cases) {
    const res = await memory(args);
    expect({ args, code: res.code }).toEqual({ args, code });
    expect(res.stderr).toMatch(message);
    expect(res.stdout).toBe("");
    noStack(res);
  }
}
