// `vvm run --state filesystem` end to end: a run killed with SIGKILL leaves a readable run directory, and
// `vvm runs ls/show/cat/prune` read (and remove) what runs left.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, spawnCli, collect } from "../support/cli.ts";
import { startStandin, type Standin } from "../support/standin.ts";
import { sinceTime } from "../../src/commands/memory-log.ts";

const tmp = mkdtempSync(path.join(os.tmpdir(), "vvm-state-cli-"));
let standin: Standin;
beforeAll(async () => {
  standin = await startStandin();
});
afterAll(async () => {
  await standin.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const PROGRAM = [
  'agent worker(model="haiku", prompt="You handle one item.")',
  "def handle(item):",
  "  return @worker `Handle item {item}.`(item)",
  "results = pmap(range(120), handle)",
  "export results",
  "",
].join("\n");

describe("a filesystem-state run killed with SIGKILL", () => {
  it("leaves state.md readable, status running, and every binding it lists whole", async () => {
    const dir = mkdtempSync(path.join(tmp, "kill-"));
    writeFileSync(path.join(dir, "fan.vvm"), PROGRAM);
    standin.reset().setHandler((_req, i) => ({ type: "text", text: `Reply number ${i}. ${"x".repeat(5000)}`, delayMs: 40 }));
    const child = spawnCli(["run", "fan.vvm", "--provider", "anthropic", "--state", "filesystem", "--concurrency", "4"], { cwd: dir, env: standin.env() });
    const done = collect(child);
    const bindings = () => {
      const runs = path.join(dir, ".vvm", "runs");
      const [id] = existsSync(runs) ? readdirSync(runs) : [];
      // the run's folder is made before its bindings folder: polled in between, there are none yet
      const folder = id === undefined ? null : path.join(runs, id, "bindings");
      return folder === null || !existsSync(folder) ? [] : readdirSync(folder).filter((f) => f.endsWith(".md"));
    };
    // state.md lists bindings once its first write after them has scanned their names and summaries
    const rows = () => {
      const runs = path.join(dir, ".vvm", "runs");
      const [id] = existsSync(runs) ? readdirSync(runs) : [];
      const file = id === undefined ? null : path.join(runs, id, "state.md");
      return file !== null && existsSync(file) && /^\| \S+ \| bindings\//m.test(readFileSync(file, "utf8"));
    };
    const t0 = Date.now();
    while ((bindings().length < 8 || !rows()) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 10));
    child.kill("SIGKILL");
    const r = await done;
    expect(r.code).not.toBe(0);
    expect(bindings().length).toBeGreaterThanOrEqual(8);
    expect(bindings().length).toBeLessThan(120);

    const [id] = readdirSync(path.join(dir, ".vvm", "runs"));
    const run = path.join(dir, ".vvm", "runs", id!);
    const state = readFileSync(path.join(run, "state.md"), "utf8");
    expect(state).toMatch(/^# VVM Run: /);
    expect(state).toContain("Status: running");
    const listed = [...state.matchAll(/^\| \S+ \| bindings\/(b\d{6})\.md \| Reply number \d+\. \|$/gm)].map((m) => m[1]);
    expect(listed.length).toBeGreaterThan(0);
    for (const b of listed) expect(readFileSync(path.join(run, "bindings", `${b}.md`), "utf8")).toMatch(/^Reply number \d+\. x{5000}$/);

    const ls = await runCli(["runs", "ls", dir]);
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(new RegExp(`${id}\\s+running\\s+`));
    // --dir, as every other vvm runs command takes it; the folder given both ways is a usage error
    expect(await runCli(["runs", "ls", "--dir", dir])).toEqual(ls);
    expect(await runCli(["runs", "ls", dir, "--dir", dir])).toEqual({ code: 64, stdout: "", stderr: `vvm: give the project directory once: ${dir} or --dir ${dir}\n` });
    const show = await runCli(["runs", "show", id!, "--dir", dir]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`run ${id}: running`);
    // a run updated a moment ago and still marked running is not pruned
    const prune = await runCli(["runs", "prune", "--keep", "0", "--dir", dir]);
    expect(prune.stdout).toContain("kept 1 still running");
    expect(existsSync(run)).toBe(true);
  }, 60_000);
});

/** A run id's time part: `20260127-143052`. */
const stamp = (t: Date) => t.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);

describe("vvm runs", () => {
  let dir: string;
  let ids: string[];
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmp, "runs-"));
    writeFileSync(
      path.join(dir, "main.vvm"),
      ['agent a(model="haiku")', "notes = @a `Take notes.`(())", "notes = @a `Take more notes.`(())", "@a `Ping \u001b]0;owned\u0007.`(())", "export notes", ""].join("\n"),
    );
    // in the order they were made: runs within one second do not sort by id
    ids = [];
    for (let i = 0; i < 3; i++) {
      expect((await runCli(["run", "main.vvm", "--provider", "sim", "--state", "filesystem"], { cwd: dir })).code).toBe(0);
      ids.push(readdirSync(path.join(dir, ".vvm", "runs")).find((id) => !ids.includes(id))!);
    }
  });

  it("ls lists the runs, oldest first", async () => {
    const r = await runCli(["runs", "ls"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe("3 runs in .vvm/runs");
    expect(r.stdout.indexOf(ids[0]!)).toBeLessThan(r.stdout.indexOf(ids[2]!));
    expect(r.stdout).toMatch(/completed\s+\S+ \S+\s+3 bindings\s+main\.vvm/);
    const none = await runCli(["runs", "ls", tmp]);
    expect(none).toMatchObject({ code: 0, stdout: expect.stringContaining("no runs in") });
    // runs behind a link are not listed, and the link is named
    mkdirSync(path.join(tmp, "elsewhere", ".vvm"), { recursive: true });
    symlinkSync(path.join(dir, ".vvm", "runs"), path.join(tmp, "elsewhere", ".vvm", "runs"));
    const linked = await runCli(["runs", "ls"], { cwd: path.join(tmp, "elsewhere") });
    expect(linked).toMatchObject({ code: 0, stdout: "no runs: .vvm/runs is a symbolic link, which vvm does not follow\n" });
    // nor is a file where a folder belongs taken for a project without runs
    rmSync(path.join(tmp, "elsewhere", ".vvm", "runs"));
    writeFileSync(path.join(tmp, "elsewhere", ".vvm", "runs"), "");
    expect(await runCli(["runs", "ls"], { cwd: path.join(tmp, "elsewhere") })).toMatchObject({ code: 0, stdout: "no runs: .vvm/runs is not a folder\n" });
  });

  it("show gives the status, the bindings with summaries and the trace, escaping control characters", async () => {
    const r = await runCli(["runs", "show", ids[1]!], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`run ${ids[1]}: completed`);
    expect(r.stdout).toMatch(/b000001\s+notes\s+\[sim:a\] Take notes\./);
    expect(r.stdout).toMatch(/b000002\s+notes\s+\[sim:a\] Take more notes\./);
    expect(r.stdout).toMatch(/b000003\s+_anon_1\s+/);
    expect(r.stdout).toMatch(/Completed with 1 export/);
    expect(r.stdout).not.toContain("\u001b");
    expect(r.stdout).not.toContain("\u0007");
  });

  it("ls and show --json give one JSON document, absolute paths, state.md's header as read", async () => {
    const ls = await runCli(["runs", "ls", "--json"], { cwd: dir });
    expect(ls.code).toBe(0);
    const listed = JSON.parse(ls.stdout);
    expect(listed.root).toBe(realpathSync(path.join(dir, ".vvm", "runs")));
    expect(listed.runs.map((r: { id: string }) => r.id)).toEqual(ids);
    expect(listed.runs[1]).toEqual({ id: ids[1], dir: path.join(listed.root, ids[1]!), status: "completed", state_md: true, program: "main.vvm", started: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), updated: expect.stringMatching(/Z$/), bindings: 3 });
    const show = JSON.parse((await runCli(["runs", "show", ids[1]!, "--json"], { cwd: dir })).stdout);
    expect(show).toMatchObject({ ...listed.runs[1], bindings: [{ name: "notes", binding: "b000001" }, { name: "notes", binding: "b000002" }, { name: "_anon_1", binding: "b000003" }] });
    expect(show.trace.at(-1)).toMatch(/Completed with 1 export/);
    expect(JSON.parse((await runCli(["runs", "ls", tmp, "--json"])).stdout).runs).toEqual([]);
  });

  it("cat prints a binding by name (the latest of that name) or id; unknown ones exit 1", async () => {
    const byName = await runCli(["runs", "cat", ids[0]!, "notes"], { cwd: dir });
    expect(byName).toMatchObject({ code: 0, stdout: "[sim:a] Take more notes.\n" });
    expect(byName.stderr).toContain("1 earlier binding named notes");
    expect((await runCli(["runs", "cat", ids[0]!, "b000001"], { cwd: dir })).stdout).toBe("[sim:a] Take notes.\n");
    const ping = await runCli(["runs", "cat", ids[0]!, "b000003"], { cwd: dir });
    expect(ping.stdout).toContain("\\u001b]0;owned\\u0007");
    expect(await runCli(["runs", "cat", ids[0]!, "nope"], { cwd: dir })).toMatchObject({ code: 1, stderr: expect.stringContaining("no binding named nope") });
    expect(await runCli(["runs", "cat", "19990101", "notes"], { cwd: dir })).toMatchObject({ code: 1, stderr: expect.stringContaining("no run 19990101") });
  });

  it("an empty run id, or a project folder that does not exist, is a usage error", async () => {
    for (const args of [["runs", "show", ""], ["runs", "cat", " ", "notes"]]) {
      expect(await runCli(args, { cwd: dir })).toMatchObject({ code: 64, stdout: "", stderr: "vvm: give a run id, or the start of one (vvm runs ls lists them)\n" });
    }
    // an empty binding name, or an empty DIR (an unset shell variable), names nothing: not the working directory
    expect(await runCli(["runs", "cat", ids[0]!, ""], { cwd: dir })).toMatchObject({ code: 64, stdout: "", stderr: `vvm: give a binding's name or id (vvm runs show ${ids[0]} lists them)\n` });
    expect(await runCli(["runs", "ls", ""], { cwd: dir })).toMatchObject({ code: 64, stdout: "", stderr: "vvm: an empty folder name: name the project directory, or leave it out for the current one\n" });
    const missing = path.join(tmp, "nothere");
    for (const args of [["runs", "ls", missing], ["runs", "prune", "--keep", "0", "--dir", missing], ["runs", "show", ids[0]!, "--dir", missing]]) {
      expect(await runCli(args), args.join(" ")).toMatchObject({ code: 64, stdout: "", stderr: `vvm: ${missing}: no such folder\n` });
    }
  });

  it("ls reads a huge state.md a repository copied in without holding its rows: header and count only", async () => {
    const d = mkdtempSync(path.join(tmp, "huge-"));
    const id = "20260101-000000-cccccc";
    mkdirSync(path.join(d, ".vvm", "runs", id, "bindings"), { recursive: true });
    const row = "| x | bindings/b000001.md | " + "y".repeat(200) + " |\n";
    const rows = row.repeat(Math.floor((15 * 2 ** 20) / row.length));
    writeFileSync(path.join(d, ".vvm", "runs", id, "state.md"), `# VVM Run: ${id}\n\nProgram: big.vvm\nStarted: 2026-01-01T00:00:00Z\nUpdated: 2026-01-01T00:00:00Z\nStatus: completed\n\n## Binding Index\n\n${rows}`);
    const r = await runCli(["runs", "ls", d]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${id}\\s+completed\\s+2026-01-01 00:00:00Z\\s+${rows.length / row.length} bindings\\s+big\\.vvm`));
  });

  it("prune keeps a run without a state.md (one just starting) unless its id is a day old", async () => {
    const d = mkdtempSync(path.join(tmp, "young-"));
    const young = `${stamp(new Date())}-aaaaaa`;
    const old = `${stamp(new Date(Date.now() - 3 * 86_400_000))}-bbbbbb`;
    for (const id of [young, old]) mkdirSync(path.join(d, ".vvm", "runs", id, "bindings"), { recursive: true });
    const r = await runCli(["runs", "prune", "--keep", "0", "--dir", d]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`removed ${old} (no readable state.md)`);
    expect(r.stdout).toContain("kept 1 still running");
    expect(readdirSync(path.join(d, ".vvm", "runs"))).toEqual([young]);
  });

  it("a state.md without a Status line is said as such, not as a missing state.md", async () => {
    const d = mkdtempSync(path.join(tmp, "nostatus-"));
    const id = "20260101-000000-ffffff";
    mkdirSync(path.join(d, ".vvm", "runs", id), { recursive: true });
    writeFileSync(path.join(d, ".vvm", "runs", id, "state.md"), `# VVM Run: ${id}\n\nProgram: p.vvm\nStarted: 2026-01-01T00:00:00Z\n`);
    expect((await runCli(["runs", "ls", d])).stdout).toMatch(new RegExp(`${id}  \\(no Status line in state\\.md\\)  2026-01-01 00:00:00Z`));
    expect((await runCli(["runs", "show", id, "--dir", d])).stdout).toMatch(new RegExp(`^run ${id}: no Status line in state\\.md\n`));
    rmSync(path.join(d, ".vvm", "runs", id, "state.md"));
    expect((await runCli(["runs", "ls", d])).stdout).toContain(`${id}  (no readable state.md)`);
  });

  it("prune never takes a header it cannot read for 1970: the start falls back to the run id, a change to state.md's time", async () => {
    const d = mkdtempSync(path.join(tmp, "unparsed-"));
    const now = stamp(new Date());
    const run = (id: string, state: string) => {
      mkdirSync(path.join(d, ".vvm", "runs", id), { recursive: true });
      writeFileSync(path.join(d, ".vvm", "runs", id, "state.md"), state);
    };
    run(`${now}-cccccc`, "Started: yesterday-ish\nStatus: completed\n");
    // started long ago, still running and writing its state.md: its Updated line cannot be read
    run(`${stamp(new Date(Date.now() - 9 * 86_400_000))}-dddddd`, "Started: 2000-01-01T00:00:00Z\nUpdated: soon\nStatus: running\n");
    expect((await runCli(["runs", "prune", "--older-than", "7d", "--dry-run", "--dir", d])).stdout).toBe("would remove 0 runs; kept 1 still running (updated in the last 24 hours)\n");
    expect((await runCli(["runs", "prune", "--keep", "0", "--dry-run", "--dir", d])).stdout).toBe(`would remove ${now}-cccccc (completed)\nwould remove 1 run; kept 1 still running (updated in the last 24 hours)\n`);
  });

  it("prune stops at a Ctrl-C or SIGTERM heard while it lists the runs: exit 130, nothing removed", async () => {
    const d = mkdtempSync(path.join(tmp, "interrupted-"));
    const old = [1, 2, 3].map((n) => `${stamp(new Date(Date.now() - n * 86_400_000))}-00000${n}`);
    for (const id of old) {
      mkdirSync(path.join(d, ".vvm", "runs", id), { recursive: true });
      writeFileSync(path.join(d, ".vvm", "runs", id, "state.md"), `# VVM Run: ${id}\n\nStatus: completed\n`);
    }
    const ctrlC = new AbortController();
    ctrlC.abort();
    const r = await runCli(["runs", "prune", "--keep", "0", "--dir", d], { signal: ctrlC.signal });
    expect(r).toMatchObject({ code: 130, stdout: "removed 0 runs\n", stderr: "vvm: interrupted: 3 of the 3 runs to remove were left as they are\n" });
    expect(readdirSync(path.join(d, ".vvm", "runs")).length).toBe(3);
  });

  it("ls, show and cat stop at a Ctrl-C heard before they read: exit 130, nothing printed", async () => {
    const d = mkdtempSync(path.join(tmp, "read-interrupted-"));
    const id = `${stamp(new Date())}-00000a`;
    mkdirSync(path.join(d, ".vvm", "runs", id, "bindings"), { recursive: true });
    writeFileSync(path.join(d, ".vvm", "runs", id, "state.md"), `# VVM Run: ${id}\n\nStatus: completed\n`);
    writeFileSync(path.join(d, ".vvm", "runs", id, "bindings", "b000001.md"), "the reply\n");
    const ctrlC = new AbortController();
    ctrlC.abort();
    for (const args of [["ls"], ["show", id], ["cat", id, "b000001"]]) {
      expect(await runCli(["runs", ...args, "--dir", d], { signal: ctrlC.signal }), args[0]).toMatchObject({ code: 130, stdout: "", stderr: "" });
    }
  });

  it("prune --older-than is exact past a timer's limit of 24.8 days: 720h is 30 days", async () => {
    const d = mkdtempSync(path.join(tmp, "days-"));
    const id = `${stamp(new Date(Date.now() - 26 * 86_400_000))}-eeeeee`;
    mkdirSync(path.join(d, ".vvm", "runs", id, "bindings"), { recursive: true });
    for (const age of ["720h", "100000h", "30d"]) {
      expect((await runCli(["runs", "prune", "--older-than", age, "--dir", d])).stdout, age).toBe("removed 0 runs\n");
    }
    expect((await runCli(["runs", "prune", "--older-than", "600h", "--dir", d])).stdout).toContain(`removed ${id}`);
    expect(sinceTime("100000h", 1e15)).toBe(1e15 - 100_000 * 3_600_000);
  });

  it("prune keeps the newest N, or removes runs older than a duration", async () => {
    // on a copy: the other tests read the three runs, in any order
    const own = mkdtempSync(path.join(tmp, "prune-"));
    cpSync(path.join(dir, ".vvm"), path.join(own, ".vvm"), { recursive: true });
    expect(await runCli(["runs", "prune"], { cwd: own })).toMatchObject({ code: 64 });
    // a bare number has no unit to guess (7 days would be 7 seconds), and a count is digits only
    for (const args of [["--older-than", "7"], ["--older-than", "0"], ["--keep", "0x2"], ["--keep", " 3"], ["--keep", "1e9"]]) {
      expect(await runCli(["runs", "prune", ...args], { cwd: own })).toMatchObject({ code: 64, stdout: "" });
    }
    expect((await runCli(["runs", "prune", "--older-than", "7"], { cwd: own })).stderr).toMatch(/give a unit, such as "7m", "7h" or "7d"/);
    // an impossible day is refused, not rolled over into the next month
    for (const day of ["2026-02-30", "2026-02-29T10:00:00Z", "2026-04-31"]) {
      expect(await runCli(["runs", "prune", "--older-than", day], { cwd: own }), day).toMatchObject({ code: 64, stderr: expect.stringContaining(`--older-than ${day}: expected a duration`) });
    }
    // a real day of the years 0-99 is a day like any (older than that: nothing)
    expect(await runCli(["runs", "prune", "--older-than", "0099-12-31T00:00:00Z", "--dry-run"], { cwd: own })).toMatchObject({ code: 0, stdout: expect.stringContaining("would remove 0 runs") });
    expect((await runCli(["runs", "prune", "--keep", "-1"], { cwd: own })).stderr).toMatch(/expected a whole number of at least 0/);
    expect(readdirSync(path.join(own, ".vvm", "runs")).length).toBe(3);
    expect((await runCli(["runs", "prune", "--older-than", "1h"], { cwd: own })).stdout).toContain("removed 0 runs");
    const dry = await runCli(["runs", "prune", "--keep", "1", "--dry-run"], { cwd: own });
    expect(dry.stdout).toContain("would remove 2 runs");
    expect(readdirSync(path.join(own, ".vvm", "runs")).length).toBe(3);
    const r = await runCli(["runs", "prune", "--keep", "1"], { cwd: own });
    expect(r.stdout).toContain("removed 2 runs");
    expect(readdirSync(path.join(own, ".vvm", "runs"))).toEqual([ids[2]]);
  });

  it("runs started within one second are in the order of their Started time, not of their ids' random part: prune --keep keeps the newest", async () => {
    const d = mkdtempSync(path.join(tmp, "second-"));
    // made in this order; the later run's random part sorts first
    const runs = [
      ["20260101-000000-ffffff", "2026-01-01T00:00:00.100Z"],
      ["20260101-000000-000000", "2026-01-01T00:00:00.900Z"],
    ];
    for (const [id, started] of runs) {
      mkdirSync(path.join(d, ".vvm", "runs", id!, "bindings"), { recursive: true });
      writeFileSync(path.join(d, ".vvm", "runs", id!, "state.md"), `# VVM Run: ${id}\n\nProgram: p.vvm\nStarted: ${started}\nUpdated: ${started}\nStatus: completed\n`);
    }
    const ls = await runCli(["runs", "ls", d]);
    expect(ls.stdout.indexOf("ffffff")).toBeLessThan(ls.stdout.indexOf("000000  "));
    expect(await runCli(["runs", "prune", "--keep", "1", "--dir", d])).toMatchObject({ code: 0, stdout: "removed 20260101-000000-ffffff (completed)\nremoved 1 run\n" });
    expect(readdirSync(path.join(d, ".vvm", "runs"))).toEqual(["20260101-000000-000000"]);
  });

  it("a .vvm that is a symbolic link stops a filesystem-state run before anything runs", async () => {
    const d = mkdtempSync(path.join(tmp, "link-"));
    const elsewhere = path.join(d, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(path.join(d, "main.vvm"), "x = 1\nexport x\n");
    symlinkSync(elsewhere, path.join(d, ".vvm"));
    const r = await runCli(["run", "main.vvm", "--provider", "sim", "--state", "filesystem"], { cwd: d });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("symbolic link");
    expect(r.stdout).toBe("");
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it("--state takes in-context or filesystem only", async () => {
    const r = await runCli(["run", "main.vvm", "--state", "disk"], { cwd: dir });
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/in-context, filesystem/);
  });
});
