// Ctrl-C while `vvm run --input -` waits for standard input (a terminal nobody types into, a pipe that never
// ends) stops the run at the first SIGINT with exit 130; before, the read went on and only a second one ended it.
// So does `--input FIFO` while nobody has opened the named pipe for writing; before, not even SIGKILL's gentler
// kin ended it (the open held a thread that process exit waits for).
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { collect, spawnCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

describe("vvm run --input - and Ctrl-C", () => {
  it("one SIGINT while standard input stays open ends the run with exit 130", async () => {
    // y is never read: W030 on stderr says the program was checked and the inputs are being read
    const p = writeProgram({ "main.vvm": "input x\ny = 1\nexport x\n" });
    const child = spawnCli(["run", "main.vvm", "--provider", "sim", "--input", "-"], { cwd: p.dir, stdinFd: "pipe" });
    const done = collect(child);
    await new Promise<void>((resolve) => child.stderr!.once("data", () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    child.kill("SIGINT");
    const r = await Promise.race([done, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    if (r === null) child.kill("SIGKILL"); // still reading: the failure below, not a hung test
    p.cleanup();
    expect(r).not.toBeNull();
    expect(r!.code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(r!.stdout).toBe("");
    expect(r!.stderr).toMatch(/vvm: interrupted\n$/);
    child.stdin!.destroy();
  }, 20_000);

  it("a named pipe with no writer: one SIGINT ends the run with exit 130; with a writer, it is read", async () => {
    const p = writeProgram({ "main.vvm": "input x\ny = 1\nexport x\n" });
    const fifo = path.join(p.dir, "in.fifo");
    execFileSync("mkfifo", [fifo]);
    const child = spawnCli(["run", "main.vvm", "--provider", "sim", "--input", "in.fifo"], { cwd: p.dir });
    const done = collect(child);
    await new Promise<void>((resolve) => child.stderr!.once("data", () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    child.kill("SIGINT");
    const r = await Promise.race([done, new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    if (r === null) child.kill("SIGKILL");
    expect(r).not.toBeNull();
    expect(r!.code).toBe(130);
    expect(r!.stdout).toBe("");

    const second = spawnCli(["run", "main.vvm", "--provider", "sim", "--input", "in.fifo"], { cwd: p.dir });
    const reader = collect(second);
    // W030 on stderr: checked, and reading the inputs
    await new Promise<void>((resolve) => second.stderr!.once("data", () => resolve()));
    // opening the pipe for writing waits for the reader, which is there
    writeFileSync(fifo, '{"x": [1, 2]}');
    const read = await reader;
    p.cleanup();
    expect(read.code, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual({ x: [1, 2] });
  }, 20_000);
});
