// Ctrl-C during `vvm memory log | search | history | diff | show | doctor` on a long ledger. The store reads
// with synchronous calls, so the event loop does not turn while a whole ledger is read (and, for search,
// ranked): a SIGINT was heard only once the whole answer was printed, and the command exited 0. A Ctrl-C
// that came before the reading stops the command with exit 130; one during it ends the process at once.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli.ts";
import { collect, ROOT, runCli, sigintAfter, spawnCli, testEnv, testIO } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";
import { sha256 } from "../../runtime/memory/keys.ts";

const base = useTempDir("vvm-mem-int-");

/** A memory `big` whose ledger holds `n` facts of 40 words each (about 460 bytes a line). */
function bigMemory(n: number): string {
  const dir = path.join(base, `p-${n}`);
  const mem = path.join(dir, ".vvm", "memory", "k-big");
  mkdirSync(mem, { recursive: true });
  const empty = sha256("");
  const lines: string[] = [];
  let w = 1;
  for (let seq = 1; seq <= n; seq++) {
    const words: string[] = [];
    for (let j = 0; j < 40; j++) words.push("w" + ((w = (w * 48271) % 2147483647) % 50000).toString(36));
    lines.push(JSON.stringify({ v: 1, ts: "2026-01-01T00:00:00Z", seq, kind: "patch", retain: [words.join(" ")], digest_before: empty, digest_after: empty, provenance: null }));
  }
  writeFileSync(path.join(mem, "ledger.jsonl"), lines.join("\n") + "\n");
  return dir;
}

/** `forget --match w1a --purge` of a 30,000-entry ledger (seconds under the lock), once it holds the lock. */
async function purgeHoldingLock() {
  const dir = bigMemory(30_000);
  const mem = path.join(dir, ".vvm", "memory", "k-big");
  const before = readFileSync(path.join(mem, "ledger.jsonl"), "utf8");
  const child = spawnCli(["memory", "forget", "big", "--match", "w1a", "--purge"], { cwd: dir });
  const done = collect(child);
  let ended = false;
  void done.then(() => (ended = true));
  while (!ended && !existsSync(path.join(mem, "lock"))) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(ended).toBe(false);
  return { dir, mem, before, child, done, exited: () => ended };
}

describe("Ctrl-C in the commands that read a memory", () => {
  it("a Ctrl-C that came before the ledger is read stops the command: exit 130, nothing on stdout", async () => {
    const dir = bigMemory(3);
    for (const args of [["log", "big"], ["search", "big", "w1"], ["history", "big"], ["diff", "big", "1"], ["show", "big"], ["doctor", "big"], ["doctor"], ["ls"]]) {
      // the Ctrl-C comes just as the command takes over saying it
      const stop = new AbortController();
      let out = "";
      let err = "";
      const io = { ...testIO((stream, s) => (stream === "out" ? (out += s) : (err += s)), { cwd: dir, signal: stop.signal }), ctrlCSaidByCommand: () => stop.abort() };
      expect([await main(["memory", ...args], io), out, err], args.join(" ")).toEqual([130, "", "vvm: interrupted\n"]);
    }
  });

  it("a Ctrl-C heard before the command began (while vvm started) is not said a second time", async () => {
    const dir = bigMemory(3);
    const stop = new AbortController();
    stop.abort();
    // the process said it ("vvm: interrupted, stopping…", src/start.ts): the command adds nothing
    for (const args of [["log", "big"], ["show", "big"], ["forget", "big", "--fact", "1:0"], ["restore", "big", "0"], ["rm", "big", "--yes"], ["doctor", "--fix"]]) {
      expect(await runCli(["memory", ...args], { cwd: dir, signal: stop.signal }), args.join(" ")).toMatchObject({ code: 130, stdout: "", stderr: "" });
    }
    expect(readdirSync(path.join(dir, ".vvm", "memory"))).toEqual(["k-big"]);
  });

  it("SIGINT ends vvm memory search at once while it ranks a long ledger, printing nothing", async () => {
    // 60,000 facts: reading and ranking them takes several seconds, with no turn of the event loop
    const dir = bigMemory(60_000);
    const r = await sigintAfter(spawnCli(["memory", "search", "big", "w1a w2b"], { cwd: dir }), 2000, 8000);
    // killed by the signal; exit 130 when a slow start-up let it come before the reading began
    expect([{ code: null, signal: "SIGINT" }, { code: 130, signal: null }]).toContainEqual(r.exit);
    expect(r.ms).toBeLessThan(1500);
    expect(r.stdout).toBe("");
  }, 20_000);
});

describe("Ctrl-C in the commands that change a memory", () => {
  it("while waiting for the lock: exit 130 and one line on stderr after the waiting line, nothing on stdout", async () => {
    const dir = bigMemory(3);
    // a hand edit, which doctor --fix takes the lock to record
    writeFileSync(path.join(dir, ".vvm", "memory", "k-big", "digest.md"), "a person's note\n");
    for (const args of [["restore", "big", "0"], ["forget", "big", "--fact", "1"], ["rm", "big", "--yes"], ["doctor", "big", "--fix"], ["doctor", "--fix"]]) {
      // held by this (live) process, and fresh, so nobody takes it over
      writeFileSync(path.join(dir, ".vvm", "memory", "k-big", "lock"), JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }));
      const child = spawnCli(["memory", ...args], { cwd: dir });
      const done = collect(child);
      // (or its exit: the test then fails below rather than hangs)
      await Promise.race([done, new Promise<void>((resolve) => child.stderr!.on("data", (d: Buffer) => d.includes("waiting for the memory lock") && resolve()))]);
      child.kill("SIGINT");
      const r = await done;
      expect([r.code, r.stdout], args.join(" ")).toEqual([130, ""]);
      expect(r.stderr).toMatch(/^vvm: warning: memory project:"big": waiting for the memory lock \(held by pid \d+ on [^)]+\)\nvvm: memory project:"big": interrupted while waiting for its lock(; nothing removed)?\n$/);
    }
  }, 60_000);

  it("once it holds the lock: the change is completed and reported, then one line on stderr and exit 130", async () => {
    const { mem, child, done } = await purgeHoldingLock();
    child.kill("SIGINT");
    const r = await done;
    expect([r.code, r.stderr]).toEqual([130, "vvm: interrupted: what the command had under way was completed first (a change under the memory's lock is never cut short)\n"]);
    expect(r.stdout).toMatch(/\npurged: \d+ ledger lines rewritten, \d+ occurrences replaced by a mark that names no text; recall\.jsonl rebuilt\n$/);
    // nothing lost or half done: every line whole, the forget entry last, the text nowhere, the lock released
    const lines = readFileSync(path.join(mem, "ledger.jsonl"), "utf8").split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual(lines.map((_, i) => i + 1));
    expect(JSON.parse(lines.at(-1)!).kind).toBe("forget");
    expect(lines.some((l) => l.includes("w1a"))).toBe(false);
    expect(existsSync(path.join(mem, "lock"))).toBe(false);
  }, 60_000);

  it("a second Ctrl-C ends the command at once, and says so: the change is not made, nothing is lost", async () => {
    const { dir, mem, before, child, done, exited } = await purgeHoldingLock();
    child.kill("SIGINT");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(exited()).toBe(false);
    child.kill("SIGINT");
    const r = await done;
    expect([r.code, r.stdout, r.stderr]).toEqual([130, "", "vvm: interrupted again: stopped at once; what the command had under way may be left unfinished (vvm memory doctor says what)\n"]);
    // the purge did not happen; the next command takes the lock over and tidies what it left
    expect(readFileSync(path.join(mem, "ledger.jsonl"), "utf8")).toBe(before);
    const again = await runCli(["memory", "forget", "big", "--match", "w1a", "--purge"], { cwd: dir });
    expect(again.code).toBe(0);
  }, 60_000);

  it("doctor --fix over every memory: the one it was fixing is completed and reported, the next is not begun", async () => {
    // a hand edit in each: recording it in the long ledger takes seconds under the lock
    const dir = bigMemory(30_000);
    const root = path.join(dir, ".vvm", "memory");
    mkdirSync(path.join(root, "k-small"));
    writeFileSync(path.join(root, "k-small", "ledger.jsonl"), readFileSync(path.join(root, "k-big", "ledger.jsonl"), "utf8").split("\n").slice(0, 3).join("\n") + "\n");
    for (const name of ["k-big", "k-small"]) writeFileSync(path.join(root, name, "digest.md"), "a person's note\n");
    // and what an rm killed part-way left, which --fix finishes after the memories
    mkdirSync(path.join(root, ".rm-k-gone.0123456789ab"));
    const child = spawnCli(["memory", "doctor", "--fix"], { cwd: dir });
    const done = collect(child);
    let exited = false;
    void done.then(() => (exited = true));
    while (!exited && !existsSync(path.join(root, "k-big", "lock"))) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(exited).toBe(false);
    child.kill("SIGINT");
    const r = await done;
    expect([r.code, r.stderr]).toEqual([130, "vvm: interrupted: what the command had under way was completed first (a change under the memory's lock is never cut short)\n"]);
    // what it repaired is said; the memory it had not begun is neither repaired nor reported
    expect(r.stdout).toMatch(/^memory project:"big" \(\.vvm\/memory\/k-big\): healthy.*\n {2}fixed 2 \(recorded in the ledger as entry 30002\):\n/);
    expect(r.stdout).not.toContain('"small"');
    expect(r.stdout).toMatch(/\nproblem: an rm of "gone" was cut short and left \.rm-k-gone\.0123456789ab\n {6}--fix will finish removing it\n$/);
    expect(existsSync(path.join(root, ".rm-k-gone.0123456789ab"))).toBe(true);
    const kinds = (name: string) => readFileSync(path.join(root, name, "ledger.jsonl"), "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { kind: string }).kind);
    expect(kinds("k-big").slice(-2)).toEqual(["external_edit", "repair"]);
    expect(kinds("k-small")).toEqual(["patch", "patch", "patch"]);
  }, 60_000);
});

/**
 * `vvm memory rm big` on a terminal (a pseudo-terminal python3 makes), sent `signal` once it asks; what it wrote
 * there, and its exit code (null: still asking 10 s later, then killed).
 */
function rmAskedThenSignalled(dir: string, signal: "SIGINT" | "SIGTERM"): { exit: number | null; out: string } {
  const script = `
import json, os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
def read(until):
    global out
    while time.time() < until:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return
            if not data:
                return
            out += data
        if b"[y/N]" in out and not asked:
            return
asked = False
read(time.time() + 20)
asked = True
os.kill(pid, getattr(signal, sys.argv[-1]))
deadline = time.time() + 10
while True:
    read(time.time() + 0.2)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done or time.time() > deadline:
        break
if not done:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(json.dumps({"exit": os.waitstatus_to_exitcode(status) if done else None, "out": out.decode(errors="replace")}))
`;
  const argv = [process.execPath, "--import", import.meta.resolve("tsx"), path.join(ROOT, "src/main.ts"), "memory", "rm", "big", signal];
  // (the last argument is the signal's name, for the script; the CLI never sees it)
  return JSON.parse(execFileSync("python3", ["-c", script.replace("sys.argv[1:]", "sys.argv[1:-1]"), ...argv], { cwd: dir, env: testEnv(), encoding: "utf8" })) as { exit: number | null; out: string };
}

describe("a signal while vvm memory rm asks", () => {
  it("SIGTERM or a SIGINT sent to the process (not typed at the question) ends the question: not removed, exit 143 or 130", () => {
    for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
      const dir = bigMemory(3);
      const r = rmAskedThenSignalled(dir, signal);
      expect(r.out, signal).toContain("and all its history? This cannot be undone. [y/N] ");
      expect(r.out, signal).toMatch(/vvm: memory project:"big" not removed\r\n$/);
      expect(r.exit, signal).toBe(code);
      expect(existsSync(path.join(dir, ".vvm", "memory", "k-big", "ledger.jsonl")), signal).toBe(true);
    }
  }, 60_000);
});
