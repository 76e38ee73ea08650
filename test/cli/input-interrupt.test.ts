// Ctrl-C while `vvm run --input -` waits for standard input (a terminal nobody types into, a pipe that never
// ends) stops the run at the first SIGINT with exit 130; before, the read went on and only a second one ended it.
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
});
