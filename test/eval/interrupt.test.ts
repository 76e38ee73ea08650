// Ctrl-C (the run's signal) stops long loops and pending calls promptly with an `interrupted` outcome.
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli.ts";
import { afterCpu, collect, sigintAfter, spawnCli, testIO } from "../support/cli.ts";
import { runWithFakes } from "../support/fake-agents.ts";
import { programFile } from "../support/program.ts";

/** Pure computation that never ends and never suspends on its own. */
const ENDLESS = `def f(a, b):
  return a + b
i = 0
while true:
  i = f(i, 1)
`;

describe("interrupt", () => {
  it("stops an endless synchronous loop", async () => {
    const file = programFile(ENDLESS);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const t0 = Date.now();
    const r = await runWithFakes(file, {}, { signal: ac.signal });
    expect(r.outcome.kind).toBe("interrupted");
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("stops during a pending agent call, skipping finally blocks and later statements", async () => {
    const file = programFile(`agent w(model="haiku")
try:
  x = @w \`slow\`(())
finally:
  y = @w \`cleanup\`(())
z = @w \`after\`(())
`);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await runWithFakes(file, { delayMs: 10_000 }, { signal: ac.signal });
    expect(r.outcome.kind).toBe("interrupted");
    expect(r.agents.calls().map((c) => c.task)).toEqual(["slow"]);
  });

  it("stops a long for loop over a huge list", async () => {
    const file = programFile(`n = 0
for i in range(3000000):
  n = n + 1
`);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const r = await runWithFakes(file, {}, { signal: ac.signal });
    expect(r.outcome.kind).toBe("interrupted");
  });
});

describe("interrupt through the CLI", () => {
  it("SIGINT stops `vvm run` in an endless loop with exit 130", async () => {
    const file = programFile(ENDLESS);
    const child = spawnCli(["run", file]);
    const done = collect(child);
    // wait until the program is running (the offline notice is printed before the first statement)
    await new Promise<void>((resolve) => child.stderr!.once("data", () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    child.kill("SIGINT");
    const r = await done;
    expect(r.code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(r.stdout).toBe("");
  });

  it("SIGINT ends `vvm run` at once while a function computes without a pause (exponential recursion)", async () => {
    // no loop and no call that suspends: the event loop never turns, so no handler could hear the signal
    const file = programFile(`def f(n):
  if n == 0:
    return 1
  return f(n - 1) + f(n - 1)
x = f(60)
export x
`);
    // the program computes for well over a second before the signal comes (start-up takes under one second of CPU)
    const child = spawnCli(["run", file, "--provider", "sim"]);
    await afterCpu(child, 2500);
    const r = await sigintAfter(child, 0, 5000);
    expect(r.exit).toEqual({ code: null, signal: "SIGINT" });
    expect(r.ms).toBeLessThan(3000);
    expect(r.stdout).toBe("");
    // 2.5 s of the child's CPU can take four times that long on a machine the rest of the suite loads
  }, 30_000);

  it("a Ctrl-C heard before the check begins (while vvm starts, or reads the files) stops it there, not after a long parse", async () => {
    // parsed, this would be E001; a run would print it and exit 2
    const file = programFile("x = 1 +\n");
    for (const cmd of ["check", "run"]) {
      const heard = new AbortController();
      heard.abort();
      let out = "";
      let longSyncs = 0;
      const io = { ...testIO((_stream, s) => (out += s), { signal: heard.signal }), ctrlCEndsAtOnce: () => longSyncs++ };
      expect(await main([cmd, file], io), cmd).toBe(130);
      expect(longSyncs, cmd).toBe(0);
      expect(out, cmd).not.toContain("E001");
    }
  });

  it("SIGINT ends vvm check and vvm run at once while they check a huge program", async () => {
    // parsing and resolving 300,000 statements takes seconds with no turn of the event loop: the signal was
    // heard after the whole check, or never (vvm check printed its warnings and exited 0)
    const file = programFile(Array.from({ length: 300_000 }, (_, i) => `x${i} = ${i} + 1`).join("\n") + "\n");
    for (const cmd of ["check", "run"]) {
      const r = await sigintAfter(spawnCli([cmd, file, "--strict"]), 1800, 8000);
      // killed by the signal; exit 130 when a slow start-up let it come before the check began
      expect([{ code: null, signal: "SIGINT" }, { code: 130, signal: null }], cmd).toContainEqual(r.exit);
      expect(r.ms).toBeLessThan(1500);
      expect(r.stdout).toBe("");
    }
  }, 30_000);
});
