// The exports on stdout are JSON a person often reads on a terminal: C1 and bidi controls in a value are
// written as \u escapes (still the same JSON value), like the C0 controls JSON.stringify escapes itself.
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

describe("vvm run's exports JSON", () => {
  it("escapes C1 and bidi controls, and parses back to the same value", async () => {
    const text = "csi \u009b2J, override \u202edcba, isolate \u2066x\u2069, esc \u001b";
    const p = writeProgram({ "main.vvm": "input x\nexport x\n" });
    const r = await runCli(["run", "main.vvm", "--provider", "sim", "--arg", `x=${text}`], { cwd: p.dir });
    p.cleanup();
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(String.raw`csi \u009b2J, override \u202edcba, isolate \u2066x\u2069, esc \u001b`);
    expect(JSON.parse(r.stdout)).toEqual({ x: text });
  });
});
