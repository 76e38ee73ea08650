// The call layer's tool loop, offline: script rules answer with tool calls and then with text, and the real
// file tools run in a temporary program directory.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { MemoryPort } from "../../runtime/memory-port.ts";
import { ProviderError, type ModelReply, type ModelRequest, type Provider } from "../../runtime/provider.ts";
import { parseScript, ScriptError, ScriptProvider } from "../../runtime/providers/script.ts";
import { SimProvider, ZERO_USAGE } from "../../runtime/providers/sim.ts";
import { VvmRaise, type Value } from "../../runtime/values.ts";
import { perm } from "../../stdlib/basics.ts";
import { errorOf } from "../support/errors.ts";
import { useTempDir } from "../support/fixtures.ts";
import { agent, callReq, harness, site, fakeReport } from "../calls/helpers.ts";

const root = useTempDir("vvm-tool-loop-");
let n = 0;
/** A fresh program directory with a few files. */
async function programDir(): Promise<string> {
  const dir = path.join(root, `p${++n}`);
  await mkdir(path.join(dir, "docs"), { recursive: true });
  await writeFile(path.join(dir, "docs", "a.md"), "alpha\nbeta\n");
  await writeFile(path.join(dir, "docs", "b.md"), "gamma\n");
  await writeFile(path.join(dir, "secret.txt"), "hunter2\n");
  return dir;
}

const script = (yaml: string) => new ScriptProvider(parseScript(yaml, "test.yaml"));
const perms = (kw: Record<string, Value>) => perm([], new Map(Object.entries(kw)), null, site());

/** A provider that records every request and answers from a list of functions (one per turn). */
class Recorder implements Provider {
  readonly name = "recorder";
  readonly requests: ModelRequest[] = [];
  constructor(private readonly turns: ((req: ModelRequest) => Promise<ModelReply> | ModelReply)[]) {}
  async complete(req: ModelRequest): Promise<ModelReply> {
    this.requests.push(req);
    const f = this.turns[Math.min(this.requests.length - 1, this.turns.length - 1)];
    return f(req);
  }
  async judge(): Promise<never> {
    throw new Error("no judges here");
  }
}

const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
function toolTurn(...calls: { name: string; input: unknown }[]): ModelReply {
  const toolUses = calls.map((c, i) => ({ id: `t${i}_${Math.random().toString(36).slice(2, 8)}`, ...c }));
  return { text: "", model: "m", usage, requestId: "r", stopReason: "tool_use", toolUses, content: toolUses.map((u) => ({ type: "tool_use" as const, ...u })) };
}
function textTurn(text: string): ModelReply {
  return { text, model: "m", usage, requestId: "r", stopReason: "end_turn" };
}

describe("the tool loop", () => {
  it("runs the tools a reply asks for, sends the results back in order, and returns the final text", async () => {
    const dir = await programDir();
    const p = new Recorder([
      () => toolTurn({ name: "read_file", input: { path: "docs/a.md" } }, { name: "list_files", input: { pattern: "docs/*.md" } }),
      () => textTurn("two files, alpha first"),
    ]);
    const { rt, acc, trace } = harness(p, { programDir: dir });
    const out = await rt.call(callReq(agent("reader", { permissions: perms({ read: ["docs/**"] }) }), "Summarise the docs.", null));
    expect(out).toBe("two files, alpha first");
    expect(p.requests).toHaveLength(2);
    // offered: the three read tools, not the write tools
    expect(p.requests[0].tools!.map((t) => t.name)).toEqual(["read_file", "list_files", "search_files"]);
    expect(p.requests[0].history ?? []).toEqual([]);
    const h = p.requests[1].history!;
    expect(h).toHaveLength(2);
    expect(h[0].role).toBe("assistant");
    expect(h[1]).toMatchObject({ role: "tool_results" });
    const results = h[1].role === "tool_results" ? h[1].results : [];
    expect(results.map((r) => [r.content, r.isError])).toEqual([
      ["alpha\nbeta", false],
      ["docs/a.md\ndocs/b.md", false],
    ]);
    // every turn's tokens are counted; each request is an attempt
    expect(acc.callAttempts).toBe(2);
    expect(acc.inputTokens).toBe(20);
    expect(acc.outputTokens).toBe(10);
    // one event per tool use, as each ends (they run at the same time, so in no fixed order)
    const tools = trace.events.filter((e) => e.type === "tool");
    expect(tools.map((e) => [e.tool, e.allowed, e.ok, e.turn, e.path]).sort()).toEqual([
      ["list_files", true, true, 1, "docs"],
      ["read_file", true, true, 1, "docs/a.md"],
    ]);
    for (const e of tools) {
      expect(e).toMatchObject({ call: 1, agent: "reader", denied: null, error: null });
      expect(typeof e.ms).toBe("number");
      expect(e.input_bytes).toBeGreaterThan(0);
      expect(e.output_bytes).toBeGreaterThan(0);
    }
    // no file contents anywhere in the trace
    expect(JSON.stringify(trace.events)).not.toMatch(/alpha|beta|gamma/);
    expect(trace.events.find((e) => e.type === "call")).toMatchObject({ ok: true, attempts: 2, turns: 2, tool_uses: 2 });
    expect(trace.events.filter((e) => e.type === "call_attempt").map((e) => e.turn)).toEqual([1, 2]);
  });

  it("runs several tool uses of one turn at the same time, answering in the order asked", async () => {
    const dir = await programDir();
    // a search that backtracks for a while, asked for before a quick read: run in turn, the read would end last
    await writeFile(path.join(dir, "docs", "slow.md"), "a".repeat(24) + "!\n");
    const p = new Recorder([
      () => toolTurn({ name: "search_files", input: { query: "^(a+)+$", pattern: "docs/slow.md" } }, { name: "read_file", input: { path: "docs/b.md" } }),
      () => textTurn("done"),
    ]);
    const { rt, trace } = harness(p, { programDir: dir });
    expect(await rt.call(callReq(agent("s", { permissions: perms({ read: ["**"] }) }), "find", null))).toBe("done");
    const events = trace.events.filter((e) => e.type === "tool");
    expect(events.map((e) => e.tool)).toEqual(["read_file", "search_files"]);
    expect(events[1].ms as number).toBeGreaterThan(events[0].ms as number);
    const results = p.requests[1].history![1];
    expect(results.role === "tool_results" && results.results.map((r) => r.content)).toEqual([
      'no line matches "^(a+)+$" in 1 readable file matching "docs/slow.md"',
      "gamma",
    ]);
  });

  it("an agent without permissions is offered no tools; a tool use anyway is answered as denied and the loop goes on", async () => {
    const dir = await programDir();
    const p = new Recorder([() => toolTurn({ name: "read_file", input: { path: "secret.txt" } }, { name: "write_file", input: { path: "x", content: "y" } }), () => textTurn("ok")]);
    const { rt, trace } = harness(p, { programDir: dir });
    expect(await rt.call(callReq(agent("plain"), "t", null))).toBe("ok");
    expect(p.requests[0].tools).toEqual([]);
    const r = p.requests[1].history![1];
    expect(r.role === "tool_results" && r.results.map((x) => [x.isError, x.content])).toEqual([
      [true, "permission denied: read_file needs the read permission, and this agent has no read globs"],
      [true, "permission denied: write_file needs the write permission, and this agent has no write globs"],
    ]);
    expect(trace.events.filter((e) => e.type === "tool").map((e) => [e.allowed, e.denied])).toEqual([
      [false, "read"],
      [false, "write"],
    ]);
  });

  it("an unknown tool and arguments that do not fit the schema are tool errors, and the loop goes on", async () => {
    const dir = await programDir();
    const p = new Recorder([
      () =>
        toolTurn(
          { name: "run_shell", input: { cmd: "rm -rf /" } },
          { name: "read_file", input: { file: "docs/a.md" } },
          { name: "read_file", input: "docs/a.md" },
          { name: "read_file", input: { path: "docs/a.md", offset: 0 } },
          { name: "read_file", input: { path: 7 } },
          { name: "write_file", input: { path: "docs/new.md" } },
        ),
      () => textTurn("recovered"),
    ]);
    const { rt, trace } = harness(p, { programDir: dir });
    expect(await rt.call(callReq(agent("a", { permissions: perms({ read: ["docs/**"], write: ["docs/**"] }) }), "t", null))).toBe("recovered");
    const r = p.requests[1].history![1];
    const texts = r.role === "tool_results" ? r.results.map((x) => [x.isError, x.content]) : [];
    expect(texts).toEqual([
      [true, 'there is no tool named "run_shell"; the tools are read_file, list_files, search_files, write_file, edit_file'],
      [true, 'bad arguments for read_file: unknown field "file" (expected path, offset, limit)'],
      [true, "bad arguments for read_file: expected an object with path, offset, limit"],
      [true, "bad arguments for read_file: offset must be a whole number of at least 1"],
      [true, "bad arguments for read_file: path must be a string"],
      [true, "bad arguments for write_file: content is required"],
    ]);
    expect(trace.events.filter((e) => e.type === "tool").map((e) => e.error)).toEqual(["unknown_tool", "bad_input", "bad_input", "bad_input", "bad_input", "bad_input"]);
  });

  it("running out of max_turns is error(kind=\"rejected\") saying so; the last turn's tools are not run", async () => {
    const dir = await programDir();
    const p = new Recorder([() => toolTurn({ name: "write_file", input: { path: `docs/t${Math.random()}.md`, content: "x" } })]);
    const { rt, acc, trace } = harness(p, { programDir: dir });
    const out = await rt.call(callReq(agent("looper", { permissions: perms({ write: ["docs/**"] }), max_turns: 3 }), "t", null));
    const e = errorOf(out)!;
    expect(e.kind).toBe("rejected");
    expect(e.message).toBe("the agent still asked for tools after 3 turns (max_turns=3), so the call ended without a final answer; raise max_turns= on the agent or give it a smaller task");
    expect(e.data).toMatchObject({ attempts: 3, turns: 3 });
    expect(p.requests).toHaveLength(3);
    expect(trace.events.filter((x) => x.type === "tool")).toHaveLength(2);
    expect(acc.failedCalls).toBe(1);
  });

  it("max_turns defaults to 20 and must be a whole number of at least 1", async () => {
    const dir = await programDir();
    const p = new Recorder([() => toolTurn({ name: "list_files", input: { pattern: "*" } })]);
    const { rt } = harness(p, { programDir: dir });
    const out = await rt.call(callReq(agent("a", { permissions: perms({ read: ["**"] }) }), "t", null));
    expect(errorOf(out)!.message).toMatch(/after 20 turns \(max_turns=20\)/);
    expect(p.requests).toHaveLength(20);
    // the value is named as the program wrote it: the text "3" is not shown as the number 3, nor a list as its items
    const shown: [Value, string][] = [
      [0, "0"],
      [1.5, "1.5"],
      ["3", '"3"'],
      [[1], "a list"],
      [new Map([["n", 1]]), "an object"],
    ];
    for (const [bad, as] of shown) {
      const err = await rt.call(callReq(agent("a", { max_turns: bad }), "t", null)).catch((x) => x);
      expect(err).toBeInstanceOf(VvmRaise);
      expect((err as VvmRaise).message).toBe(`thrown: agent max_turns= must be a whole number of at least 1, got ${as}`);
    }
  });

  it("an API failure mid-loop is the call's error value; files already written stay written and the trace lists them", async () => {
    const dir = await programDir();
    const p = new Recorder([
      () => toolTurn({ name: "write_file", input: { path: "docs/out.md", content: "written\n" } }),
      () => {
        throw new ProviderError("spawn_failed", "the API is overloaded (HTTP 529)", true, 529, "req_9");
      },
    ]);
    const { rt, trace } = harness(p, { programDir: dir });
    const out = await rt.call(callReq(agent("w", { permissions: perms({ write: ["docs/**"] }) }), "t", null, { retry: 1 }));
    const e = errorOf(out)!;
    expect(e.kind).toBe("spawn_failed");
    expect(e.data).toMatchObject({ status: 529, attempts: 3, turns: 2 });
    expect(await readFile(path.join(dir, "docs/out.md"), "utf8")).toBe("written\n");
    expect(trace.events.filter((x) => x.type === "tool")).toEqual([expect.objectContaining({ tool: "write_file", path: "docs/out.md", bytes_written: 8, ok: true })]);
  });

  it("a retry inside the loop repeats the failed request, never the tools before it", async () => {
    const dir = await programDir();
    let fails = 1;
    const p = new Recorder([
      () => toolTurn({ name: "edit_file", input: { path: "docs/a.md", old: "beta", new: "BETA" } }),
      () => {
        if (fails-- > 0) throw new ProviderError("rejected", "rate limited (HTTP 429)", true, 429);
        return textTurn("edited");
      },
    ]);
    const { rt, trace } = harness(p, { programDir: dir });
    expect(await rt.call(callReq(agent("e", { permissions: perms({ read: ["docs/*.md"], write: ["docs/*.md"] }) }), "t", null, { retry: 2 }))).toBe("edited");
    expect(await readFile(path.join(dir, "docs/a.md"), "utf8")).toBe("alpha\nBETA\n");
    expect(trace.events.filter((x) => x.type === "tool")).toHaveLength(1);
    expect(trace.events.filter((x) => x.type === "call_attempt").map((x) => [x.turn, x.attempt, x.ok])).toEqual([
      [1, 1, true],
      [2, 1, false],
      [2, 2, true],
    ]);
  });

  it("timeout= covers the whole loop: a later turn that would run past it ends the call as timeout, not retried", async () => {
    const dir = await programDir();
    const p = script(`
rules:
  - { kind: agent, turn: 1, delay: 700ms, tool_use: [{ name: list_files, input: { pattern: "*" } }] }
  - { kind: agent, turn: 2, delay: 700ms, tool_use: [{ name: list_files, input: { pattern: "*" } }] }
  - { kind: agent, reply: "late" }
`);
    const { rt } = harness(p, { programDir: dir });
    // each request alone fits in the timeout; the loop does not
    const out = await rt.call(callReq(agent("slow", { permissions: perms({ read: ["**"] }) }), "t", null, { timeout: "1200ms", retry: 3 }));
    const e = errorOf(out)!;
    expect(e.kind).toBe("timeout");
    expect(e.message).toMatch(/no final reply within 1200ms \(turn 2\); timeout= covers the whole tool loop/);
    // turn 2 was cut at the deadline and not tried again (retry=3 notwithstanding)
    expect(e.data).toMatchObject({ attempts: 2, turns: 2 });
  });

  it("cancellation mid-loop stops it: the call is cancelled and no further request is made", async () => {
    const dir = await programDir();
    const ac = new AbortController();
    const p = new Recorder([
      () => toolTurn({ name: "list_files", input: { pattern: "**" } }),
      () => {
        ac.abort();
        return new Promise<ModelReply>(() => {}); // never answers: only the abort ends it
      },
    ]);
    const { rt, acc } = harness(p, { programDir: dir });
    const out = await rt.call(callReq(agent("c", { permissions: perms({ read: ["**"] }) }), "t", null, {}, { signal: ac.signal }));
    expect(errorOf(out)!.kind).toBe("cancelled");
    expect(p.requests).toHaveLength(2);
    expect(acc.inFlight).toBe(0);
  });

  it("cancellation while a tool runs (a search that backtracks for ever) stops the tool and the call", async () => {
    const dir = await programDir();
    await writeFile(path.join(dir, "docs", "long.md"), "a".repeat(40) + "!\n");
    const ac = new AbortController();
    const p = new Recorder([() => toolTurn({ name: "search_files", input: { query: "^(a+)+$" } }), () => textTurn("never")]);
    const { rt } = harness(p, { programDir: dir });
    setTimeout(() => ac.abort(), 200);
    const t0 = performance.now();
    const out = await rt.call(callReq(agent("c", { permissions: perms({ read: ["**"] }) }), "t", null, {}, { signal: ac.signal }));
    expect(errorOf(out)!.kind).toBe("cancelled");
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(p.requests).toHaveLength(1);
  });

  it("memory sees only the final text, after the loop", async () => {
    const dir = await programDir();
    const completed: string[] = [];
    const memory: MemoryPort = {
      async open() {
        return { context: "CTX", report: fakeReport(), complete: async (t: string) => (completed.push(t), t.replace(/\n```vvm-memory[\s\S]*```/, "")), release: async () => {} };
      },
    };
    const p = new Recorder([() => toolTurn({ name: "read_file", input: { path: "docs/b.md" } }), () => textTurn('saw gamma\n```vvm-memory\n{"digest": "x"}\n```')]);
    const { rt } = harness(p, { programDir: dir, memory });
    const out = await rt.call(callReq(agent("m", { permissions: perms({ read: ["docs/**"] }), memory: new Map([["scope", "project"], ["key", "k"]]) }), "t", null));
    expect(out).toBe("saw gamma");
    expect(completed).toEqual(['saw gamma\n```vvm-memory\n{"digest": "x"}\n```']);
    expect(p.requests[1].memoryContext).toBe("CTX");
  });

  it("the simulator answers without tools even when the agent has some", async () => {
    const dir = await programDir();
    const { rt } = harness(new SimProvider(), { programDir: dir });
    expect(await rt.call(callReq(agent("sim", { permissions: perms({ read: ["**"], write: ["**"] }) }), "Do it.", null))).toBe("[sim:sim] Do it.");
  });

  it("a malformed permissions value raises thrown at the call before any request", async () => {
    const { rt, acc } = harness(new SimProvider());
    const cases: [Value, RegExp][] = [
      ["read", /agent permissions= must be perm\(\.\.\.\) or an object of permissions, got a string/],
      [new Map<string, Value>([["reed", ["x"]]]), /unknown key 'reed'/],
      [new Map<string, Value>([["read", "docs/**"]]), /permissions read= must be a list of glob strings/],
      [new Map<string, Value>([["read", new Map()]]), /permissions read= must be a list of glob strings, got an object$/],
      [new Map<string, Value>([["write", ["out/**", 3]]]), /permissions write= must be a list of glob strings, got a list whose item 1 is a number$/],
      [new Map<string, Value>([["bash", "yes"]]), /permissions bash= must be "allow", "deny" or "prompt", got "yes"/],
      [new Map<string, Value>([["bash", ["allow"]]]), /permissions bash= must be "allow", "deny" or "prompt", got a list$/],
      [new Map<string, Value>([["write", ["!secret/**"]]]), /the glob "!secret\/\*\*" is negated/],
      [new Map<string, Value>([["read", ["a".repeat(70_000)]]]), /permissions read=: a glob is 70000 characters long \(at most 4096\)/],
    ];
    for (const [v, message] of cases) {
      const err = await rt.call(callReq(agent("a", { permissions: v }), "t", null)).catch((x) => x);
      expect(err).toBeInstanceOf(VvmRaise);
      expect((err as VvmRaise).message).toMatch(message);
    }
    expect(acc.callAttempts).toBe(0);
  });

  it("the trace says what an agent asked for that is not granted yet", async () => {
    const { rt, trace } = harness(new SimProvider());
    await rt.call(callReq(agent("a", { permissions: perms({ bash: "allow", network: "prompt", execute: ["*.sh"] }) }), "t", null));
    expect(trace.events.find((e) => e.type === "call")!.not_granted).toEqual(['network="prompt"', "execute"]);
  });
});

describe("script rules with tool calls", () => {
  it("answer with tool calls, then (by turn) with text", async () => {
    const dir = await programDir();
    const p = script(`
rules:
  - kind: agent
    agent: scribe
    turn: 1
    usage: { input_tokens: 7, output_tokens: 3 }
    tool_use:
      - { name: write_file, input: { path: notes/today.md, content: "# Today\\n" } }
      - { name: read_file, input: { path: docs/a.md, limit: 1 } }
  - { kind: agent, agent: scribe, turn: 2, reply: "noted" }
`);
    const { rt, acc } = harness(p, { programDir: dir });
    const a = agent("scribe", { permissions: perms({ read: ["docs/**"], write: ["notes/**"] }) });
    expect(await rt.call(callReq(a, "Take notes.", null))).toBe("noted");
    expect(await readFile(path.join(dir, "notes/today.md"), "utf8")).toBe("# Today\n");
    expect(acc.inputTokens).toBe(7);
    // the next call starts at turn 1 again
    expect(await rt.call(callReq(a, "Again.", null))).toBe("noted");
  });

  it("validates tool_use and turn strictly", () => {
    const bad: [string, RegExp][] = [
      [`- { kind: agent, tool_use: [] }`, /rule 1: tool_use: expected a list of tool calls/],
      [`- { kind: agent, tool_use: [{ input: {} }] }`, /rule 1: tool_use: call 1: name: expected the tool's name/],
      [`- { kind: agent, tool_use: [{ name: x, args: {} }] }`, /rule 1: tool_use: call 1: unknown field "args"/],
      [`- { kind: predicate, tool_use: [{ name: x }] }`, /rule 1: kind: a tool_use cannot answer a predicate call/],
      [`- { kind: agent, reply: hi, tool_use: [{ name: x }] }`, /give exactly one answer .* not reply and tool_use/],
      [`- { kind: agent, turn: 0, reply: hi }`, /rule 1: turn: expected a whole number of at least 1/],
      [`- { kind: judge, turn: 2, verdict: true }`, /rule 1: turn: only agent calls have turns/],
    ];
    for (const [yaml, message] of bad) {
      expect(() => parseScript(yaml, "s.yaml")).toThrow(ScriptError);
      expect(() => parseScript(yaml, "s.yaml")).toThrow(message);
    }
  });
});

// keep ZERO_USAGE referenced for readers comparing with the simulator's usage
void ZERO_USAGE;
