// Filesystem state mode against in-context mode, against the local Messages API stand-in (in a worker):
// a 1,000-call pmap at --concurrency 32, whole `vvm run` each way, interleaved (target ≤ 1.2x), and the
// size of the state.md it leaves (target < 200 KB).
import { readdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { runCli } from "../test/support/cli.ts";
import { RemoteStandin } from "./remote-standin.ts";
import { fileCreateMicros, median, scratchDir } from "./support.ts";

const CALLS = 1000;
const ROUNDS = 3;
const REPLY = "The item was handled. Three findings follow, each with its source. " + "Detail and evidence. ".repeat(40);

export async function run(): Promise<void> {
  const standin = await RemoteStandin.start();
  const dir = scratchDir("state");
  try {
    await standin.configure(0, REPLY);
    const prog = path.join(dir, "fan.vvm");
    await writeFile(
      prog,
      ['agent worker(model="haiku", prompt="You handle one item.")', "def handle(item):", "  return @worker `Handle item {item}.`(item)", `results = pmap(range(${CALLS}), handle)`, "n = len(results)", "export n", ""].join("\n"),
    );
    const once = async (state: string) => {
      const t0 = performance.now();
      const res = await runCli(["run", prog, "--provider", "anthropic", "--concurrency", "32", "--state", state], { cwd: dir, env: standin.env() });
      const ms = performance.now() - t0;
      if (res.code !== 0 || res.stdout.trim() !== `{\n  "n": ${CALLS}\n}`) throw new Error(`${state} run failed (exit ${res.code}): ${res.stderr}`);
      return ms;
    };
    const inContext: number[] = [];
    const filesystem: number[] = [];
    await once("in-context"); // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      // alternating which goes first, so load from elsewhere falls on both alike
      for (const state of r % 2 === 0 ? ["in-context", "filesystem"] : ["filesystem", "in-context"]) (state === "filesystem" ? filesystem : inContext).push(await once(state));
    }
    const a = median(filesystem);
    const b = median(inContext);
    const ratio = a / b;
    process.stdout.write(`${CALLS}-call pmap at concurrency 32, filesystem vs in-context: ${ratio.toFixed(2)}x (target <= 1.2x) ${ratio <= 1.2 ? "ok" : "MISSED"} — filesystem ${a.toFixed(0)} ms, in-context ${b.toFixed(0)} ms (median of ${ROUNDS})\n`);
    // each binding is a new file: what that costs here decides most of the difference (see support.ts)
    process.stdout.write(`disk on this machine (context): making a small file takes ${fileCreateMicros().toFixed(0)} µs (median of 200)\n`);
    const runs = path.join(dir, ".vvm", "runs");
    const sizes = await Promise.all((await readdir(runs)).map(async (id) => (await stat(path.join(runs, id, "state.md"))).size));
    const kb = Math.max(...sizes) / 1024;
    process.stdout.write(`state.md after ${CALLS} calls: ${kb.toFixed(0)} KB (target < 200 KB) ${kb < 200 ? "ok" : "MISSED"}\n`);
  } finally {
    await standin.stop();
  }
}
