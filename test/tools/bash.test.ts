// The bash tool through the real SDK against the Messages API stand-in: offered only with bash="allow" or
// "prompt"; commands run in the program's directory without credentials in their environment; "prompt" asks
// through the injected callback and denies without one; timeouts, floods of output and cancellation kill the
// command's whole process group.
import { readFileSync } from "node:fs";
import { mkdir, readFile, realpath } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AnthropicProvider } from "../../runtime/providers/anthropic.ts";
import type { CommandQuestion, ShellSettings } from "../../runtime/tools/bash-tool.ts";
import { commandEnv, isSecretVariable } from "../../runtime/tools/shell-env.ts";
import type { Value } from "../../runtime/values.ts";
import { perm } from "../../stdlib/basics.ts";
import { errorOf } from "../support/errors.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { agent, callReq, harness, site } from "../calls/helpers.ts";

const standin = useStandin();
const root = useTempDir("vvm-bash-");
const provider = () => new AnthropicProvider({ apiKey: "sk-ant-dummy", baseURL: standin.url, log: () => {} });
const perms = (kw: Record<string, Value>) => perm([], new Map(Object.entries(kw)), null, site());
const ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/home/someone",
  FOO: "bar",
  ANTHROPIC_API_KEY: "sk-ant-api03-realish",
  GITHUB_TOKEN: "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
  DB_PASSWORD: "hunter2",
  HARMLESS_LOOKING: "sk-live-looking-value",
  KEYBOARD_LAYOUT: "dvorak",
};

let n = 0;
async function programDir(): Promise<string> {
  const dir = path.join(root, `p${++n}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The tool_result blocks of the newest user message of a recorded request, as [is_error, content]. */
function results(i: number): [boolean, string][] {
  const messages = standin.requests[i].body.messages;
  return messages[messages.length - 1].content.map((b: { is_error?: boolean; content: string }) => [b.is_error === true, b.content]);
}

/** Running (a zombie waiting for its reaper counts as ended: it was killed, only not yet collected). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = (() => {
    try {
      return readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return null;
    }
  })();
  return stat === null || stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
}

async function pidIn(file: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const text = await readFile(file, "utf8").catch(() => "");
    if (/^\d+\n/.test(text)) return Number(text.trim());
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no pid in ${file}`);
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 10));
  return !alive(pid);
}

function shell(over: Partial<ShellSettings> = {}): ShellSettings {
  return { env: ENV, confirm: null, ...over };
}

describe("bash through the SDK", () => {
  it('bash="allow": offered, runs in the program directory, answers output and exit code, without credentials in the environment', async () => {
    const dir = await programDir();
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "bash", input: { command: "pwd; echo out; echo err >&2; exit 3" } }, { name: "bash", input: { command: "env | sort" } }] },
      { type: "text", text: "ran" },
    );
    const { rt, trace } = harness(provider(), { programDir: dir, shell: shell() });
    expect(await rt.call(callReq(agent("sh", { permissions: perms({ bash: "allow" }) }), "Build it.", null))).toBe("ran");
    const tools = standin.requests[0].body.tools;
    expect(tools.map((t: { name: string }) => t.name)).toEqual(["bash"]);
    expect(tools[0].input_schema).toMatchObject({ required: ["command"], additionalProperties: false });
    const [first, second] = results(1);
    expect(first).toEqual([false, `${await realpath(dir)}\nout\nerr\n[bash: exit code 3]`]);
    expect(second[0]).toBe(false);
    expect(second[1]).toContain("FOO=bar");
    expect(second[1]).toContain("KEYBOARD_LAYOUT=dvorak");
    expect(second[1]).toContain("PATH=/usr/local/bin");
    for (const secret of ["ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "HARMLESS_LOOKING", "sk-ant", "hunter2"]) expect(second[1]).not.toContain(secret);
    const events = trace.events.filter((e) => e.type === "tool");
    // (in the order the commands ended)
    expect(events.map((e) => [e.tool, e.allowed, e.ok, e.exit_code]).sort()).toEqual([
      ["bash", true, true, 0],
      ["bash", true, true, 3],
    ]);
    // the trace never holds the command or its output
    expect(JSON.stringify(trace.events)).not.toMatch(/echo out|FOO=bar/);
  });

  it("without bash the tool is not offered, and a use is denied naming the permission", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "touch made" } }] }, { type: "text", text: "no shell" });
    const { rt, trace } = harness(provider(), { programDir: dir, shell: shell() });
    expect(await rt.call(callReq(agent("r", { permissions: perms({ read: ["**"], bash: "deny" }) }), "t", null))).toBe("no shell");
    expect(standin.requests[0].body.tools.map((t: { name: string }) => t.name)).not.toContain("bash");
    expect(results(1)).toEqual([[true, 'permission denied: bash needs bash="allow" (or "prompt") in the agent\'s permissions, and this agent has bash="deny"']]);
    expect(await readFile(path.join(dir, "made")).catch(() => null)).toBeNull();
    expect(trace.events.find((e) => e.type === "tool")).toMatchObject({ tool: "bash", allowed: false, denied: "bash", exit_code: null });
  });

  it('bash="prompt" without a terminal denies every command; with one it asks with the exact command', async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "touch made" } }] }, { type: "text", text: "denied" });
    const noTty = harness(provider(), { programDir: dir, shell: shell({ confirm: null }) });
    const a = agent("asker", { permissions: perms({ bash: "prompt" }) });
    expect(await noTty.rt.call(callReq(a, "t", null))).toBe("denied");
    expect(standin.requests[0].body.tools[0].description).toContain("shown to a person");
    expect(results(1)).toEqual([[true, 'permission denied: this agent has bash="prompt", and there is no terminal to ask (standard input or stderr is not a terminal), so the command did not run']]);
    expect(await readFile(path.join(dir, "made")).catch(() => null)).toBeNull();

    standin.reset();
    const asked: CommandQuestion[] = [];
    const confirm = async (q: CommandQuestion) => (asked.push(q), q.command.startsWith("touch"));
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "touch made" } }, { name: "bash", input: { command: "rm -rf ." } }] }, { type: "text", text: "asked" });
    const tty = harness(provider(), { programDir: dir, shell: shell({ confirm }) });
    expect(await tty.rt.call(callReq(a, "t", null))).toBe("asked");
    expect(asked).toEqual([
      { agent: "asker", command: "touch made", cwd: dir },
      { agent: "asker", command: "rm -rf .", cwd: dir },
    ]);
    expect(results(1)).toEqual([
      [false, "[bash: exit code 0]"],
      [true, 'permission denied: this agent has bash="prompt", and the person at the terminal said no; the command did not run'],
    ]);
    expect(await readFile(path.join(dir, "made"), "utf8")).toBe("");
  });

  it("a command that never ends is killed at its timeout, with what it started", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "echo started; sleep 30 & echo $! > child.pid; wait" } }] }, { type: "text", text: "gave up" });
    const { rt, trace } = harness(provider(), { programDir: dir, shell: shell({ limits: { timeoutMs: 400 } }) });
    const t0 = performance.now();
    expect(await rt.call(callReq(agent("slow", { permissions: perms({ bash: "allow" }) }), "t", null))).toBe("gave up");
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(results(1)).toEqual([[true, "the command did not finish within 0.4s and was killed, with everything it started; its output so far:\nstarted\n"]]);
    expect(await gone(await pidIn(path.join(dir, "child.pid")))).toBe(true);
    expect(trace.events.find((e) => e.type === "tool")).toMatchObject({ ok: false, error: "timeout" });
  });

  it("a command that prints without end is killed past the output cap; the model sees its start and end", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "yes flood" } }, { name: "bash", input: { command: "seq 1 100000" } }] }, { type: "text", text: "too much" });
    const { rt } = harness(provider(), { programDir: dir, shell: shell({ limits: { maxOutputBytes: 2 ** 20 } }) });
    expect(await rt.call(callReq(agent("loud", { permissions: perms({ bash: "allow" }) }), "t", null))).toBe("too much");
    const [flood, long] = results(1);
    expect(flood[0]).toBe(true);
    expect(flood[1]).toMatch(/^the command printed more than 1 MiB and was killed, with everything it started; send its output to a file or filter it; its output so far:\nflood\nflood/);
    expect(flood[1].length).toBeLessThan(40_000);
    // a long but finite output: the start and the end, the middle left out and counted
    expect(long[0]).toBe(false);
    expect(long[1]).toMatch(/^1\n2\n3\n/);
    expect(long[1]).toMatch(/\n…\[[\d,]+ bytes of output left out\]…\n/);
    expect(long[1]).toMatch(/\n99999\n100000\n\[bash: exit code 0\]$/);
  });

  it("cancelling the call kills the running command and what it started", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "sleep 30 & echo $! > child.pid; wait" } }] });
    const ac = new AbortController();
    const { rt } = harness(provider(), { programDir: dir, shell: shell() });
    const pending = rt.call(callReq(agent("c", { permissions: perms({ bash: "allow" }) }), "t", null, {}, { signal: ac.signal }));
    const pid = await pidIn(path.join(dir, "child.pid"));
    expect(alive(pid)).toBe(true);
    ac.abort();
    expect(errorOf(await pending)!.kind).toBe("cancelled");
    expect(await gone(pid)).toBe(true);
  });

  it("the call's timeout= covers a running command: it is killed at the deadline", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "sleep 30 & echo $! > child.pid; wait" } }] });
    const { rt } = harness(provider(), { programDir: dir, shell: shell() });
    const out = await rt.call(callReq(agent("t", { permissions: perms({ bash: "allow" }) }), "t", null, { timeout: "1s" }));
    expect(errorOf(out)!.kind).toBe("timeout");
    expect(await gone(await pidIn(path.join(dir, "child.pid")))).toBe(true);
  });

  it("a background job does not outlive its command", async () => {
    const dir = await programDir();
    standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "sleep 30 & echo $! > child.pid" } }] }, { type: "text", text: "ok" });
    const { rt } = harness(provider(), { programDir: dir, shell: shell() });
    const t0 = performance.now();
    expect(await rt.call(callReq(agent("bg", { permissions: perms({ bash: "allow" }) }), "t", null))).toBe("ok");
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(results(1)).toEqual([[false, "[bash: exit code 0]"]]);
    expect(await gone(await pidIn(path.join(dir, "child.pid")))).toBe(true);
  });
});

describe.skipIf(process.platform !== "linux")("jobs that leave the command's process group (Linux)", () => {
  it("a job started in a session of its own (setsid) is killed with its command all the same", async () => {
    const dir = await programDir();
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "bash", input: { command: "setsid sh -c 'echo $$ > s.pid; exec sleep 30' >/dev/null 2>&1 &\nwhile [ ! -s s.pid ]; do sleep 0.05; done" } }] },
      { type: "text", text: "ok" },
    );
    const { rt } = harness(provider(), { programDir: dir, shell: shell() });
    expect(await rt.call(callReq(agent("bg", { permissions: perms({ bash: "allow" }) }), "t", null))).toBe("ok");
    expect(await gone(await pidIn(path.join(dir, "s.pid")))).toBe(true);
  });
});

describe("the command environment", () => {
  it("withholds credentials by name and by value, and keeps the rest", () => {
    const { env, withheld } = commandEnv({ ...ENV, AWS_SECRET_ACCESS_KEY: "x", NPM_TOKEN: "x", OPENAI_API_KEY: "x", SSH_AUTH_SOCK: "/tmp/agent", VVM_MAX_TOKENS: "5", PASSAGE: "keep", LANG: "C" });
    expect(Object.keys(env).sort()).toEqual(["FOO", "HOME", "KEYBOARD_LAYOUT", "LANG", "PASSAGE", "PATH"]);
    expect(withheld).toEqual(["ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "HARMLESS_LOOKING", "NPM_TOKEN", "OPENAI_API_KEY", "SSH_AUTH_SOCK", "VVM_MAX_TOKENS"]);
    expect(isSecretVariable("MYAPIKEY", "x")).toBe(true);
    expect(isSecretVariable("EDITOR", "vim")).toBe(false);
  });
});
