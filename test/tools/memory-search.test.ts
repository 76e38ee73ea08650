// memory_search through the real SDK against the stand-in, over a real memory store: offered only to an
// agent with memory outside fresh mode, it answers this key's retained facts that the Memory Context left
// out, ranked by recall, and never another key's.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AnthropicProvider } from "../../runtime/providers/anthropic.ts";
import { obj } from "../../runtime/values.ts";
import { useStandin } from "../support/fixtures.ts";
import { perm } from "../../stdlib/basics.ts";
import { agent, callReq, harness, site } from "../calls/helpers.ts";
import { makeStore, memDir, patchLine, tempDir } from "../memory/helpers.ts";

const standin = useStandin();
const provider = () => new AnthropicProvider({ apiKey: "sk-ant-dummy", baseURL: standin.url, log: () => {} });

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

/** A ledger of `texts`, one retained fact per entry (seq 1, 2, …). */
async function seed(key: string, texts: string[]): Promise<void> {
  await mkdir(memDir(dir, key), { recursive: true });
  await writeFile(path.join(memDir(dir, key), "ledger.jsonl"), texts.map((t, k) => patchLine(k + 1, [t])).join(""));
}

const filler = (n: number) => Array.from({ length: n }, (_, k) => `N routine standup number ${k} went fine`);

/** The content of the first tool_result of request `i`. */
const firstResult = (i: number): { content: string; is_error?: boolean } => {
  const m = standin.requests[i].body.messages;
  return m[m.length - 1].content[0];
};

describe("memory_search", () => {
  it("answers the relevant facts the Memory Context did not show, from this key only", async () => {
    // the newest facts, which the context shows, match the query too
    await seed("acme", ["W @Acme pays invoices by bank transfer only", "W @Acme's invoice contact is Dana", ...filler(38), "N invoices batch A sent to @Acme", "N invoices batch B sent to @Acme"]);
    await seed("other", ["W @Acme invoice secrets of another tenant"]);
    // a budget that shows only the newest few facts
    const { store } = makeStore(dir, { budgetTokens: 40 });
    standin.enqueue({ type: "tool_use", calls: [{ name: "memory_search", input: { query: "does @Acme pay invoices by bank transfer" } }] }, { type: "text", text: "By bank transfer." });
    const { rt, trace } = harness(provider(), { memory: store, programDir: dir });
    const a = agent("clerk", { memory: obj({ scope: "project", key: "acme" }) });
    expect(await rt.call(callReq(a, "Write the reminder.", null))).toBe("By bank transfer.");
    await store.close();

    const first = standin.requests[0].body;
    expect(first.tools.map((t: { name: string }) => t.name)).toEqual(["memory_search"]);
    const context = JSON.stringify(first.system);
    expect(context).toContain("invoices batch B");
    expect(context).not.toContain("bank transfer");
    const result = firstResult(1);
    expect(result.is_error).toBeUndefined();
    const lines = result.content.split("\n");
    expect(lines[0]).toMatch(/^- \[#1 \S+\] W @Acme pays invoices by bank transfer only$/);
    expect(result.content).toContain("invoice contact is Dana");
    // never a fact the context already showed, never another key's
    expect(result.content).not.toContain("batch B");
    expect(result.content).not.toContain("another tenant");
    expect(trace.events.find((e) => e.type === "tool")).toMatchObject({ tool: "memory_search", ok: true, allowed: true });
  });

  it("says when nothing more matches", async () => {
    await seed("k", ["W the office is in Lisbon"]);
    const { store } = makeStore(dir);
    standin.enqueue({ type: "tool_use", calls: [{ name: "memory_search", input: { query: "penguins" } }] }, { type: "text", text: "none" });
    const { rt } = harness(provider(), { memory: store, programDir: dir });
    await rt.call(callReq(agent("m", { memory: obj({ scope: "project", key: "k" }) }), "t", null));
    await store.close();
    expect(firstResult(1).content).toBe('no retained fact beyond those in the Memory Context matches "penguins"');
  });

  it('is not offered in memory_mode="fresh" nor without memory; a use is denied', async () => {
    await seed("k", ["W the office is in Lisbon"]);
    const { store } = makeStore(dir);
    const { rt } = harness(provider(), { memory: store, programDir: dir });
    const readAll = perm([], new Map([["read", ["**"]]]), null, site());
    for (const [a, options] of [
      [agent("m", { memory: obj({ scope: "project", key: "k" }), permissions: readAll }), { memory_mode: "fresh" }],
      [agent("plain", { permissions: readAll }), {}],
    ] as const) {
      standin.reset();
      standin.enqueue({ type: "tool_use", calls: [{ name: "memory_search", input: { query: "office" } }] }, { type: "text", text: "ok" });
      expect(await rt.call(callReq(a, "t", null, { ...options }))).toBe("ok");
      expect(standin.requests[0].body.tools.map((t: { name: string }) => t.name)).toEqual(["read_file", "list_files", "search_files"]);
      expect(firstResult(1)).toMatchObject({ is_error: true, content: 'permission denied: memory_search needs agent memory in a mode other than memory_mode="fresh", and this call has none' });
    }
    await store.close();
  });
});
