// Agents with permissions through `vvm run`: paths are the program's directory's (not the working
// directory's), offline under a script and online against the stand-in, with one trace event per tool use.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { collect, runCli, spawnCli } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";

const root = useTempDir("vvm-tools-cli-");
const standin = useStandin();

const PROGRAM = `
agent scribe(
  model="haiku",
  prompt="You keep the team's notes.",
  permissions=perm(read=["notes/**"], write=["notes/**"]),
)

entry = @scribe \`Add today's entry to the notes.\`(())
export entry
`;

const SCRIPT = `
rules:
  - kind: agent
    agent: scribe
    turn: 1
    tool_use:
      - { name: list_files, input: { pattern: "notes/*.md" } }
      - { name: write_file, input: { path: notes/today.md, content: "- shipped the tool loop\\n" } }
  - { kind: agent, agent: scribe, turn: 2, reply: "Added one entry." }
`;

async function program(name: string): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(path.join(dir, "notes"), { recursive: true });
  await writeFile(path.join(dir, "notes", "yesterday.md"), "- wrote the spec\n");
  await writeFile(path.join(dir, "scribe.vvm"), PROGRAM);
  await writeFile(path.join(dir, "scribe.yaml"), SCRIPT);
  return dir;
}

describe("vvm run with tools", () => {
  it("offline with a script: the tools act in the program's directory and the trace lists each use", async () => {
    const dir = await program("offline");
    // run from elsewhere: the paths still belong to the program's directory
    const res = await runCli(["run", path.join(dir, "scribe.vvm"), "--script", path.join(dir, "scribe.yaml"), "--trace", path.join(root, "offline.jsonl")], { cwd: root });
    expect(res.stderr).not.toMatch(/warning/);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ entry: "Added one entry." });
    expect(await readFile(path.join(dir, "notes", "today.md"), "utf8")).toBe("- shipped the tool loop\n");
    const events = (await readFile(path.join(root, "offline.jsonl"), "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l));
    const tools = events.filter((e) => e.type === "tool");
    expect(tools.map((e) => [e.tool, e.ok, e.path]).sort()).toEqual([
      ["list_files", true, "notes"],
      ["write_file", true, "notes/today.md"],
    ]);
    expect(events.find((e) => e.type === "call")).toMatchObject({ agent: "scribe", ok: true, turns: 2, tool_uses: 2, attempts: 2 });
    expect(res.stderr).toMatch(/vvm: 1 call \(2 attempts\)/);
  });

  it("against the stand-in through the real SDK", async () => {
    const dir = await program("online");
    standin.enqueue(
      { type: "tool_use", calls: [{ name: "read_file", input: { path: "notes/yesterday.md" } }, { name: "write_file", input: { path: "notes/today.md", content: "- more\n" } }] },
      { type: "text", text: "Read yesterday's, wrote today's." },
    );
    const res = await runCli(["run", path.join(dir, "scribe.vvm")], { cwd: root, env: standin.env() });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ entry: "Read yesterday's, wrote today's." });
    expect(await readFile(path.join(dir, "notes", "today.md"), "utf8")).toBe("- more\n");
    const last = standin.requests[1].body.messages[2].content;
    expect(last[0]).toMatchObject({ type: "tool_result", content: "- wrote the spec" });
  });

  it('bash="prompt" asks the person at the terminal with the exact command, and denies without a terminal', async () => {
    const dir = path.join(root, "prompt");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "build.vvm"), `agent builder(model="haiku", permissions=perm(bash="prompt"))\nr = @builder \`Build.\`(())\nexport r\n`);
    const reply = () =>
      standin.enqueue({ type: "tool_use", calls: [{ name: "bash", input: { command: "echo $ANTHROPIC_API_KEY-\u001b[2J > built.txt" } }] }, { type: "text", text: "done" });
    reply();
    const noTty = await runCli(["run", path.join(dir, "build.vvm")], { cwd: root, env: standin.env() });
    expect(noTty.code).toBe(0);
    expect(standin.requests[1].body.messages[2].content[0]).toMatchObject({ is_error: true, content: expect.stringMatching(/there is no terminal to ask/) });
    expect(await readFile(path.join(dir, "built.txt"), "utf8").catch(() => null)).toBeNull();

    standin.reset();
    reply();
    const yes = await runCli(["run", path.join(dir, "build.vvm")], { cwd: root, env: standin.env(), answer: "y" });
    expect(yes.code).toBe(0);
    // the exact command, its escape sequence shown rather than sent to the terminal
    expect(yes.stderr).toContain("vvm: agent builder asks to run a command in " + dir + ":\n  echo $ANTHROPIC_API_KEY-\\u001b[2J > built.txt\nRun it? [y/N] ");
    // the API key vvm uses is not in the command's environment
    expect(await readFile(path.join(dir, "built.txt"), "utf8")).toBe("-\u001b[2J\n");

    standin.reset();
    reply();
    await runCli(["run", path.join(dir, "build.vvm")], { cwd: root, env: standin.env(), answer: "n" });
    expect(standin.requests[1].body.messages[2].content[0]).toMatchObject({ is_error: true, content: expect.stringMatching(/said no/) });
  });

  it("offline with a script: bash runs in the program's directory without the API key in its environment", async () => {
    const dir = path.join(root, "bash-offline");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "build.vvm"), `agent builder(model="haiku", permissions=perm(bash="allow"))\nr = @builder \`Build.\`(())\nexport r\n`);
    await writeFile(
      path.join(dir, "build.yaml"),
      `rules:\n  - kind: agent\n    agent: builder\n    turn: 1\n    tool_use:\n      - { name: bash, input: { command: "env > env.txt; pwd > where.txt" } }\n  - { kind: agent, agent: builder, turn: 2, reply: "built" }\n`,
    );
    const res = await runCli(["run", path.join(dir, "build.vvm"), "--script", path.join(dir, "build.yaml")], { cwd: root, env: { ANTHROPIC_API_KEY: "sk-ant-offline-secret", GH_TOKEN: "x", VISIBLE: "yes" } });
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ r: "built" });
    const env = await readFile(path.join(dir, "env.txt"), "utf8");
    expect(env).toContain("VISIBLE=yes");
    expect(env).not.toMatch(/ANTHROPIC_API_KEY|sk-ant-offline-secret|GH_TOKEN/);
    expect((await readFile(path.join(dir, "where.txt"), "utf8")).trim()).toBe(dir);
  });

  it("Ctrl-C (SIGINT) to vvm run kills the command bash is running, and what it started", async () => {
    const dir = path.join(root, "bash-sigint");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "wait.vvm"), `agent waiter(model="haiku", permissions=perm(bash="allow"))\nr = @waiter \`Wait.\`(())\nexport r\n`);
    await writeFile(
      path.join(dir, "wait.yaml"),
      `rules:\n  - kind: agent\n    agent: waiter\n    turn: 1\n    tool_use:\n      - { name: bash, input: { command: "sleep 30 & echo $! > child.pid; wait" } }\n  - { kind: agent, agent: waiter, turn: 2, reply: "waited" }\n`,
    );
    const child = spawnCli(["run", path.join(dir, "wait.vvm"), "--script", path.join(dir, "wait.yaml")]);
    const done = collect(child);
    let pid = 0;
    for (let i = 0; i < 1000 && pid === 0; i++) {
      pid = Number((await readFile(path.join(dir, "child.pid"), "utf8").catch(() => "")).trim());
      if (pid === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(pid).toBeGreaterThan(0);
    child.kill("SIGINT");
    const res = await done;
    expect(res.code).toBe(130);
    expect(res.stdout).toBe("");
    // killed: gone, or a zombie waiting for its reaper (a moment after the signal)
    const ended = async () => {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
      return stat === null || stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z";
    };
    for (let i = 0; i < 50 && !(await ended()); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await ended()).toBe(true);
  }, 30_000);
});
