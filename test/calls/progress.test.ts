// On a terminal the live progress line is erased before the exports reach stdout, so the JSON never
// lands on top of a half-overwritten "vvm: N calls…" line. Both streams go to one ordered log here.
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli.ts";
import { writeProgram } from "../support/program.ts";

const ERASE = "\r\x1b[K";

describe("live progress and stdout", () => {
  it("erases the progress line before printing the exports", async () => {
    const prog = writeProgram({
      "main.vvm": `agent w(model="haiku")\ndef one(x):\n  return @w \`Work on {x}.\`(x)\nout = pmap(range(6), one)\nexport out\n`,
      "slow.yaml": "rules:\n  - { kind: agent, delay: 150ms, reply: done }\n",
    });
    const log: { stream: "out" | "err"; text: string }[] = [];
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NO_COLOR;
    delete env.ANTHROPIC_API_KEY;
    const code = await main(["run", prog.file("main.vvm"), "--script", prog.file("slow.yaml"), "--concurrency", "2"], {
      stdout: { write: (s: string) => log.push({ stream: "out", text: s }) },
      stderr: { write: (s: string) => log.push({ stream: "err", text: s }) },
      env,
      cwd: prog.dir,
      stderrIsTTY: true,
      signal: new AbortController().signal,
    });
    prog.cleanup();
    expect(code).toBe(0);
    const firstOut = log.findIndex((e) => e.stream === "out");
    const before = log.slice(0, firstOut).filter((e) => e.stream === "err").map((e) => e.text);
    // progress was drawn during the run…
    expect(before.some((t) => t.includes("in flight"))).toBe(true);
    // …and the last thing on stderr before stdout output is the erase sequence
    expect(before.at(-1)).toBe(ERASE);
    expect(JSON.parse(log.filter((e) => e.stream === "out").map((e) => e.text).join(""))).toEqual({ out: Array(6).fill("done") });
  });
});
