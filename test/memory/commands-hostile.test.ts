// `vvm memory` commands on memories a model or a repository made hostile: control sequences in what
// they print, a ledger longer than a call takes arguments, two long digests that differ throughout.
import { spawnSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli, testEnv } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";
import { memDir, patchLine } from "./helpers.ts";

const base = useTempDir("vvm-mem-hostile-cmd-");
/** C0 but tab and newline, DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex -- what the test looks for
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
const EVIL = "\u001b]0;PWNED\u0007\u001b[1A\u001b[2K\u009b31m\u202e";

/** A memory whose ledger holds `lines` (written as a repository could ship it). */
async function memory(name: string, lines: string[]): Promise<string> {
  const dir = path.join(base, name);
  await mkdir(memDir(dir, "k"), { recursive: true });
  await writeFile(path.join(memDir(dir, "k"), "ledger.jsonl"), lines.join(""));
  return dir;
}

const entry = (seq: number, extra: Record<string, unknown>) => JSON.stringify({ v: 1, ts: "2026-01-01T00:00:00Z", seq, kind: "patch", retain: [], digest_before: "x", digest_after: "y", provenance: null, ...extra }) + "\n";

describe("vvm memory on hostile memories", () => {
  it("no command prints a control sequence from the memory: show, log, search, history, diff, ls, doctor, their --json, forget's messages", async () => {
    const dir = await memory("evil", [entry(1, { digest: `first ${EVIL}\n`, retain: [`B fact ${EVIL} vendor`] }), entry(2, { digest: `second ${EVIL}\n`, kind: `patch${EVIL}` })]);
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), `second ${EVIL}\n`);
    // a directory name, a file name and a lock holder a repository chose; a front-matter setting nobody knows
    await mkdir(path.join(dir, ".vvm", "memory", `k-odd${EVIL}`));
    await writeFile(path.join(memDir(dir, "k"), `notes${EVIL}.txt`), "x");
    await writeFile(path.join(memDir(dir, "k"), "lock"), JSON.stringify({ pid: 1, host: `h${EVIL}`, since: `s${EVIL}` }));
    for (const args of [
      ["show", "k"],
      ["show", "k", "--json"],
      ["log", "k"],
      ["log", "k", "--json"],
      ["search", "k", "vendor"],
      ["history", "k"],
      ["diff", "k", "1", "2"],
      ["ls"],
      ["ls", "--json"],
      ["doctor"],
      ["doctor", "--json"],
      ["doctor", "k"],
      ["forget", "k", "--match", "vendor", "--lock-timeout", "200ms"],
    ]) {
      const r = await runCli(["memory", ...args], { cwd: dir });
      expect({ args, out: RAW.test(r.stdout), err: RAW.test(r.stderr) }).toEqual({ args, out: false, err: false });
    }
    const shown = await runCli(["memory", "show", "k"], { cwd: dir });
    expect(shown.stdout).toContain("\\u001b]0;PWNED\\u0007");
  });

  it("a --path that is a file is named in words, as a run names it, not as Node's realpath error", async () => {
    const dir = path.join(base, "pathfile");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "notes"), "x");
    const r = await runCli(["memory", "show", "k", "--scope", "path", "--path", "notes"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`vvm: cannot read the memory: ${path.join(dir, "notes")}, or a folder on the way to it, is a file, not a directory\n`);
    // the commands that go through every memory under it: a file is no place without memories
    const cases: [string[], string][] = [[["ls", "--path", "notes"], "notes"], [["ls", "--path", "notes/sub", "--json"], "notes/sub"], [["ls", "--path", "/dev/null"], "/dev/null"], [["doctor", "--path", "notes"], "notes"], [["doctor", "--fix", "--path", "notes"], "notes"]];
    for (const [args, root] of cases) {
      const listed = await runCli(["memory", ...args, "--scope", "path"], { cwd: dir });
      expect([listed.code, listed.stdout, listed.stderr], args.join(" ")).toEqual([1, "", `vvm: ${path.resolve(dir, root)}, or a folder on the way to it, is a file, not a directory\n`]);
    }
  });

  it("a write that fails (a full disk) in a command that changes the memory is said as that, not as a memory that cannot be read", async () => {
    const dir = await memory("full", [patchLine(1, ["B the vendor's account number is 42"])]);
    const before = await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"));
    // no write may grow a file: EFBIG, as ENOSPC on a full disk
    const main = path.join(ROOT, "src", "main.ts");
    const child = spawnSync("sh", ["-c", `ulimit -f 0; exec "${process.execPath}" --import "${import.meta.resolve("tsx")}" "${main}" memory forget k --match vendor --purge`], { cwd: dir, env: testEnv(), encoding: "utf8" });
    expect(child.status).toBe(1);
    expect(child.stderr).toMatch(/^vvm: cannot change the memory \(EFBIG: file too large[^)]*\)\n$/);
    expect(await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"))).toEqual(before);
  });

  it("log lists a ledger of 150,000 entries (no spread of every line into one call)", async () => {
    const dir = await memory("long", Array.from({ length: 150_000 }, (_, i) => patchLine(i + 1, [])));
    const r = await runCli(["memory", "log", "k"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(150_000);
  });

  it("diff of two long digests that differ throughout says so instead of computing for minutes", async () => {
    const lines = (tag: string) => Array.from({ length: 6000 }, (_, i) => `- ${tag} note ${i}`).join("\n") + "\n";
    const dir = await memory("diff", [entry(1, { digest: lines("a") }), entry(2, { digest: lines("b") })]);
    const r = await runCli(["memory", "diff", "k", "1", "2"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("the two versions differ in more than 2000 lines: no line-by-line diff (vvm memory show, or --json, prints each)\n");
    const small = await memory("diff-small", [entry(1, { digest: "- one\n- two\n" }), entry(2, { digest: "- one\n- three\n" })]);
    expect((await runCli(["memory", "diff", "k", "1", "2"], { cwd: small })).stdout).toContain("-- two\n+- three\n");
  });
});
