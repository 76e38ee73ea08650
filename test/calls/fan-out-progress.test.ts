// Progress with a total: pmap reports its items through the run's progress port, the line shows the
// outermost pmap's done/total and an estimate, and --progress decides where the line is drawn.
import { describe, expect, it } from "vitest";
import { FanOuts } from "../../runtime/calls/fan-outs.ts";
import { runProgram } from "../../runtime/interpreter/index.ts";
import type { ProgressPort } from "../../runtime/progress-port.ts";
import { noTrace } from "../../runtime/trace.ts";
import { makeError } from "../../runtime/values.ts";
import { checkProgram } from "../../src/check.ts";
import { main } from "../../src/cli.ts";
import { progressStyle } from "../../src/io.ts";
import { FakeAgents } from "../support/fake-agents.ts";
import { testIO } from "../support/cli.ts";
import { programFile, writeProgram } from "../support/program.ts";

const WORKER = 'agent w(model="haiku")\ndef work(x):\n  return @w `item {x}`(x)\n';

/** A progress port that records what the interpreter tells it. */
function recorder() {
  const events: string[] = [];
  const port: ProgressPort = {
    fanOut(total) {
      events.push(`start ${total}`);
      return { itemDone: () => events.push("item"), end: () => events.push("end") };
    },
  };
  return { port, events };
}

async function run(source: string, port: ProgressPort, agents = new FakeAgents({})) {
  const checked = await checkProgram(programFile(source));
  return runProgram(checked, { agents, trace: noTrace, signal: new AbortController().signal, concurrency: 2, progress: port });
}

describe("pmap reports its progress", () => {
  it("its total when it starts, each item as it ends, and its end", async () => {
    const { port, events } = recorder();
    const outcome = await run(`${WORKER}out = pmap(range(5), work)\nexport out\n`, port);
    expect(outcome.kind).toBe("ok");
    expect(events).toEqual(["start 5", "item", "item", "item", "item", "item", "end"]);
  });

  it("its end when an item fails and the rest never start", async () => {
    const { port, events } = recorder();
    const agents = new FakeAgents({ replies: [["item 0", makeError("custom", "no")]] });
    await run(`${WORKER}out = pmap(range(6), work)\nexport out\n`, port, agents);
    expect(events[0]).toBe("start 6");
    expect(events.at(-1)).toBe("end");
    expect(events.filter((e) => e === "item").length).toBeLessThan(6);
  });

  it("nested pmaps each report their own", async () => {
    const { port, events } = recorder();
    await run(`${WORKER}def row(x):\n  return pmap(range(2), work)\nout = pmap(range(3), row)\nexport out\n`, port);
    expect(events.filter((e) => e.startsWith("start"))).toEqual(["start 3", "start 2", "start 2", "start 2"]);
    expect(events.filter((e) => e === "end")).toHaveLength(4);
  });
});

describe("the fan-out text", () => {
  it("done/total of the outermost pmap, an estimate once an item is done, and how many more run", () => {
    let now = 0;
    let changes = 0;
    const f = new FanOuts(() => changes++, () => now);
    expect(f.text()).toBeNull();
    const outer = f.fanOut(50);
    expect(f.text()).toBe("0/50 items");
    now = 4000;
    for (let i = 0; i < 10; i++) outer.itemDone();
    // 400 ms an item so far, 40 items to go
    expect(f.text()).toBe("10/50 items, ~16s left");
    const inner = f.fanOut(3);
    expect(f.text()).toBe("10/50 items, ~16s left, 1 more pmap");
    inner.end();
    inner.end();
    now = 60_000;
    expect(f.text()).toBe("10/50 items, ~4m00s left");
    outer.end();
    expect(f.text()).toBeNull();
    expect(changes).toBe(1 + 10 + 1 + 1 + 1);
  });
});

describe("--progress", () => {
  it.each([
    ["auto", true, {}, "live"],
    ["auto", false, {}, null],
    ["auto", true, { TERM: "dumb" }, "lines"],
    ["always", true, {}, "live"],
    ["always", true, { TERM: "dumb" }, "lines"],
    ["always", false, {}, "lines"],
    ["always", false, { NO_COLOR: "1" }, "lines"],
    ["never", true, {}, null],
    ["never", false, {}, null],
  ] as const)("%s, stderr a terminal %s, %o: %s", (mode, tty, env, style) => {
    expect(progressStyle(testIO(() => {}, { env, stderrIsTTY: tty }), mode)).toBe(style);
  });

  async function cli(args: string[], tty: boolean, env: Record<string, string> = {}) {
    const prog = writeProgram({ "main.vvm": `${WORKER}out = pmap(range(6), work)\nexport out\n`, "slow.yaml": "rules:\n  - { kind: agent, delay: 1100ms, reply: done }\n" });
    let stderr = "";
    let stdout = "";
    const io = testIO((stream, s) => (stream === "err" ? (stderr += s) : (stdout += s)), { cwd: prog.dir, stderrIsTTY: tty, env });
    const code = await main(["run", prog.file("main.vvm"), "--script", prog.file("slow.yaml"), "--concurrency", "3", ...args], io);
    prog.cleanup();
    return { code, stderr, stdout };
  }

  it("always: plain lines off a terminal, with the pmap's total, never on stdout", async () => {
    const res = await cli(["--progress", "always"], false);
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/^vvm: 0\/6 items; 0 calls, 0 judges done, \d in flight\n/m);
    expect(res.stderr).toMatch(/^vvm: 3\/6 items, ~\ds left; 3 calls, 0 judges done, \d in flight\n/m);
    expect(res.stderr).not.toContain("\r");
    expect(res.stderr).not.toContain("\x1b");
    expect(JSON.parse(res.stdout)).toEqual({ out: Array(6).fill("done") });
  }, 10_000);

  it("never: no progress line, even on a terminal", async () => {
    const res = await cli(["--progress", "never"], true);
    expect(res.code).toBe(0);
    expect(res.stderr).not.toContain("in flight");
    expect(res.stderr).not.toContain("\r");
  }, 10_000);

  it("refuses a value it does not know", async () => {
    const res = await cli(["--progress", "sometimes"], false);
    expect(res.code).toBe(64);
    expect(res.stderr).toMatch(/--progress.*sometimes/);
  });
});
