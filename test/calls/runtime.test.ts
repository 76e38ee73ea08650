// The call layer on its own: options, retry policy, backoff, timeouts, cancellation, memory sessions, traces.
import { describe, expect, it } from "vitest";
import type { MemoryPort, MemorySession } from "../../runtime/memory-port.ts";
import { durationMs, exactDuration, MAX_DURATION_MS, parseDuration } from "../../runtime/duration.ts";
import { parseScript, ScriptProvider } from "../../runtime/providers/script.ts";
import { SimProvider } from "../../runtime/providers/sim.ts";
import { makeError, VvmRaise, type Value } from "../../runtime/values.ts";
import { agent, callReq, chooseReq, harness, judgeReq, fakeReport } from "./helpers.ts";
import { errorOf } from "../support/errors.ts";

const script = (yaml: string) => new ScriptProvider(parseScript(yaml, "test.yaml"));

describe("call options", () => {
  it("bad option values raise thrown at the call site before any attempt", async () => {
    const { rt, acc } = harness(new SimProvider());
    const a = agent("a");
    const bad: [Record<string, Value>, RegExp][] = [
      [{ retry: -1 }, /retry= expects a whole number of at least 0, got -1/],
      [{ retry: 1.5 }, /retry= expects/],
      [{ retry: "2" }, /retry= expects .* got "2"/],
      [{ backoff: "linear" }, /backoff= expects "fixed" or "exponential", got "linear"/],
      [{ timeout: "soon" }, /timeout= expects a duration/],
      [{ timeout: "0s" }, /timeout= expects a duration/],
      [{ name: 3 }, /name= expects a string/],
    ];
    for (const [opts, message] of bad) {
      const err = await rt.call(callReq(a, "t", null, opts)).catch((e) => e);
      expect(err).toBeInstanceOf(VvmRaise);
      expect(errorOf((err as VvmRaise).value)!.kind).toBe("thrown");
      expect((err as VvmRaise).message).toMatch(message);
      expect((err as VvmRaise).site?.span.line).toBe(1);
    }
    expect(acc.callAttempts).toBe(0);
  });

  it("unknown options are ignored (the validator reports them as W050)", async () => {
    const { rt, acc } = harness(new SimProvider());
    expect(await rt.call(callReq(agent("a"), "t", null, { retries: 2, colour: "red" }))).toBe("[sim:a] t");
    expect(acc.callAttempts).toBe(1);
  });

  it("name= labels the call in traces and lets script rules match it", async () => {
    const p = script(`- { kind: agent, name: probe, reply: "named" }`);
    const { rt, trace } = harness(p);
    expect(await rt.call(callReq(agent("a"), "t", null, { name: "probe" }))).toBe("named");
    expect(await rt.call(callReq(agent("a"), "t", null))).toBe("[sim:a] t");
    expect(trace.events.find((e) => e.type === "call")).toMatchObject({ agent: "a", name: "probe", ok: true, attempts: 1 });
  });
});

describe("retries", () => {
  it("retries spawn_failed and timeout, not a plain rejected", async () => {
    const p = script(`
rules:
  - { kind: agent, match: flaky, times: 2, error: { kind: spawn_failed, status: 529 } }
  - { kind: agent, match: flaky, reply: "ok at last" }
  - { kind: agent, match: refused, error: { kind: rejected, status: 400 } }
  - { kind: agent, match: slow, times: 1, error: { kind: timeout } }
`);
    const { rt, acc } = harness(p);
    expect(await rt.call(callReq(agent("a"), "flaky", null, { retry: 2 }))).toBe("ok at last");
    expect(acc.callAttempts).toBe(3);
    const e = errorOf(await rt.call(callReq(agent("a"), "refused", null, { retry: 5 })))!;
    expect(e).toMatchObject({ kind: "rejected" });
    expect(e.data).toMatchObject({ status: 400, attempts: 1, request_id: "script-rule-3" });
    expect(await rt.call(callReq(agent("a"), "slow", null, { retry: 1 }))).toBe("[sim:a] slow");
  });

  it("retry=n makes at most 1+n attempts and returns the last error", async () => {
    const p = script(`- { kind: agent, error: { kind: rejected, status: 429, message: "slow down" } }`);
    const { rt, acc } = harness(p);
    const e = errorOf(await rt.call(callReq(agent("a"), "t", null, { retry: 3 })))!;
    expect(e).toMatchObject({ kind: "rejected", message: "slow down" });
    expect(e.data).toMatchObject({ status: 429, attempts: 4 });
    expect(acc.callAttempts).toBe(4);
    expect(acc.failedCalls).toBe(1);
  });

  it("fixed backoff waits the base each time; exponential doubles (with jitter within ±25%)", async () => {
    const p = script(`- { kind: agent, error: { kind: spawn_failed } }`);
    const { rt, trace } = harness(p, { retry: { baseMs: 40, maxMs: 1000, maxRetryAfterMs: 1000 } });
    await rt.call(callReq(agent("a"), "t", null, { retry: 3, backoff: "fixed" }));
    await rt.call(callReq(agent("a"), "t", null, { retry: 3, backoff: "exponential" }));
    const waits = trace.events.filter((e) => e.type === "call_attempt" && e.retry_in_ms != null).map((e) => e.retry_in_ms as number);
    expect(waits).toHaveLength(6);
    for (const w of waits.slice(0, 3)) {
      expect(w).toBeGreaterThanOrEqual(30);
      expect(w).toBeLessThanOrEqual(50);
    }
    const [a, b, c] = waits.slice(3);
    expect(a).toBeGreaterThanOrEqual(30);
    expect(a).toBeLessThanOrEqual(50);
    expect(b).toBeGreaterThanOrEqual(60);
    expect(b).toBeLessThanOrEqual(100);
    expect(c).toBeGreaterThanOrEqual(120);
    expect(c).toBeLessThanOrEqual(200);
  });

  it("a scripted retry-after overrides the backoff", async () => {
    const p = script(`
- { kind: agent, times: 1, error: { kind: rejected, status: 429, retry_after: 250ms } }
- { kind: agent, reply: done }
`);
    const { rt, trace } = harness(p);
    const t0 = performance.now();
    expect(await rt.call(callReq(agent("a"), "t", null, { retry: 1 }))).toBe("done");
    expect(performance.now() - t0).toBeGreaterThanOrEqual(240);
    expect(trace.events.find((e) => e.retry_in_ms != null)?.retry_in_ms).toBe(250);
  });

  it("a timeout longer than Node's longest timer (about 24.8 days) still waits instead of firing at once", async () => {
    expect(durationMs("1000h")).toBe(MAX_DURATION_MS);
    expect(durationMs(2_147_484)).toBe(MAX_DURATION_MS);
    expect(parseDuration("100000h")).toBe(MAX_DURATION_MS);
    // a cutoff is not a timer: exact
    expect(exactDuration("100000h")).toBe(100_000 * 3_600_000);
    const p = script(`- { kind: agent, delay: 100ms, reply: late but fine }`);
    const { rt } = harness(p);
    expect(await rt.call(callReq(agent("a"), "t", null, { timeout: "1000h" }))).toBe("late but fine");
  });

  it("timeout= bounds each attempt end to end, even against a delay", async () => {
    const p = script(`- { kind: agent, delay: 5s, reply: late }`);
    const { rt } = harness(p);
    const t0 = performance.now();
    const e = errorOf(await rt.call(callReq(agent("a"), "t", null, { timeout: "100ms", retry: 1 })))!;
    expect(e.kind).toBe("timeout");
    expect(e.data).toMatchObject({ attempts: 2 });
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it("cancellation during a backoff wait ends the call as cancelled", async () => {
    const p = script(`- { kind: agent, error: { kind: spawn_failed } }`);
    const { rt } = harness(p, { retry: { baseMs: 10_000, maxMs: 10_000, maxRetryAfterMs: 10_000 } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const t0 = performance.now();
    const out = await rt.call(callReq(agent("a"), "t", null, { retry: 2 }, { signal: ac.signal }));
    expect(errorOf(out)!.kind).toBe("cancelled");
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it("a backoff longer than any timer (VVM_RETRY_BASE_MS=99999999999, fixed) still waits instead of retrying at once", async () => {
    const p = script(`- { kind: agent, error: { kind: spawn_failed } }`);
    const { rt, acc } = harness(p, { retry: { baseMs: 99_999_999_999, maxMs: 30_000, maxRetryAfterMs: 300_000 } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const out = await rt.call(callReq(agent("a"), "t", null, { retry: 3, backoff: "fixed" }, { signal: ac.signal }));
    expect(errorOf(out)!.kind).toBe("cancelled");
    // Node fires a timer over 2^31-1 ms after 1 ms: the three retries would all have been sent
    expect(acc.callAttempts).toBe(1);
  });

  it("an already-cancelled call makes no attempt; a cancelled judge raises cancelled", async () => {
    const { rt, acc } = harness(new SimProvider());
    const ac = new AbortController();
    ac.abort();
    expect(errorOf(await rt.call(callReq(agent("a"), "t", null, {}, { signal: ac.signal })))!.kind).toBe("cancelled");
    const err = await rt.judge(judgeReq("predicate", "p", 1, ac.signal)).catch((e) => e);
    expect(errorOf((err as VvmRaise).value)!.kind).toBe("cancelled");
    expect(acc.callAttempts + acc.judgeAttempts).toBe(0);
  });
});

describe("sim", () => {
  it("replies name the agent and the first task line; judges are uncertain", async () => {
    const { rt, trace } = harness(new SimProvider());
    expect(await rt.call(callReq(agent("editor"), "\n  Write notes.\nMore lines.", ["x"]))).toBe("[sim:editor] Write notes.");
    expect(await rt.judge(judgeReq("predicate", "p", 1))).toBe(false);
    expect(await rt.judge(judgeReq("require", "r", 1))).toBe(false);
    expect(await rt.choose(chooseReq("c", 1, ["first", "second"]))).toBe("first");
    expect(trace.events.filter((e) => e.type === "judge").every((e) => e.uncertain === true)).toBe(true);
  });
});

describe("memory sessions", () => {
  function fakeMemory(opened: MemorySession | ReturnType<typeof makeError>) {
    const log: string[] = [];
    const port: MemoryPort = {
      async open(_m, prov) {
        log.push(`open ${prov.mode} ${prov.agentName}`);
        return opened;
      },
    };
    return { port, log };
  }
  const memory = new Map<string, Value>([["scope", "project"], ["key", "k"]]);

  it("opens before the model, holds the session across retries, completes with the reply", async () => {
    const log: string[] = [];
    const session: MemorySession = {
      context: "CTX",
      report: fakeReport(),
      async complete(t) {
        log.push(`complete ${t}`);
        return t.replace(/```vvm-memory[\s\S]*?```/, "").trim();
      },
      async release() {
        log.push("release");
      },
    };
    const { port, log: opens } = fakeMemory(session);
    const p = script(`
- { kind: agent, times: 1, error: { kind: spawn_failed } }
- { kind: agent, reply: "answer\\n\`\`\`vvm-memory\\n{}\\n\`\`\`" }
`);
    const { rt } = harness(p, { memory: port });
    const out = await rt.call(callReq(agent("nb", { memory }), "t", null, { retry: 1 }));
    expect(out).toBe("answer");
    expect(opens).toEqual(["open continue nb"]);
    expect(log).toEqual(["complete answer\n```vvm-memory\n{}\n```"]);
  });

  it("releases on failure and returns the error value; passes memory_mode", async () => {
    const log: string[] = [];
    const session: MemorySession = { context: null, report: fakeReport(), complete: async (t) => t, release: async () => void log.push("release") };
    const { port, log: opens } = fakeMemory(session);
    const { rt } = harness(script(`- { kind: agent, error: { kind: rejected, status: 401 } }`), { memory: port });
    const out = await rt.call(callReq(agent("nb", { memory }), "t", null, { memory_mode: "dry_run" }));
    expect(errorOf(out)!.kind).toBe("rejected");
    expect(log).toEqual(["release"]);
    expect(opens).toEqual(["open dry_run nb"]);
    const err = await rt.call(callReq(agent("nb", { memory }), "t", null, { memory_mode: "later" })).catch((e) => e);
    expect((err as VvmRaise).message).toMatch(/memory_mode= expects "continue", "dry_run" or "fresh", got "later"/);
  });

  it("an error value from open (locked) is the result and the model is never called", async () => {
    const { port } = fakeMemory(makeError("locked", "memory k is locked"));
    const { rt, acc } = harness(new SimProvider(), { memory: port });
    const out = await rt.call(callReq(agent("nb", { memory }), "t", null));
    expect(errorOf(out)).toMatchObject({ kind: "locked" });
    expect(acc.callAttempts).toBe(0);
    expect(acc.failedCalls).toBe(1);
  });

  it("without memory, memory_mode is ignored (even a bad value) and the text is left as is", async () => {
    const { port, log } = fakeMemory(makeError("locked", "x"));
    const { rt } = harness(script(`- { kind: agent, reply: "a\\n\`\`\`vvm-memory\\n{}\\n\`\`\`" }`), { memory: port });
    const out = await rt.call(callReq(agent("plain"), "t", null, { memory_mode: "nonsense" }));
    expect(out).toBe("a\n```vvm-memory\n{}\n```");
    expect(log).toEqual([]);
  });
});
