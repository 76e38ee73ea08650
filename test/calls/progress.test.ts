// What stderr looks like on and off a terminal. Colour follows NO_COLOR, FORCE_COLOR and TERM=dumb; the
// progress line follows the terminal alone. On a terminal the live line is erased before the exports
// reach stdout and before a warning line, so neither lands on top of a half-overwritten "vvm: N calls…"
// line. Both streams go to one ordered log here.
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli.ts";
import { progressStyle, useColor } from "../../src/io.ts";
import { testIO } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

const ERASE = "\r\x1b[K";
// eslint-disable-next-line no-control-regex
const COLOUR = /\x1b\[[0-9;]*m/;

// the second call's patch is not JSON: the memory store warns while the progress line is up
const WARNS = `agent w(model="haiku", memory={ scope: "project", key: "k" })\nfirst = @w \`One.\`(())\nsecond = @w \`Two.\`(())\nexport first\nexport second\n`;
const BAD_PATCH = "done\n\n```vvm-memory\n{not json\n```\n";
const PMAP = `agent w(model="haiku")\ndef one(x):\n  return @w \`Work on {x}.\`(x)\nout = pmap(range(6), one)\nexport out\n`;

type Log = { stream: "out" | "err"; text: string }[];

interface RunOptions {
  args?: string[];
  reply?: string;
  /** stderr is a terminal unless false */
  tty?: boolean;
  env?: Record<string, string | undefined>;
  /** how long each scripted reply takes */
  delay?: string;
}

/** Run with scripted slow replies; both streams in one ordered log, and stderr on its own. */
async function run(program: string, { args = [], reply = "done", tty = true, env = {}, delay = "150ms" }: RunOptions = {}) {
  const prog = writeProgram({ "main.vvm": program, "slow.yaml": `rules:\n  - { kind: agent, delay: ${delay}, reply: ${JSON.stringify(reply)} }\n` });
  const log: Log = [];
  const io = testIO((stream, text) => log.push({ stream, text }), { cwd: prog.dir, stderrIsTTY: tty, env });
  const code = await main(["run", prog.file("main.vvm"), "--script", prog.file("slow.yaml"), ...args], io);
  prog.cleanup();
  const stderr = log.filter((e) => e.stream === "err").map((e) => e.text).join("");
  return { code, log, stderr };
}

describe("colour and progress settings", () => {
  it.each([
    [{}, true, true, "live"],
    [{}, false, false, null],
    [{ NO_COLOR: "1" }, true, false, "live"],
    // an empty NO_COLOR is unset (no-color.org)
    [{ NO_COLOR: "" }, true, true, "live"],
    [{ FORCE_COLOR: "0" }, true, false, "live"],
    [{ FORCE_COLOR: "false" }, true, false, "live"],
    [{ FORCE_COLOR: "1" }, false, true, null],
    [{ FORCE_COLOR: "3" }, false, true, null],
    [{ FORCE_COLOR: "1", NO_COLOR: "1" }, false, false, null],
    [{ TERM: "dumb" }, true, false, "lines"],
    [{ TERM: "dumb", FORCE_COLOR: "1" }, true, true, "lines"],
    [{ TERM: "dumb" }, false, false, null],
  ])("%o, stderr a terminal %s: colour %s, progress %s", (env, tty, color, progress) => {
    const io = testIO(() => {}, { env, stderrIsTTY: tty });
    expect(useColor(io)).toBe(color);
    expect(progressStyle(io)).toBe(progress);
  });
});

describe("live progress on a terminal", () => {
  it("is erased before a warning line", async () => {
    const { code, log } = await run(WARNS, { reply: BAD_PATCH });
    expect(code).toBe(0);
    const at = log.findIndex((e) => e.text.includes("patch rejected"));
    expect(at).toBeGreaterThan(0);
    expect(log.slice(0, at).some((e) => e.text.includes("in flight"))).toBe(true);
    expect(log[at - 1]!.text).toBe(ERASE);
    expect(log[at]!.text).toMatch(COLOUR);
  });

  it("is erased before the exports are printed", async () => {
    const { code, log } = await run(PMAP, { args: ["--concurrency", "2"] });
    expect(code).toBe(0);
    const firstOut = log.findIndex((e) => e.stream === "out");
    const before = log.slice(0, firstOut).filter((e) => e.stream === "err").map((e) => e.text);
    // progress was drawn during the run…
    expect(before.some((t) => t.includes("in flight"))).toBe(true);
    // …and the last thing on stderr before stdout output is the erase sequence
    expect(before.at(-1)).toBe(ERASE);
    expect(JSON.parse(log.filter((e) => e.stream === "out").map((e) => e.text).join(""))).toEqual({ out: Array(6).fill("done") });
  });

  it("shows calls started just after a draw as in flight while they run, not at their end", async () => {
    // the pmap's start draws the line; both calls start within the next 100 ms and take 800 ms
    const { code, stderr } = await run(PMAP.replace("range(6)", "range(2)"), { args: ["--concurrency", "2"], delay: "800ms" });
    expect(code).toBe(0);
    expect(stderr).toContain("vvm: 0/2 items; 0 calls, 0 judges done, 2 in flight\r");
  });

  it.each([{ NO_COLOR: "1" }, { FORCE_COLOR: "0" }])("stays with %o, which only takes the colour away", async (env) => {
    const { code, stderr } = await run(WARNS, { reply: BAD_PATCH, env });
    expect(code).toBe(0);
    expect(stderr).toContain(`${ERASE}vvm: `);
    expect(stderr).toMatch(/vvm: \d+ calls, 0 judges done, \d+ in flight\r/);
    expect(stderr).toContain("warning");
    expect(stderr).not.toMatch(COLOUR);
  });
});

describe("progress elsewhere", () => {
  it("is plain lines with TERM=dumb: no cursor, erase or colour sequence", async () => {
    const { code, stderr } = await run(PMAP, { args: ["--concurrency", "2"], env: { TERM: "dumb" } });
    expect(code).toBe(0);
    expect(stderr).toMatch(/^vvm: \d+\/6 items[^;]*; \d+ calls, 0 judges done, \d+ in flight\n/m);
    expect(stderr).not.toContain("\r");
    expect(stderr).not.toContain("\x1b");
  });

  it("is left out off a terminal, where only FORCE_COLOR brings colour", async () => {
    const plain = await run(WARNS, { reply: BAD_PATCH, tty: false });
    expect(plain.stderr).toContain("patch rejected");
    expect(plain.stderr).not.toContain("in flight");
    expect(plain.stderr).not.toContain("\x1b");
    const forced = await run(WARNS, { reply: BAD_PATCH, tty: false, env: { FORCE_COLOR: "1" } });
    expect(forced.stderr).not.toContain("in flight");
    expect(forced.stderr).toMatch(COLOUR);
  });
});
