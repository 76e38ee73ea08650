// The anthropic provider through the real SDK against the local Messages API stand-in.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { AnthropicProvider, retryAfterMs } from "../../runtime/providers/anthropic.ts";
import { MODEL_ALIASES } from "../../runtime/providers/models.ts";
import { VvmRaise, type Value } from "../../runtime/values.ts";
import { useStandin } from "../support/fixtures.ts";
import { agent, callReq, chooseReq, harness, judgeReq, fakeReport } from "./helpers.ts";
import { errorOf } from "../support/errors.ts";

const standin = useStandin();
const sdkLog: string[] = [];
const provider = () => new AnthropicProvider({ apiKey: "sk-ant-dummy", baseURL: standin.url, log: (m) => sdkLog.push(m) });


describe("agent calls", () => {
  it("sends the system prompt and input as separate blocks and returns the text (a prompt this short is not cache-marked)", async () => {
    standin.enqueue({ type: "text", text: "hello back" });
    const { rt, acc } = harness(provider());
    const out = await rt.call(callReq(agent("writer", { model: "sonnet", prompt: "You write." }), "Say hello.", new Map<string, Value>([["b", 1], ["a", "x"]])));
    expect(out).toBe("hello back");
    const body = standin.requests[0].body;
    expect(body.model).toBe(MODEL_ALIASES.sonnet);
    expect(body.max_tokens).toBe(8192);
    expect(body.system).toEqual([{ type: "text", text: "You write." }]);
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Say hello." },
          { type: "text", text: 'Input:\n---\n{\n  "a": "x",\n  "b": 1\n}\n---' },
        ],
      },
    ]);
    expect(body.tools).toBeUndefined();
    // The key travels in a header (this SDK version sends it as a bearer token).
    const h = standin.requests[0].headers;
    expect(h["x-api-key"] ?? h.authorization).toMatch(/sk-ant-dummy/);
    expect(acc.calls).toBe(1);
    expect(acc.inputTokens).toBeGreaterThan(0);
    expect(acc.cacheWriteTokens).toBe(0);
  });

  it("omits the input block for unit input and the system for an empty prompt; passes unknown models through", async () => {
    const { rt } = harness(provider());
    await rt.call(callReq(agent("bare", { model: "my-model-7" }), "Just this.", null));
    const body = standin.requests[0].body;
    expect(body.system).toBeUndefined();
    expect(body.model).toBe("my-model-7");
    expect(body.messages[0].content).toEqual([{ type: "text", text: "Just this." }]);
  });

  it("reports cache reads on a repeated prefix and honours agent max_tokens and the run's model overrides", async () => {
    const { rt, acc, trace } = harness(provider(), { models: { haiku: "claude-haiku-custom", sonnet: "opus" } });
    const a = agent("w", { model: "haiku", prompt: "A stable prompt. ".repeat(400), max_tokens: 300 });
    await rt.call(callReq(a, "one", null));
    await rt.call(callReq(a, "two", null));
    expect(standin.requests[0].body.model).toBe("claude-haiku-custom");
    // an override is a model id used as written, never resolved a second time; the trace names what was sent
    await rt.call(callReq(agent("s", { model: "sonnet" }), "three", null));
    expect(standin.requests[2].body.model).toBe("opus");
    expect(trace.events.filter((e) => e.type === "call").map((e) => e.model)).toEqual(["claude-haiku-custom", "claude-haiku-custom", "opus"]);
    expect(standin.requests[0].body.max_tokens).toBe(300);
    expect(acc.cacheReadTokens).toBeGreaterThan(0);
  });

  it("sends a memory context as a second system block, cache-marked only once the same context is sent again", async () => {
    const { rt } = harness(provider(), {
      memory: {
        async open() {
          return { context: "MEMORY: likes tea", report: fakeReport(), complete: async (t: string) => t, release: async () => {} };
        },
      },
    });
    const m = agent("m", { prompt: "P ".repeat(3000), memory: new Map([["scope", "project"], ["key", "k"]]) });
    await rt.call(callReq(m, "task", null));
    await rt.call(callReq(m, "task", null));
    expect(standin.requests[0].body.system).toEqual([
      { type: "text", text: "P ".repeat(3000), cache_control: { type: "ephemeral" } },
      { type: "text", text: "MEMORY: likes tea" },
    ]);
    expect(standin.requests[1].body.system[1]).toEqual({ type: "text", text: "MEMORY: likes tea", cache_control: { type: "ephemeral" } });
  });

  it("returns a 1 MB reply whole", async () => {
    const big = "y".repeat(1024 * 1024);
    standin.enqueue({ type: "text", text: big });
    const { rt } = harness(provider());
    const out = await rt.call(callReq(agent("a"), "big", null));
    expect(out).toBe(big);
  });
});

describe("error values", () => {
  const cases: [number, string, boolean][] = [
    [400, "rejected", false],
    [401, "rejected", false],
    [403, "rejected", false],
    [404, "rejected", false],
    [413, "rejected", false],
    [422, "rejected", false],
    [429, "rejected", true],
    [500, "spawn_failed", true],
    [503, "spawn_failed", true],
    [529, "spawn_failed", true],
  ];
  for (const [status, kind, retried] of cases) {
    it(`HTTP ${status} → ${kind}${retried ? " (retried)" : " (never retried)"}`, async () => {
      standin.setHandler(() => ({ type: "error", status, message: `boom ${status}` }));
      const { rt } = harness(provider());
      const out = await rt.call(callReq(agent("a"), "t", null, { retry: 2 }));
      const e = errorOf(out)!;
      expect(e.kind).toBe(kind);
      expect(e.message).toContain(`HTTP ${status}`);
      expect(e.message).toContain(`boom ${status}`);
      const data = e.data as Record<string, unknown>;
      expect(data.status).toBe(status);
      expect(data.request_id).toMatch(/^req_standin_\d+$/);
      expect(data.attempts).toBe(retried ? 3 : 1);
      expect(standin.requests.length).toBe(retried ? 3 : 1);
    });
  }

  it("keeps a proxy's error page out of the error value but for its first 500 characters", async () => {
    const page = `<html><body>${"Bad gateway. ".repeat(20_000)}</body></html>`;
    standin.enqueue({ type: "body", status: 502, body: page, contentType: "text/html" });
    const { rt } = harness(provider());
    const e = errorOf(await rt.call(callReq(agent("a"), "t", null)))!;
    expect(e.kind).toBe("spawn_failed");
    expect(e.message).toMatch(/^the API failed \(HTTP 502\): 502 <html><body>Bad gateway\. .*… \(\d+ characters more\)$/);
    expect(e.message.length).toBeLessThan(600);
  });

  it("reads retry-after as seconds or an HTTP date; a negative or unreadable one is no hint", () => {
    const h = (v: Record<string, string>) => new Headers(v);
    expect(retryAfterMs(h({ "retry-after": "2" }))).toBe(2000);
    expect(retryAfterMs(h({ "retry-after-ms": "150" }))).toBe(150);
    expect(retryAfterMs(h({ "retry-after": "-5" }))).toBeNull();
    expect(retryAfterMs(h({ "retry-after": "soon" }))).toBeNull();
    const inTwoMinutes = new Date(Date.now() + 120_000).toUTCString();
    expect(retryAfterMs(h({ "retry-after": inTwoMinutes }))).toBeGreaterThan(100_000);
  });

  it("429 twice then success: the result is the reply and retry-after is honoured", async () => {
    standin.enqueue(
      { type: "error", status: 429, retryAfter: "0.3" },
      { type: "error", status: 429, retryAfterMs: 100 },
      { type: "text", text: "finally" },
    );
    const { rt, trace } = harness(provider());
    const t0 = performance.now();
    const out = await rt.call(callReq(agent("a"), "t", null, { retry: 2 }));
    const elapsed = performance.now() - t0;
    expect(out).toBe("finally");
    expect(elapsed).toBeGreaterThanOrEqual(390);
    const waits = trace.events.filter((e) => e.type === "call_attempt" && e.ok === false).map((e) => e.retry_in_ms);
    expect(waits).toEqual([300, 100]);
  });

  it("retry=0 gives exactly one attempt; the last error wins after retries run out", async () => {
    standin.setHandler(() => ({ type: "error", status: 529 }));
    const { rt } = harness(provider());
    const out = await rt.call(callReq(agent("a"), "t", null));
    expect(errorOf(out)!.kind).toBe("spawn_failed");
    expect(standin.requests.length).toBe(1);
  });

  it("a reset connection and a truncated body are spawn_failed", async () => {
    standin.enqueue({ type: "reset" }, { type: "truncate" });
    const { rt } = harness(provider());
    const a = errorOf(await rt.call(callReq(agent("a"), "t", null)))!;
    const b = errorOf(await rt.call(callReq(agent("a"), "t", null)))!;
    expect(a.kind).toBe("spawn_failed");
    expect(a.message).toMatch(/could not reach the Messages API|before a complete reply arrived/);
    expect(b.message).toContain("before a complete reply arrived");
    expect(b.kind).toBe("spawn_failed");
  });

  it("requests bypass Node's fetch, which ends any reply slower than 300 s before timeout= (default 10 minutes) can", async () => {
    // (a reply that slow cannot be waited for here: what is checked is that Node's fetch, and its limits, are not used)
    vi.stubGlobal("fetch", () => Promise.reject(new Error("Node's fetch: headers timeout after 300 s")));
    try {
      standin.enqueue({ type: "text", text: "slow but whole" });
      const { rt } = harness(provider());
      expect(await rt.call(callReq(agent("a"), "t", null))).toBe("slow but whole");
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it("a status no Response can hold (HTTP 600 from a broken server) is spawn_failed, not a crash", async () => {
    const odd = http.createServer((_req, res) => res.writeHead(600).end("{}"));
    await new Promise<void>((r) => odd.listen(0, "127.0.0.1", r));
    try {
      const p = new AnthropicProvider({ apiKey: "k", baseURL: `http://127.0.0.1:${(odd.address() as AddressInfo).port}`, log: () => {} });
      expect(errorOf(await harness(p).rt.call(callReq(agent("a"), "t", null)))!.kind).toBe("spawn_failed");
    } finally {
      odd.closeAllConnections();
      await new Promise((r) => odd.close(r));
    }
  });

  it("as Node's fetch did, a 307/308 redirect is followed and a gzip body is read", async () => {
    const zlib = await import("node:zlib");
    const message = JSON.stringify({ type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "zipped" }], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } });
    const odd = http.createServer((req, res) => {
      if (req.url === "/v1/messages") return void res.writeHead(308, { location: "/moved/v1/messages" }).end();
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(zlib.gzipSync(message));
    });
    await new Promise<void>((r) => odd.listen(0, "127.0.0.1", r));
    try {
      const p = new AnthropicProvider({ apiKey: "k", baseURL: `http://127.0.0.1:${(odd.address() as AddressInfo).port}`, log: () => {} });
      expect(await harness(p).rt.call(callReq(agent("a"), "t", null))).toBe("zipped");
    } finally {
      odd.closeAllConnections();
      await new Promise((r) => odd.close(r));
    }
  });

  it("an unreachable base URL is spawn_failed", async () => {
    const dead = new AnthropicProvider({ apiKey: "k", baseURL: "http://127.0.0.1:9", log: () => {} });
    const { rt } = harness(dead);
    const e = errorOf(await rt.call(callReq(agent("a"), "t", null, { retry: 1 })))!;
    expect(e.kind).toBe("spawn_failed");
    expect((e.data as Record<string, unknown>).attempts).toBe(2);
  });

  it("timeout= aborts a slow attempt (the server sees the connection close) and retries it", async () => {
    standin.enqueue({ type: "hang" }, { type: "text", text: "second try", delayMs: 10 });
    const { rt } = harness(provider());
    const t0 = performance.now();
    const out = await rt.call(callReq(agent("a"), "t", null, { timeout: "200ms", retry: 1 }));
    expect(out).toBe("second try");
    expect(performance.now() - t0).toBeLessThan(4000);
    await expect.poll(() => standin.abandoned).toBe(1);
    standin.setHandler(() => ({ type: "hang" }));
    const e = errorOf(await rt.call(callReq(agent("a"), "t", null, { timeout: "150ms" })))!;
    expect(e.kind).toBe("timeout");
    expect(e.message).toContain("150ms");
  });

  it("cancelling the request's signal ends the call with error(kind=cancelled) at once", async () => {
    standin.setHandler(() => ({ type: "hang" }));
    const { rt } = harness(provider());
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const t0 = performance.now();
    const out = await rt.call(callReq(agent("a"), "t", null, { retry: 3 }, { signal: ac.signal }));
    expect(errorOf(out)!.kind).toBe("cancelled");
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(standin.requests.length).toBe(1);
    await expect.poll(() => standin.abandoned).toBe(1);
  });

  it("a 200 labelled JSON whose body is not JSON is spawn_failed with status 200 and its request id, never quoting the body", async () => {
    const body = "hello, this is what the model wrote";
    standin.enqueue({ type: "body", body }, { type: "text", text: "fine" }, { type: "body", body });
    const { rt, trace } = harness(provider());
    expect(await rt.call(callReq(agent("a"), "t", null, { retry: 1 }))).toBe("fine");
    const e = errorOf(await rt.call(callReq(agent("a"), "t", null)))!;
    expect(e.kind).toBe("spawn_failed");
    expect(e.data).toMatchObject({ status: 200, request_id: expect.stringMatching(/^req_standin_\d+$/), attempts: 1 });
    expect(e.message).toBe("the API answered 200 with a body that is not JSON");
    // the trace's attempt events carry the status, and no piece of the body
    const failed = trace.events.filter((ev) => ev.type === "call_attempt" && ev.ok === false);
    expect(failed.map((ev) => ev.status)).toEqual([200, 200]);
    expect(JSON.stringify(trace.events)).not.toContain("hello");
  });

  it("a model refusal is rejected, and its tokens are still counted", async () => {
    standin.enqueue({ type: "text", text: "", stopReason: "refusal", usage: { input_tokens: 7, output_tokens: 3 } });
    const { rt, acc } = harness(provider());
    expect(errorOf(await rt.call(callReq(agent("a"), "t", null)))!.kind).toBe("rejected");
    expect([acc.inputTokens, acc.outputTokens]).toEqual([7, 3]);
  });

  const message = (fields: object) => JSON.stringify({ type: "message", role: "assistant", model: "m", stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 }, ...fields });
  it.each([
    ["null", "application/json"],
    ["[1, 2]", "application/json"],
    ["hello", "text/plain"],
    [message({ content: [null] }), "application/json"],
    [message({ content: [{ type: "text" }] }), "application/json"],
    [message({ content: [{ type: "text", text: 5 }] }), "application/json"],
    [message({ content: [{ type: "tool_use", name: "read_file", input: {} }] }), "application/json"],
    [message({ content: [{ type: "tool_use", id: "toolu_1", name: "read_file", input: "a.txt" }] }), "application/json"],
    [message({ content: [{ text: "no type" }] }), "application/json"],
  ])("a 200 whose body is not a message, or holds a block that is not one (%s), is spawn_failed and retried, for calls and judges", async (body, contentType) => {
    standin.enqueue({ type: "body", body, contentType }, { type: "text", text: "fine" }, { type: "body", body, contentType });
    const { rt } = harness(provider());
    expect(await rt.call(callReq(agent("a"), "t", null, { retry: 1 }))).toBe("fine");
    // the judge's first attempt gets the broken body, its retry the stand-in's default verdict (true)
    expect(await rt.judge(judgeReq("predicate", "ok?", null))).toBe(true);
    expect(standin.requests.length).toBe(4);
  });
});

describe("a reply's other fields", () => {
  it("a model that is not a string is the model asked for; token counts that are not whole numbers >= 0 count 0", async () => {
    const reply = (model: unknown, usage: object) => ({ type: "body" as const, body: JSON.stringify({ type: "message", role: "assistant", model, stop_reason: 7, content: [{ type: "text", text: "ok" }], usage }) });
    standin.enqueue(reply({ a: 1 }, { input_tokens: "12", output_tokens: -1_000_000_000 }), reply("claude-x", { input_tokens: 3.5, output_tokens: 4, cache_read_input_tokens: -2 }));
    const { rt, acc } = harness(provider());
    // (the model's name picks its price: an object there made the price lookup crash)
    expect(await rt.call(callReq(agent("a"), "t", null))).toBe("ok");
    expect(await rt.call(callReq(agent("a"), "t", null))).toBe("ok");
    expect([acc.inputTokens, acc.outputTokens, acc.cacheReadTokens]).toEqual([0, 4, 0]);
  });

  it("a model name too long to be a model id is the model asked for, so it never reaches the summary line or the trace", async () => {
    const long = "claude-" + "m".repeat(100_000);
    standin.enqueue({ type: "body", body: JSON.stringify({ type: "message", role: "assistant", model: long, stop_reason: "end_turn", content: [{ type: "text", text: "ok" }], usage: { input_tokens: 1, output_tokens: 1 } }) });
    const { rt, acc, trace } = harness(provider());
    expect(await rt.call(callReq(agent("a", { model: "haiku" }), "t", null))).toBe("ok");
    expect(trace.events.find((e) => e.type === "call_attempt")!.model).toBe(MODEL_ALIASES.haiku);
    expect(JSON.stringify(acc.costs.summary())).not.toContain("mmmmmmmm");
  });
});

describe("judges", () => {
  it("predicates use forced tool use with a boolean schema and see the criterion and the input", async () => {
    standin.enqueue({ type: "tool", input: { verdict: true } });
    const { rt, acc } = harness(provider(), { judgeModel: "opus" });
    expect(await rt.judge(judgeReq("predicate", "is about money", "refund please"))).toBe(true);
    const body = standin.requests[0].body;
    expect(body.model).toBe(MODEL_ALIASES.opus);
    expect(body.tool_choice).toEqual({ type: "tool", name: "give_verdict" });
    expect(body.tools[0].input_schema.properties.verdict).toEqual({ type: "boolean" });
    expect(body.messages[0].content[0].text).toContain("is about money");
    expect(body.messages[0].content[1].text).toBe("Input:\n---\nrefund please\n---");
    expect(acc.judges).toBe(1);
  });

  it("case and require verdicts; a reply without the tool call or with a wrong type is false", async () => {
    standin.enqueue(
      { type: "tool", input: { verdict: true } },
      { type: "tool", input: { verdict: false } },
      { type: "no_tool" },
      { type: "tool", input: { verdict: "yes" } },
    );
    const { rt, trace } = harness(provider());
    expect(await rt.judge(judgeReq("case", "c", 1))).toBe(true);
    expect(await rt.judge(judgeReq("require", "r", [1, 2]))).toBe(false);
    expect(await rt.judge(judgeReq("predicate", "p", null))).toBe(false);
    expect(await rt.judge(judgeReq("predicate", "p", null))).toBe(false);
    expect(standin.requests[1].body.messages[0].content[0].text).toContain("Requirement: r");
    expect(trace.events.filter((e) => e.type === "judge").map((e) => e.uncertain)).toEqual([false, false, true, true]);
  });

  it("choose sends an enum of the labels; an answer outside them picks the first", async () => {
    standin.enqueue({ type: "tool", input: { label: "facts" } }, { type: "tool", input: { label: "neither" } }, { type: "no_tool" });
    const { rt, trace } = harness(provider());
    expect(await rt.choose(chooseReq("style", "t", ["apology", "facts"]))).toBe("facts");
    expect(standin.requests[0].body.tools[0].input_schema.properties.label.enum).toEqual(["apology", "facts"]);
    expect(standin.requests[0].body.tool_choice).toEqual({ type: "tool", name: "choose_option" });
    expect(await rt.choose(chooseReq("style", "t", ["apology", "facts"]))).toBe("apology");
    expect(await rt.choose(chooseReq("style", "t", ["apology", "facts"]))).toBe("apology");
    // the trace says what was chosen and that the last two were no usable answer
    expect(trace.events.filter((e) => e.type === "judge").map((e) => [e.label, e.uncertain])).toEqual([
      ["facts", false],
      ["apology", true],
      ["apology", true],
    ]);
  });

  it("a reply that uses the judge's tool twice with different answers is uncertain, not its first answer; the same answer twice stands", async () => {
    const reply = (...inputs: Record<string, unknown>[]) => ({
      type: "body" as const,
      body: JSON.stringify({
        id: "msg_twice", type: "message", role: "assistant", model: MODEL_ALIASES.haiku, stop_reason: "tool_use", stop_sequence: null, usage: { input_tokens: 5, output_tokens: 5 },
        content: inputs.map((input, i) => ({ type: "tool_use", id: `toolu_${i}`, name: "label" in input ? "choose_option" : "give_verdict", input })),
      }),
    });
    standin.enqueue(
      reply({ verdict: true }, { verdict: false }),
      reply({ verdict: true }, { verdict: "yes" }),
      reply({ verdict: true }, { verdict: true }),
      reply({ label: "facts" }, { label: "apology" }),
      reply({ label: "facts" }, { label: "facts" }),
    );
    const { rt, trace } = harness(provider());
    expect(await rt.judge(judgeReq("predicate", "p", 1))).toBe(false);
    expect(await rt.judge(judgeReq("predicate", "p", 1))).toBe(false);
    expect(await rt.judge(judgeReq("predicate", "p", 1))).toBe(true);
    expect(await rt.choose(chooseReq("style", "t", ["apology", "facts"]))).toBe("apology");
    expect(await rt.choose(chooseReq("style", "t", ["apology", "facts"]))).toBe("facts");
    expect(trace.events.filter((e) => e.type === "judge").map((e) => e.uncertain)).toEqual([true, true, false, true, false]);
  });

  it("a judge reply with stop_reason refusal fails the judge (rejected, not retried), whatever verdict it carries", async () => {
    standin.enqueue({
      type: "body",
      body: JSON.stringify({
        id: "msg_refused", type: "message", role: "assistant", model: MODEL_ALIASES.haiku, stop_reason: "refusal", stop_sequence: null, usage: { input_tokens: 5, output_tokens: 5 },
        content: [{ type: "tool_use", id: "toolu_1", name: "give_verdict", input: { verdict: true } }],
      }),
    });
    const { rt, acc } = harness(provider());
    const err = await rt.judge(judgeReq("require", "is safe", 1)).catch((e) => e);
    expect(err).toBeInstanceOf(VvmRaise);
    const e = errorOf((err as VvmRaise).value)!;
    expect(e.message).toBe('the require judge failed after 1 attempt: the model refused to answer (stop_reason "refusal")');
    expect(e.data).toMatchObject({ kind: "rejected", attempts: 1 });
    expect(standin.requests.length).toBe(1);
    // the refused attempt was billed
    expect(acc.inputTokens).toBe(5);
  });

  it("a failed judge raises thrown carrying the underlying kind and status, after 3 attempts for transient failures", async () => {
    standin.setHandler(() => ({ type: "error", status: 500 }));
    const { rt } = harness(provider());
    const err = await rt.judge(judgeReq("predicate", "p", 1)).catch((e) => e);
    expect(err).toBeInstanceOf(VvmRaise);
    const e = errorOf((err as VvmRaise).value)!;
    expect(e.kind).toBe("thrown");
    expect(e.data).toMatchObject({ kind: "spawn_failed", status: 500, attempts: 3 });
    expect(standin.requests.length).toBe(3);

    standin.reset().setHandler(() => ({ type: "error", status: 401 }));
    const err2 = await rt.choose(chooseReq("c", 1, ["a", "b"])).catch((e) => e);
    expect(errorOf((err2 as VvmRaise).value)!.data).toMatchObject({ kind: "rejected", status: 401, attempts: 1 });
  });
});
