// network="allow" through the real SDK against the stand-in: the API's own web search and web fetch are
// offered (the API runs them), their blocks go back exactly as they came, a paused server loop carries on,
// and network="deny" or "prompt" offers nothing.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AnthropicProvider } from "../../runtime/providers/anthropic.ts";
import type { Value } from "../../runtime/values.ts";
import { perm } from "../../stdlib/basics.ts";
import { errorOf } from "../support/errors.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { agent, callReq, harness, site } from "../calls/helpers.ts";

const standin = useStandin();
const root = useTempDir("vvm-network-");
const provider = () => new AnthropicProvider({ apiKey: "sk-ant-dummy", baseURL: standin.url, log: () => {} });
const perms = (kw: Record<string, Value>) => perm([], new Map(Object.entries(kw)), null, site());
const types = (b: { content: { type: string }[] }) => b.content.map((x) => x.type);

describe("network tools", () => {
  it('network="allow" offers web search and web fetch as server tools; the reply after them is the value', async () => {
    standin.enqueue({
      type: "server_tools",
      uses: [
        { name: "web_search", input: { query: "vvm runtime" } },
        { name: "web_fetch", input: { url: "https://example.com/vvm-runtime" } },
      ],
      text: "VVM is a runtime.",
    });
    const { rt, trace } = harness(provider(), { programDir: root });
    expect(await rt.call(callReq(agent("web", { permissions: perms({ network: "allow" }) }), "What is VVM?", null))).toBe("VVM is a runtime.");
    expect(standin.requests[0].body.tools).toEqual([
      { type: "web_search_20250305", name: "web_search", max_uses: 5 },
      { type: "web_fetch_20250910", name: "web_fetch", max_uses: 5 },
    ]);
    expect(standin.requests).toHaveLength(1);
    // the API ran them: no tool events of the runtime's own
    expect(trace.events.filter((e) => e.type === "tool")).toEqual([]);
  });

  it("a paused server loop is sent back as it is and carries on; client tools after it join the same assistant turn", async () => {
    const dir = path.join(root, "paused");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "notes.md"), "local notes\n");
    standin.enqueue(
      { type: "server_tools", uses: [{ name: "web_search", input: { query: "first" } }], text: "Searching. ", stopReason: "pause_turn" },
      { type: "tool_use", calls: [{ name: "read_file", input: { path: "notes.md" } }] },
      { type: "text", text: "Both read." },
    );
    const { rt } = harness(provider(), { programDir: dir });
    const a = agent("mixed", { permissions: perms({ network: "allow", read: ["*.md"] }) });
    expect(await rt.call(callReq(a, "Look it up.", null))).toBe("Both read.");
    const second = standin.requests[1].body.messages;
    expect(second).toHaveLength(2);
    expect(second[1].role).toBe("assistant");
    expect(types(second[1])).toEqual(["server_tool_use", "web_search_tool_result", "text"]);
    // the server blocks go back exactly as the API gave them
    expect(second[1].content[1]).toEqual({
      type: "web_search_tool_result",
      tool_use_id: second[1].content[0].id,
      content: [{ type: "web_search_result", url: "https://example.com/first", title: "About first", encrypted_content: "enc-first", page_age: null }],
    });
    const third = standin.requests[2].body.messages;
    // one assistant turn: what the paused reply said, then what its continuation asked for
    expect(third.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(types(third[1])).toEqual(["server_tool_use", "web_search_tool_result", "text", "tool_use"]);
    expect(third[2].content[0]).toMatchObject({ type: "tool_result", content: "local notes" });
  });

  it('the text of a paused turn and its continuation together are the value', async () => {
    standin.enqueue(
      { type: "server_tools", uses: [{ name: "web_search", input: { query: "a" } }], text: "Part one. ", stopReason: "pause_turn" },
      { type: "text", text: "Part two." },
    );
    const { rt } = harness(provider(), { programDir: root });
    expect(await rt.call(callReq(agent("p", { permissions: perms({ network: "allow" }) }), "t", null))).toBe("Part one. Part two.");
  });

  it("a turn the API keeps pausing ends at max_turns, saying it paused rather than that tools were asked for", async () => {
    standin.setHandler(() => ({ type: "server_tools", uses: [{ name: "web_search", input: { query: "again" } }], text: "More. ", stopReason: "pause_turn" }));
    const { rt } = harness(provider(), { programDir: root });
    const out = await rt.call(callReq(agent("p", { permissions: perms({ network: "allow" }), max_turns: 3 }), "t", null));
    expect(errorOf(out)).toMatchObject({ kind: "rejected", data: { turns: 3, attempts: 3 } });
    expect(errorOf(out)!.message).toBe('the API still paused the turn (stop_reason "pause_turn") after 3 turns (max_turns=3), so the call ended without a final answer; raise max_turns= on the agent or give it a smaller task');
    expect(standin.requests).toHaveLength(3);
  });

  it('network="deny" and "prompt" offer no server tools (a model using one anyway is refused by the API)', async () => {
    for (const network of ["deny", "prompt"]) {
      standin.reset();
      standin.enqueue({ type: "server_tools", uses: [{ name: "web_search", input: { query: "x" } }], text: "searched" });
      const { rt, trace } = harness(provider(), { programDir: root });
      const out = await rt.call(callReq(agent("n", { permissions: perms({ network, read: ["*.md"] }) }), "t", null));
      expect(standin.requests[0].body.tools.map((t: { name: string }) => t.name)).toEqual(["read_file", "list_files", "search_files"]);
      expect(errorOf(out)).toMatchObject({ kind: "rejected" });
      expect(trace.events.find((e) => e.type === "call")!.not_granted).toEqual(network === "prompt" ? ['network="prompt"'] : undefined);
    }
  });
});
