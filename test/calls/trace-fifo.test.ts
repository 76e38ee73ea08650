// `--trace FIFO`: with nothing reading it, vvm run says so at once (exit 64); before, opening it blocked the
// main thread, where not even Ctrl-C is heard, so the run hung until killed. With a reader, the trace flows.
import { execFileSync } from "node:child_process";
import { createReadStream } from "node:fs";
import { describe, expect, it } from "vitest";
import { collect, spawnCli, type CliResult } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

/** The child's result, or null when it was still running after `ms` (it is killed then). */
async function within(child: ReturnType<typeof spawnCli>, ms: number): Promise<CliResult | null> {
  const r = await Promise.race([collect(child), new Promise<null>((resolve) => setTimeout(() => resolve(null), ms))]);
  if (r === null) child.kill("SIGKILL");
  return r;
}

describe("vvm run --trace FIFO", () => {
  it("a FIFO nobody reads is exit 64 at once; one with a reader gets the trace", async () => {
    const p = writeProgram({ "main.vvm": "x = 1\nexport x\n" });
    execFileSync("mkfifo", [p.file("t.fifo")]);
    const lonely = await within(spawnCli(["run", "main.vvm", "--provider", "sim", "--trace", "t.fifo"], { cwd: p.dir }), 8000);
    expect(lonely).toEqual({ code: 64, stdout: "", stderr: "vvm: --trace t.fifo: a FIFO that nothing reads (start its reader first)\n" });

    let text = "";
    const reader = createReadStream(p.file("t.fifo"), "utf8").on("data", (d) => (text += String(d)));
    const ended = new Promise<void>((resolve) => reader.on("close", () => resolve()));
    // the reader opens the FIFO on a worker thread: wait until it has, so the run finds it there
    await new Promise((resolve) => setTimeout(resolve, 300));
    const read = await within(spawnCli(["run", "main.vvm", "--provider", "sim", "--trace", "t.fifo"], { cwd: p.dir }), 8000);
    await ended;
    p.cleanup();
    expect(read?.code).toBe(0);
    expect(JSON.parse(read!.stdout)).toEqual({ x: 1 });
    expect(text.split("\n")[0]).toMatch(/^\{"type":"run"/);
    expect(text).toMatch(/"type":"summary"/);
  }, 30_000);
});
