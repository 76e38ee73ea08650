// The tool loop through the real SDK against the Messages API stand-in: every tool allowed and denied, the
// wire format of tools, tool_use and tool_result, several tool calls in one turn, failures mid-loop.
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AnthropicProvider } from "../../runtime/providers/anthropic.ts";
import type { Value } from "../../runtime/values.ts";
import { LIMITS } from "../../runtime/tools/file-tools.ts";
import { perm } from "../../stdlib/basics.ts";
import { errorOf } from "../support/errors.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { conversationProblem } from "../support/standin.ts";
import { agent, callReq, harness, site } from "../calls/helpers.ts";

const standin = useStandin();
const root = useTempDir("vvm-tools-sdk-");
const provider = () => new AnthropicProvider({ apiKey: "sk-ant-dummy", baseURL: standin.url, log: () => {} });
const perms = (kw: Record<string, Value>) => perm([], new Map(Object.entries(kw)), null, site());

let n = 0;
async function programDir(): Promise<string> {
  const dir = path.join(root, `p${++n}`);
  await mkdir(path.join(dir, "docs"), { recursive: true });
  await mkdir(path.join(dir, "out"), { recursive: true });
  await writeFile(path.join(dir, "docs", "guide.md"), "# Guide\nStep one.\nStep two.\n");
  await writeFile(path.join(dir, "out", "log.md"), "started\n");
  await writeFile(path.join(dir, "secret.env"), "TOKEN=abc\n");
  await writeFile(path.join(root, `outside-${n}.txt`), "outside\n");
  await symlink(path.join(root, `outside-${n}.txt`), path.join(dir, "docs", "escape.md"));
  return dir;
}

/** The tool_result blocks of the newest user message of a recorded request, as [is_error, content]. */
function results(i: number): [boolean, string][] {
  const messages = standin.requests[i].body.messages;
  const last = messages[messages.length - 1];
  return last.content.map((b: { type: string; is_error?: boolean; content: string }) => {
    expect(b.type).toBe("tool_result");
    return [b.is_error === true, b.content];
  });
}

describe("tools through the SDK", () => {
  it("offers the tools of the permissions, each allowed use works, and the final text is the value", async () => {
    const dir = await programDir();
    standin.enqueue(
      {
        type: "tool_use",
        text: "Let me look.",
        calls: [
          { name: "read_file", input: { path: "docs/guide.md", offset: 2, limit: 1 } },
          { name: "list_files", input: { pattern: "docs/**" } },
          { name: "search_files", input: { query: "Step \\w+", pattern: "**/*.md" } },
          { name: "write_file", input: { path: "out/summary.md", content: "two steps\n" } },
          { name: "edit_file", input: { path: "out/log.md", old: "started", new: "finished" } },
        ],
      },
      { type: "text", text: "Done: two steps." },
    );
    const { rt, acc, trace } = harness(provider(), { programDir: dir });
    const a = agent("worker", { prompt: "You work with files.", permissions: perms({ read: ["docs/**", "out/**"], write: ["out/**"] }) });
    expect(await rt.call(callReq(a, "Summarise the guide.", null))).toBe("Done: two steps.");

    const first = standin.requests[0].body;
    expect(first.tools.map((t: { name: string }) => t.name)).toEqual(["read_file", "list_files", "search_files", "write_file", "edit_file"]);
    const readSpec = first.tools[0];
    expect(readSpec.input_schema).toMatchObject({ type: "object", required: ["path"], additionalProperties: false });
    expect(readSpec.description).toContain('"docs/**", "out/**"');
    expect(first.tools[3].description).toContain('"out/**"');

    const second = standin.requests[1].body;
    // the assistant turn goes back as the model gave it, then one tool_result per tool_use, in order
    expect(second.messages).toHaveLength(3);
    expect(second.messages[1].role).toBe("assistant");
    expect(second.messages[1].content.map((b: { type: string }) => b.type)).toEqual(["text", "tool_use", "tool_use", "tool_use", "tool_use", "tool_use"]);
    const ids = second.messages[1].content.slice(1).map((b: { id: string }) => b.id);
    expect(second.messages[2].content.map((b: { tool_use_id: string }) => b.tool_use_id)).toEqual(ids);
    // the newest result is cache-marked, so a long loop reads its past from the prompt cache
    expect(second.messages[2].content[4].cache_control).toEqual({ type: "ephemeral" });
    expect(second.messages[2].content[0].cache_control).toBeUndefined();
    expect(results(1)).toEqual([
      [false, "Step one.\n\n[read_file: showing lines 2–2 of docs/guide.md (28 bytes in all; stopped at limit 1): call read_file with offset=3 to read on]"],
      [false, "docs/guide.md"],
      [false, "docs/guide.md:2: Step one.\ndocs/guide.md:3: Step two."],
      [false, "wrote 10 bytes to out/summary.md (created)"],
      [false, "edited out/log.md: replaced 1 occurrence (the file is now 9 bytes)"],
    ]);
    expect(await readFile(path.join(dir, "out/summary.md"), "utf8")).toBe("two steps\n");
    expect(await readFile(path.join(dir, "out/log.md"), "utf8")).toBe("finished\n");
    // tokens of both turns
    expect(acc.callAttempts).toBe(2);
    expect(acc.inputTokens).toBeGreaterThan(0);
    expect(trace.events.filter((e) => e.type === "tool").every((e) => e.allowed === true && e.ok === true)).toBe(true);
  });

  it("answers each denied use as a tool error naming the missing permission; the call still succeeds", async () => {
    const dir = await programDir();
    standin.enqueue(
      {
        type: "tool_use",
        calls: [
          { name: "read_file", input: { path: "secret.env" } },
          { name: "read_file", input: { path: "docs/escape.md" } },
          { name: "read_file", input: { path: "../outside-" + n + ".txt" } },
          { name: "list_files", input: { pattern: "**" } },
          { name: "search_files", input: { query: "TOKEN" } },
          { name: "write_file", input: { path: "docs/new.md", content: "x" } },
          { name: "edit_file", input: { path: "docs/guide.md", old: "Guide", new: "Gone" } },
          { name: "list_files", input: { pattern: "/etc/*" } },
          { name: "search_files", input: { query: "root", pattern: "/etc/**" } },
        ],
      },
      { type: "text", text: "I could only read the guide." },
    );
    const { rt, trace } = harness(provider(), { programDir: dir });
    const a = agent("reader", { permissions: perms({ read: ["docs/**"] }) });
    expect(await rt.call(callReq(a, "Look around.", null))).toBe("I could only read the guide.");
    expect(standin.requests[0].body.tools.map((t: { name: string }) => t.name)).toEqual(["read_file", "list_files", "search_files"]);
    const r = results(1);
    expect(r[0]).toEqual([true, 'permission denied: reading secret.env needs the read permission, and none of this agent\'s read globs ("docs/**") matches it']);
    expect(r[1][0]).toBe(true);
    expect(r[1][1]).toMatch(/^permission denied: reading docs\/escape\.md needs the read permission, .* \("docs\/escape\.md" leads through a link out of the program's directory\)$/);
    expect(r[2]).toEqual([true, `permission denied: "../outside-${n}.txt" contains "..", and paths may not climb out of a directory; write it from the program's directory (or as an absolute path one of your globs allows)`]);
    // listing and searching only ever show readable files (the link out and the secret are left out)
    expect(r[3]).toEqual([false, "docs/guide.md"]);
    expect(r[4]).toEqual([false, 'no line matches "TOKEN" in 1 readable file matching "**"']);
    expect(r[5]).toEqual([true, "permission denied: write_file needs the write permission, and this agent has no write globs"]);
    expect(r[6]).toEqual([true, "permission denied: edit_file needs the write permission, and this agent has no write globs"]);
    // a pattern whose directory no read glob reaches is refused outright
    expect(r[7]).toEqual([true, 'permission denied: reading /etc needs the read permission, and none of this agent\'s read globs ("docs/**") matches it']);
    expect(r[8]).toEqual([true, 'permission denied: reading /etc needs the read permission, and none of this agent\'s read globs ("docs/**") matches it']);
    expect(await readFile(path.join(dir, "docs/guide.md"), "utf8")).toBe("# Guide\nStep one.\nStep two.\n");
    const events = trace.events.filter((e) => e.type === "tool");
    expect(events.filter((e) => e.allowed === false).map((e) => `${e.tool} ${e.denied}`).sort()).toEqual([
      "edit_file write",
      "list_files read",
      "read_file null",
      "read_file read",
      "read_file read",
      "search_files read",
      "write_file write",
    ]);
    // never file contents in the trace
    expect(JSON.stringify(trace.events)).not.toMatch(/TOKEN=abc|Step one/);
  });

  it("a write outside the write globs is denied even when read allows it", async () => {
    const dir = await programDir();
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "write_file", input: { path: "docs/guide.md", content: "overwritten" } }, { name: "edit_file", input: { path: path.join(dir, "secret.env"), old: "abc", new: "xyz" } }] },
      { type: "text", text: "ok" },
    );
    const { rt } = harness(provider(), { programDir: dir });
    await rt.call(callReq(agent("w", { permissions: perms({ read: ["**"], write: ["out/*.md"] }) }), "t", null));
    expect(results(1)).toEqual([
      [true, 'permission denied: writing docs/guide.md needs the write permission, and none of this agent\'s write globs ("out/*.md") matches it'],
      [true, 'permission denied: writing secret.env needs the write permission, and none of this agent\'s write globs ("out/*.md") matches it'],
    ]);
    expect(await readFile(path.join(dir, "docs/guide.md"), "utf8")).toBe("# Guide\nStep one.\nStep two.\n");
    expect(await readFile(path.join(dir, "secret.env"), "utf8")).toBe("TOKEN=abc\n");
  });

  it("a tool the API does not know and bad arguments are tool errors; the loop goes on", async () => {
    const dir = await programDir();
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "bash", input: { command: "cat secret.env" } }, { name: "read_file", input: { path: ["docs/guide.md"] } }, { name: "run_program", input: {} }] },
      { type: "text", text: "fine" },
    );
    const { rt } = harness(provider(), { programDir: dir });
    expect(await rt.call(callReq(agent("x", { permissions: perms({ read: ["docs/**"] }) }), "t", null))).toBe("fine");
    expect(results(1)).toEqual([
      [true, 'permission denied: bash needs bash="allow" (or "prompt") in the agent\'s permissions, and this agent has bash="deny"'],
      [true, "bad arguments for read_file: path must be a string"],
      [true, 'there is no tool named "run_program"; the tools are read_file, list_files, search_files'],
    ]);
  });

  it("a reply asking for tools when none were offered ends the call as rejected, naming the agent, rather than going on to a request the API refuses", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "read_file", input: { path: "secret.env" } }] }, { type: "text", text: "never asked" });
    const { rt, trace } = harness(provider(), { programDir: dir });
    const out = await rt.call(callReq(agent("plain"), "t", null, { retry: 2 }));
    expect(errorOf(out)).toMatchObject({
      kind: "rejected",
      message: "the model asked for tools, but agent 'plain' was offered none (the API takes no tool results without tools); the call ended without a final answer",
      data: { attempts: 1 },
    });
    // one request, offering no tools; no tool ran, and no request the API refuses went out
    expect(standin.requests).toHaveLength(1);
    expect(standin.requests[0].body.tools).toBeUndefined();
    expect(trace.events.filter((e) => e.type === "tool")).toEqual([]);
  });

  it("two tool uses under one id run neither tool: the API could not take both results (a broken proxy's reply)", async () => {
    const dir = await programDir();
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "write_file", input: { path: "notes/a.md", content: "a" }, id: "toolu_same" }, { name: "write_file", input: { path: "notes/b.md", content: "b" }, id: "toolu_same" }] },
      { type: "text", text: "never asked" },
    );
    const { rt, trace } = harness(provider(), { programDir: dir });
    const out = await rt.call(callReq(agent("scribe", { permissions: perms({ write: ["notes/**"] }) }), "t", null, { retry: 2 }));
    expect(errorOf(out)).toMatchObject({
      kind: "rejected",
      message: 'the reply asked for two tools under one tool_use id ("toolu_same"), which the API cannot take results for; no tool ran, and the call ended without a final answer',
      data: { attempts: 1 },
    });
    expect(standin.requests).toHaveLength(1);
    expect(trace.events.filter((e) => e.type === "tool")).toEqual([]);
    await expect(readdir(path.join(dir, "notes"))).rejects.toThrow();
  });

  it("a made-up tool name or id reaches the trace only as its first 64 characters (it is reply text of any length)", async () => {
    const dir = await programDir();
    const name = "token sk-live-from-docs " + "n".repeat(100_000);
    const id = "toolu_" + "i".repeat(100_000);
    standin.enqueue({ type: "tool_use", calls: [{ name, input: { path: "docs/guide.md" }, id }, { name: "read_file", input: { path: "docs/guide.md" } }] }, { type: "text", text: "done" });
    const { rt, trace } = harness(provider(), { programDir: dir });
    expect(await rt.call(callReq(agent("x", { permissions: perms({ read: ["docs/**"] }) }), "t", null))).toBe("done");
    const events = trace.events.filter((e) => e.type === "tool");
    expect(events.map((e) => [e.tool, e.tool_use_id, e.error])).toEqual([
      [name.slice(0, 64) + "…", id.slice(0, 64) + "…", "unknown_tool"],
      ["read_file", expect.stringMatching(/^toolu_req_standin_\d+_1$/), null],
    ]);
    // the result still answers the whole id, so the API can pair it with its use
    expect(standin.requests[1].body.messages[2].content[0].tool_use_id).toBe(id);
  });

  it("text cut inside a character and half surrogate pairs in the input never reach the API (it refuses them)", async () => {
    const dir = await programDir();
    // both cuts (read_file at LIMITS.lineChars, search_files at its line limit) land between an emoji's two halves
    await writeFile(path.join(dir, "docs", "wide.md"), "a".repeat(LIMITS.lineChars - 1) + "😀 tail\n" + "needle" + "b".repeat(293) + "😀 tail\n");
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "read_file", input: { path: "docs/wide.md" } }, { name: "search_files", input: { query: "needle" } }] },
      { type: "text", text: "read" },
    );
    const { rt } = harness(provider(), { programDir: dir });
    // a program's JSON input may hold "\ud83d" alone
    expect(await rt.call(callReq(agent("x", { permissions: perms({ read: ["docs/**"] }) }), "t", "half \ud83d here"))).toBe("read");
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    for (const [, content] of results(1)) expect(content).not.toMatch(lone);
    expect(results(1)[0][1]).toContain("a".repeat(LIMITS.lineChars - 1) + " …[line cut");
    expect(JSON.stringify(standin.requests[0].body.messages)).toContain("half \uFFFD here");
  });

  it("an API failure mid-loop is the call's error value, and the file written before it stays", async () => {
    const dir = await programDir();
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "write_file", input: { path: "out/partial.md", content: "half\n" } }] },
      { type: "error", status: 500, message: "boom" },
    );
    const { rt, trace } = harness(provider(), { programDir: dir });
    const out = await rt.call(callReq(agent("w", { permissions: perms({ write: ["out/**"] }) }), "t", null));
    const e = errorOf(out)!;
    expect(e.kind).toBe("spawn_failed");
    expect(e.message).toMatch(/HTTP 500.*boom/);
    expect(e.data).toMatchObject({ status: 500, attempts: 2, turns: 2 });
    expect(await readFile(path.join(dir, "out/partial.md"), "utf8")).toBe("half\n");
    expect(trace.events.find((x) => x.type === "tool")).toMatchObject({ tool: "write_file", path: "out/partial.md", bytes_written: 5 });
  });

  it("cancellation mid-loop aborts the request in flight", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "list_files", input: { pattern: "*" } }] }, { type: "hang" });
    const ac = new AbortController();
    const { rt } = harness(provider(), { programDir: dir });
    const pending = rt.call(callReq(agent("c", { permissions: perms({ read: ["**"] }) }), "t", null, {}, { signal: ac.signal }));
    while (standin.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    expect(errorOf(await pending)!.kind).toBe("cancelled");
    await new Promise((r) => setTimeout(r, 50));
    expect(standin.abandoned).toBe(1);
  });

  it("max_turns ends a loop that never stops", async () => {
    const dir = await programDir();
    standin.setHandler(() => ({ type: "tool_use", calls: [{ name: "list_files", input: { pattern: "docs" } }] }));
    const { rt } = harness(provider(), { programDir: dir });
    const out = await rt.call(callReq(agent("l", { permissions: perms({ read: ["docs/**"] }), max_turns: 4 }), "t", null));
    expect(errorOf(out)).toMatchObject({ kind: "rejected", data: { turns: 4, attempts: 4 } });
    expect(standin.requests).toHaveLength(4);
  });
});

describe("the stand-in's conversation rules", () => {
  const use = { role: "assistant", content: [{ type: "tool_use", id: "a", name: "t", input: {} }] };
  const tools = [{ name: "t", input_schema: { type: "object" } }];
  it("refuse what the real API refuses", () => {
    expect(conversationProblem({ tools, messages: [{ role: "user", content: "hi" }, use, { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: "x" }] }] })).toBeNull();
    expect(conversationProblem({ tools, messages: [{ role: "user", content: "hi" }, use, { role: "user", content: [{ type: "text", text: "no result" }] }] })).toMatch(/without `tool_result` blocks immediately after: a/);
    expect(conversationProblem({ tools, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "zz", content: "x" }] }] })).toMatch(/unexpected `tool_use_id`/);
    const twice = { role: "assistant", content: [use.content[0], use.content[0]] };
    expect(conversationProblem({ tools, messages: [{ role: "user", content: "hi" }, twice, { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: "x" }] }] })).toMatch(/ids must be unique/);
    expect(conversationProblem({ messages: [{ role: "user", content: "hi" }, use, { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: "x" }] }] })).toMatch(/must define tools/);
    expect(conversationProblem({ tools, messages: [{ role: "assistant", content: "x" }] })).toMatch(/expected role "user"/);
    expect(conversationProblem({ tools, messages: [{ role: "user", content: [{ type: "text", text: "" }] }] })).toMatch(/non-empty/);
  });
});

describe("a tool input too deep to send back", () => {
  it("ends the call as rejected, not retried as if the network had failed", async () => {
    const dir = await programDir();
    const deep = '{"a":'.repeat(100_000) + "1" + "}".repeat(100_000);
    const body = `{"type":"message","role":"assistant","model":"m","stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1},"content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":${deep}}]}`;
    standin.enqueue({ type: "body", body });
    const { rt } = harness(provider(), { programDir: dir });
    const out = await rt.call(callReq(agent("a", { permissions: perms({ read: ["docs/**"] }) }), "t", null, { retry: 2 }));
    expect(errorOf(out)).toMatchObject({ kind: "rejected" });
    expect(errorOf(out)!.message).toMatch(/the request could not be written: Maximum call stack size exceeded/);
    expect(standin.requests).toHaveLength(1);
  });
});
