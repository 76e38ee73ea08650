// Start-up of the installed CLI (the esbuild bundle in dist/), each in fresh processes:
//  1. `vvm run` of a one-line program with an API key set (so the Anthropic provider and its SDK load)
//     vs the floor any Node program calling Claude pays, `node` importing the SDK (target ≤ 1.3x);
//     `vvm check` of the same file is printed for context.
//  2. What the first memory call adds to a run (loading the store and the secret rules, the first
//     commit): one call with memory vs the same call without, the model answering in 100 ms (target ≤ 50 ms).
import { execFile, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { startStandin } from "../test/support/standin.ts";
import { builtCli, median, ROOT, scratchDir } from "./support.ts";

const RUNS = 21;
const TARGET = 1.3;

function timed(args: string[], env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: "utf8" });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return ms;
}

export async function run(): Promise<void> {
  const cli = builtCli();
  const dir = scratchDir("startup");
  const file = path.join(dir, "one.vvm");
  await writeFile(file, "x = 1\nexport x\n");
  // a key and an address nothing listens on: the provider is built, no request is made
  const env = { PATH: process.env.PATH, HOME: dir, ANTHROPIC_API_KEY: "sk-ant-bench", ANTHROPIC_BASE_URL: "http://127.0.0.1:9" };
  const sdk = ["--input-type=module", "-e", 'await import("@anthropic-ai/sdk")'];
  const floor: number[] = [];
  const vvm: number[] = [];
  const check: number[] = [];
  // interleaved, so load from other processes hits every side alike
  for (let i = 0; i < RUNS; i++) {
    floor.push(timed(sdk, env));
    vvm.push(timed([cli, "run", file], env));
    check.push(timed([cli, "check", file], env));
  }
  const ratio = median(vvm) / median(floor);
  process.stdout.write(
    `vvm run of a one-line program: ${median(vvm).toFixed(0)} ms vs ${median(floor).toFixed(0)} ms for node importing the SDK, ratio ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? "ok" : "MISSED"}\n`,
  );
  process.stdout.write(`vvm check of the same program (context): ${median(check).toFixed(0)} ms\n`);
  await firstMemoryCall(cli, dir);
}

const exec = promisify(execFile);

async function firstMemoryCall(cli: string, dir: string): Promise<void> {
  const standin = await startStandin();
  const patch = JSON.stringify({ digest: "## Next\n- check the deploy\n", retain: ["B deploy checked"] });
  standin.setHandler(() => ({ type: "text", text: `Done.\n\n\`\`\`vvm-memory\n${patch}\n\`\`\``, delayMs: 100 }));
  try {
    const program = (memory: string) => `agent a(model="haiku"${memory})\nr = @a \`Check the deploy.\`(())\nexport r\n`;
    await writeFile(path.join(dir, "plain.vvm"), program(""));
    await writeFile(path.join(dir, "memory.vvm"), program(', memory={ scope: "project", key: "k" }'));
    const env = { PATH: process.env.PATH, HOME: dir, ANTHROPIC_API_KEY: "sk-ant-bench", ANTHROPIC_BASE_URL: standin.url };
    const timedRun = async (file: string) => {
      const t0 = performance.now();
      await exec(process.execPath, [cli, "run", file], { cwd: dir, env });
      return performance.now() - t0;
    };
    const plain: number[] = [];
    const memory: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      plain.push(await timedRun("plain.vvm"));
      memory.push(await timedRun("memory.vvm"));
    }
    const added = median(memory) - median(plain);
    process.stdout.write(
      `first memory call of a run: ${median(memory).toFixed(0)} ms vs ${median(plain).toFixed(0)} ms without memory, adds ${added.toFixed(0)} ms (target <= 50 ms) ${added <= 50 ? "ok" : "MISSED"}\n`,
    );
  } finally {
    await standin.stop();
  }
}
