// Prompt caching that pays: which blocks are marked (runtime/providers/cache-plan.ts), the stand-in's
// cache arithmetic, and the cost of two memory programs before and after (bench/caching.bench.ts prints them).
import { describe, expect, it } from "vitest";
import { CachePlanner, DEFAULT_MIN_CACHE_TOKENS, estimateTokens, minCacheTokens } from "../../runtime/providers/cache-plan.ts";
import { conversation, fanOut } from "../support/caching-scenarios.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { PromptCache } from "../support/standin-cache.ts";

const LONG = "x".repeat(DEFAULT_MIN_CACHE_TOKENS * 4);

describe("the cache planner", () => {
  it("marks the prompt only when the prefix reaches the model's minimum", () => {
    const p = new CachePlanner();
    expect(p.plan("claude-sonnet-5-5", "short prompt", "short prompt", null)).toEqual({ system: false, memory: false });
    expect(p.plan("claude-sonnet-5-5", LONG, LONG, null)).toEqual({ system: true, memory: false });
    // an empty prompt sends no block to mark, however long the tools before it
    expect(p.plan("claude-sonnet-5-5", LONG, "", null).system).toBe(false);
    // the minimum is the model's own where it is known
    expect(minCacheTokens("claude-opus-4-5")).toBe(4096);
    expect(minCacheTokens("constructor")).toBe(DEFAULT_MIN_CACHE_TOKENS);
    expect(p.plan("claude-opus-4-5", LONG, LONG, null).system).toBe(false);
    expect(estimateTokens(4097)).toBe(1025);
  });

  it("marks a memory context only when the same model, prefix and context were sent before", () => {
    const p = new CachePlanner();
    expect(p.plan("m", LONG, LONG, "digest v1").memory).toBe(false);
    expect(p.plan("m", LONG, LONG, "digest v2").memory).toBe(false);
    expect(p.plan("m", LONG, LONG, "digest v2").memory).toBe(true);
    expect(p.plan("m", LONG, LONG, "digest v2").memory).toBe(true);
    // another model or another prompt is another cache entry
    expect(p.plan("n", LONG, LONG, "digest v2").memory).toBe(false);
    expect(p.plan("m", LONG + "!", LONG + "!", "digest v2").memory).toBe(false);
    // a repeated context too short to cache (with its prefix) is never marked
    expect(p.plan("m", "tiny", "tiny", "small").memory).toBe(false);
    expect(p.plan("m", "tiny", "tiny", "small").memory).toBe(false);
    // a long repeated context after a short prompt: only the memory block is marked
    p.plan("m", "tiny", "tiny", LONG);
    expect(p.plan("m", "tiny", "tiny", LONG)).toEqual({ system: false, memory: true });
  });
});

describe("the stand-in's prompt cache", () => {
  const body = (system: object[], text = "task") => ({ model: "m", system, messages: [{ role: "user", content: [{ type: "text", text }] }] });
  const mark = { cache_control: { type: "ephemeral" } };

  it("writes a marked prefix once, reads it after, and its counts add up to the whole prompt", () => {
    const c = new PromptCache();
    const first = c.usage(body([{ type: "text", text: LONG, ...mark }]));
    expect(first.cache_read_input_tokens).toBe(0);
    expect(first.cache_creation_input_tokens).toBeGreaterThanOrEqual(DEFAULT_MIN_CACHE_TOKENS);
    const second = c.usage(body([{ type: "text", text: LONG, ...mark }], "another task"));
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    const all = (u: typeof first) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    expect(all(second)).toBe(all(c.usage(body([{ type: "text", text: LONG }], "another task"))));
  });

  it("caches nothing unmarked or below the minimum, and reads the longest cached prefix", () => {
    const c = new PromptCache();
    expect(c.usage(body([{ type: "text", text: LONG }])).cache_creation_input_tokens).toBe(0);
    expect(c.usage(body([{ type: "text", text: "short", ...mark }])).cache_creation_input_tokens).toBe(0);
    expect(c.usage(body([{ type: "text", text: "short", ...mark }])).cache_read_input_tokens).toBe(0);
    // prompt cached; then prompt + memory: the prompt is read and only the memory written
    const prompt = c.usage(body([{ type: "text", text: LONG, ...mark }])).cache_creation_input_tokens;
    const both = c.usage(body([{ type: "text", text: LONG, ...mark }, { type: "text", text: "memory", ...mark }]));
    expect(both.cache_read_input_tokens).toBe(prompt);
    expect(both.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(both.cache_creation_input_tokens).toBeLessThan(20);
  });
});

describe("what caching costs a memory program (through vvm run and the stand-in)", () => {
  const standin = useStandin();
  const dir = useTempDir("vvm-caching-");

  it("a conversation whose memory changes every call writes the prompt once and no memory context", async () => {
    const m = await conversation(dir, standin, 8);
    // no request marks its memory block: each context is new
    for (const r of standin.requests) expect(r.body.system[1].cache_control).toBeUndefined();
    expect(standin.requests[0].body.system[0].cache_control).toEqual({ type: "ephemeral" });
    expect(m.after.write).toBeLessThan(m.before.write / 2);
    expect(m.after.read).toBeGreaterThan(0);
    expect(m.after.billed).toBeLessThan(m.before.billed);
  });

  it("a dry_run fan-out over one memory reads the context from the cache after its first sight", async () => {
    const m = await fanOut(dir, standin, 10);
    const fan = standin.requests.slice(-10).map((r) => r.body.system[1].cache_control !== undefined);
    expect(fan).toEqual([false, ...Array(9).fill(true)]);
    // the first sight is sent at the full rate: one send more than marking everything would bill
    expect(m.after.read).toBeGreaterThan(m.after.input);
    const onePrompt = (m.before.input + m.before.write + m.before.read) / m.before.requests;
    expect(m.after.billed - m.before.billed).toBeLessThanOrEqual(onePrompt);
  });
});
