// On a terminal the live progress line is erased before the exports reach stdout and before a warning
// line, so neither lands on top of a half-overwritten "vvm: N calls…" line. Both streams go to one
// ordered log here.
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli.ts";
import { writeProgram } from "../support/program.ts";

const ERASE = "\r\x1b[K";

type Log = { stream: "out" | "err"; text: string }[];

/** Run on a pretend colour terminal with scripted slow replies; both streams in one ordered log. */
async function runOnTerminal(program: string, args: string[] = [], reply = "done"): Promise<{ code: number; log: Log }> {
  const prog = writeProgram({ "main.vvm": program, "slow.yaml": `rules:\n  - { kind: agent, delay: 150ms, reply: ${JSON.stringify(reply)} }\n` });
  const log: Log = [];
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NO_COLOR;
  delete env.ANTHROPIC_API_KEY;
  const code = await main(["run", prog.file("main.vvm"), "--script", prog.file("slow.yaml"), ...args], {
    stdout: { write: (s: string) => log.push({ stream: "out", text: s }) },
    stderr: { write: (s: string) => log.push({ stream: "err", text: s }) },
    env,
    cwd: prog.dir,
    stderrIsTTY: true,
    signal: new AbortController().signal,
  });
  prog.cleanup();
  return { code, log };
}

describe("live progress on a terminal", () => {
  it("is erased before a warning line", async () => {
    // the second call's patch is not JSON: the memory store warns while the progress line is up
    const { code, log } = await runOnTerminal(
      `agent w(model="haiku", memory={ scope: "project", key: "k" })\nfirst = @w \`One.\`(())\nsecond = @w \`Two.\`(())\nexport first\nexport second\n`,
      [],
      "done\n\n```vvm-memory\n{not json\n```\n",
    );
    expect(code).toBe(0);
    const at = log.findIndex((e) => e.text.includes("patch rejected"));
    expect(at).toBeGreaterThan(0);
    expect(log.slice(0, at).some((e) => e.text.includes("in flight"))).toBe(true);
    expect(log[at - 1]!.text).toBe(ERASE);
  });

  it("is erased before the exports are printed", async () => {
    const { code, log } = await runOnTerminal(
      `agent w(model="haiku")\ndef one(x):\n  return @w \`Work on {x}.\`(x)\nout = pmap(range(6), one)\nexport out\n`,
      ["--concurrency", "2"],
    );
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
