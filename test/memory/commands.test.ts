// `vvm memory` reading commands through the real CLI, on memories built by real runs (script provider):
// one with a hand edit, a rejected patch and a torn tail. They never write, never read through a link,
// never print a stack trace, and `log --last` reads only the end of a long ledger.
import { appendFile, link, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { applyPatch } from "diff";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { sha256 } from "../../runtime/memory/keys.ts";
import { block, busyRun, expectRefused, noStack, ok, program, scriptFor } from "./projects.ts";
import { ledger, makeStore, memDir, patchLine, session } from "./helpers.ts";

const base = useTempDir("vvm-mem-cmd-");
const standin = useStandin();

const script = scriptFor([
  ["First shift", block(JSON.stringify({ digest: "## Open\n- VND-221 card-processor timeouts\n", retain: ["B first shift: VND-221 opened with the vendor", "N check the payment retries"] }))],
  ["Second shift", block(JSON.stringify({ digest: "## Open\n- VND-221 vendor answered\n- api 4.18.3 deployed\n", retain: ["B second shift: api 4.18.3 deployed"] }))],
  ["Third shift", block('{"digest": oops}')],
]);

const KEY = "oncall:payments";

/**
 * A project whose memory was built by three runs: a patch; a hand edit of digest.md, then a run that
 * records it and patches again; a run whose patch is rejected (invalid JSON); then a crash's torn tail.
 */
async function builtProject(): Promise<string> {
  const dir = await mkdtemp(path.join(base, "p-"));
  await writeFile(path.join(dir, "script.yaml"), script);
  for (const [n, task] of [[1, "First shift"], [2, "Second shift"], [3, "Third shift"]] as const) await writeFile(path.join(dir, `s${n}.vvm`), program(KEY, `${task}: write the handoff.`));
  ok(await runCli(["run", "s1.vvm", "--script", "script.yaml"], { cwd: dir }));
  const digest = path.join(memDir(dir, KEY), "digest.md");
  await writeFile(digest, (await readFile(digest, "utf8")) + "- hand note: vendor call at 10:00\n");
  ok(await runCli(["run", "s2.vvm", "--script", "script.yaml"], { cwd: dir }));
  const third = ok(await runCli(["run", "s3.vvm", "--script", "script.yaml"], { cwd: dir }));
  expect(third.stderr).toContain("patch rejected");
  await appendFile(path.join(memDir(dir, KEY), "ledger.jsonl"), '{"v":1,"ts":"2026-01-01T00:00:00Z","seq":5,"kind":"pat');
  return dir;
}

/** Every file under `dir`: name, size, mode, mtime and content hash (links as links). */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const st = await stat(p).catch(() => null);
      if (e.isDirectory()) await walk(p);
      const hash = e.isFile() ? sha256(await readFile(p)) : e.isSymbolicLink() ? "link" : "";
      out.push(`${path.relative(dir, p)} ${st?.size} ${st?.mode} ${st?.mtimeMs} ${hash}`);
    }
  };
  await walk(dir);
  return out.sort();
}


describe("vvm memory, on a memory built by real runs", () => {
  it("ls: every memory by its key, with entries, digest size, last use and health", async () => {
    const dir = await builtProject();
    await writeFile(path.join(dir, "other.vvm"), program("tenant:Acme/EU", "First shift: hello."));
    ok(await runCli(["run", "other.vvm", "--script", "script.yaml"], { cwd: dir }));
    const res = ok(await runCli(["memory", "ls"], { cwd: dir }));
    expect(res.stdout).toMatch(/^2 memories in \.vvm\/memory \(project scope\)\n/);
    expect(res.stdout).toMatch(/^ {2}oncall:payments +4 entries +digest \d+ B +used \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(continue\) +1 warning$/m);
    expect(res.stdout).toContain("warning: ledger.jsonl ends with 54 bytes of an incomplete line (an interrupted write); the next continue call repairs it");
    expect(res.stdout).toMatch(/^ {2}tenant:Acme\/EU +1 entry .* ok$/m);
    expect(res.stdout).not.toContain("k-oncall");
    const json = JSON.parse(ok(await runCli(["memory", "ls", "--json"], { cwd: dir })).stdout);
    expect(json.root).toBe(path.join(dir, ".vvm", "memory"));
    expect(json.memories.map((m: { key: string; entries: number; health: string }) => [m.key, m.entries, m.health])).toEqual([
      ["oncall:payments", 4, "warnings"],
      ["tenant:Acme/EU", 1, "ok"],
    ]);
    // from elsewhere: --dir, or --program (that program's directory)
    expect(ok(await runCli(["memory", "ls", "--dir", dir])).stdout).toContain("oncall:payments");
    expect(ok(await runCli(["memory", "ls", "--program", path.join(dir, "s1.vvm")])).stdout).toContain("oncall:payments");
  });

  it("show: settings, the digest and the facts the next call is shown, with the memory's health", async () => {
    const dir = await builtProject();
    const res = ok(await runCli(["memory", "show", KEY], { cwd: dir }));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments"\n {2}directory {2}\.vvm\/memory\/k-oncall_3apayments\n {2}entries {4}4 \(last: \[4\] rejected, \d{4}-.*Z\)\n/);
    expect(res.stdout).toContain("  settings   digest_limit 12000, read_only false, recall relevant, recent_share 0.5 (defaults: digest.md has no front matter)\n");
    expect(res.stdout).toContain("  health     1 warning\n      warning: ledger.jsonl ends with 54 bytes of an incomplete line");
    expect(res.stdout).toContain("\n## Digest (56 characters)\n## Open\n- VND-221 vendor answered\n- api 4.18.3 deployed\n\n");
    expect(res.stdout).toMatch(/\n## Facts the next call is shown \(3 of 3 retained; budget 2000 tokens\)\n- \[#1 \d{4}-\d\d-\d\d\] B first shift: VND-221 opened with the vendor\n- \[#1 .*\] N check the payment retries\n- \[#3 .*\] B second shift: api 4\.18\.3 deployed\n$/);
    // a small budget: what recall picks (its policy is recall's, spec §3) is listed, the rest counted, and
    // the list is the one the Memory Context carries
    for (const args of [["--memory-budget", "20"], ["--memory-budget", "20", "--task", "What about the payment retries?"]]) {
      const text = ok(await runCli(["memory", "show", KEY, ...args], { cwd: dir })).stdout;
      const context = ok(await runCli(["memory", "show", KEY, ...args, "--context"], { cwd: dir })).stdout;
      const listed = text.slice(text.indexOf("## Facts the next call is shown")).split("\n").filter((l) => l.startsWith("- "));
      const sent = context.slice(context.indexOf("## Retained facts"), context.indexOf("## Memory Update Protocol")).split("\n").filter((l) => l.startsWith("- "));
      expect(listed).toEqual(sent);
      expect(listed.length).toBeGreaterThan(0);
      expect(text).toContain(`(${listed.length} of 3 retained; budget 20 tokens)`);
      expect(context).toContain(`(${3 - listed.length} more retained fact`);
      if (args.includes("--task")) expect(listed.join("\n")).toContain("N check the payment retries");
      else expect(text).toContain("--task TEXT shows which");
    }
    const json = JSON.parse(ok(await runCli(["memory", "show", KEY, "--json"], { cwd: dir })).stdout);
    expect(json).toMatchObject({
      key: KEY,
      entries: 4,
      last_entry: { seq: 4, kind: "rejected" },
      settings: { digest_limit: 12000, read_only: false, recall: "relevant", recent_share: 0.5 },
      digest: "## Open\n- VND-221 vendor answered\n- api 4.18.3 deployed\n",
      digest_unusable: null,
      health: "warnings",
    });
    // each fact named as search --json, forget --json and the ledger's `forgotten` name it
    expect(json.facts.shown.map((f: object) => Object.keys(f))).toEqual(Array(3).fill(["seq", "index", "ts", "text"]));
    expect(json.facts.shown.map((f: { seq: number; index: number; text: string }) => [f.seq, f.index, f.text])).toEqual([
      [1, 0, "B first shift: VND-221 opened with the vendor"],
      [1, 1, "N check the payment retries"],
      [3, 0, "B second shift: api 4.18.3 deployed"],
    ]);
    expect(json).not.toHaveProperty("context");
    // front matter that cannot be read: the defaults are not said to come from its absence
    const digest = path.join(dir, ".vvm", "memory", "k-oncall_3apayments", "digest.md");
    await writeFile(digest, "---\nrecall: [\n---\nhello\n");
    const bad = ok(await runCli(["memory", "show", KEY], { cwd: dir })).stdout;
    expect(bad).toContain("recent_share 0.5 (defaults: digest.md cannot be used, see below)\n");
    expect(bad).toContain("front matter is not valid YAML");
    // front matter that was read, over a body past its limit: its settings are shown, not called defaults
    await writeFile(digest, "---\ndigest_limit: 10\nread_only: true\n---\nlonger than ten characters\n");
    const over = ok(await runCli(["memory", "show", KEY], { cwd: dir })).stdout;
    expect(over).toContain("  settings   digest_limit 10, read_only true, recall relevant, recent_share 0.5\n");
    expect(over).toContain("over its limit of 10");
  });

  it("show --context prints exactly the Memory Context the next continue call sends", async () => {
    const dir = await builtProject();
    const file = path.join(memDir(dir, KEY), "digest.md");
    await writeFile(file, "---\nread_only: true\ndigest_limit: 500\n---\n" + (await readFile(file, "utf8")));
    const task = "Fourth shift: write the handoff.";
    const shown = ok(await runCli(["memory", "show", KEY, "--context", "--task", task], { cwd: dir })).stdout;
    expect(shown).toMatch(/^<memory scope="project" key="oncall:payments">\n## Digest\n## Open\n/);
    expect(shown).toContain("Limits: digest 500 characters");
    expect(shown).toContain("The digest is read-only: a new digest is refused; retain items are still saved.");
    expect(JSON.parse(ok(await runCli(["memory", "show", KEY, "--context", "--task", task, "--json"], { cwd: dir })).stdout).context + "\n").toBe(shown);
    await writeFile(path.join(dir, "s4.vvm"), program(KEY, task));
    standin.setHandler(() => ({ type: "text", text: "ok" }));
    ok(await runCli(["run", "s4.vvm"], { cwd: dir, env: standin.env() }));
    const system = ((standin.requests[0].body.system ?? []) as { text: string }[]).map((b) => b.text);
    expect(system.find((t) => t.startsWith("<memory"))).toBe(shown.replace(/\n$/, ""));
  });

  it("log: entries newest last, with kind, time, agent@program:line and a summary; filters", async () => {
    const dir = await builtProject();
    const res = ok(await runCli(["memory", "log", KEY], { cwd: dir }));
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^\[1\] patch {9}\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ {2}scribe@s1\.vvm:2 {2}digest → 42 chars; \+2 facts: "B first shift: VND-221 opened with the vendor", "N check the payment retries"$/);
    expect(lines[1]).toMatch(/^\[2\] external_edit .* scribe@s2\.vvm:2 {2}digest edited by hand → 76 chars; digest\.md was changed outside the runtime$/);
    expect(lines[2]).toMatch(/^\[3\] patch .* scribe@s2\.vvm:2 {2}digest → 56 chars; \+1 fact: "B second shift: api 4\.18\.3 deployed"$/);
    expect(lines[3]).toMatch(/^\[4\] rejected .* scribe@s3\.vvm:2 {2}the vvm-memory block is not valid JSON/);
    expect(lines[4]).toBe("(ledger.jsonl ends with 54 bytes of an incomplete line; the next continue call repairs it)");

    const only = (args: string[]) => runCli(["memory", "log", KEY, ...args], { cwd: dir }).then((r) => ok(r).stdout.trimEnd().split("\n").filter((l) => l.startsWith("[")).map((l) => l.slice(0, 4)));
    expect(await only(["--kind", "rejected,external_edit"])).toEqual(["[2] ", "[4] "]);
    expect(await only(["--last", "2"])).toEqual(["[3] ", "[4] "]);
    expect(await only(["--last", "1", "--kind", "patch"])).toEqual(["[3] "]);
    expect(await only(["--agent", "scribe", "--last", "3"])).toEqual(["[2] ", "[3] ", "[4] "]);
    expect(await only(["--agent", "nobody"])).toEqual([]);
    expect(await only(["--since", "1h"])).toEqual(["[1] ", "[2] ", "[3] ", "[4] "]);
    expect(await only(["--since", "2999-01-01T00:00:00Z"])).toEqual([]);

    const json = JSON.parse(ok(await runCli(["memory", "log", KEY, "--json", "--last", "2"], { cwd: dir })).stdout);
    expect(json.entries.map((e: { seq: number; kind: string }) => [e.seq, e.kind])).toEqual([[3, "patch"], [4, "rejected"]]);
    expect(json.entries[0].provenance).toMatchObject({ agent: "scribe", line: 2, mode: "continue", program: path.join(dir, "s2.vvm") });
    expect(json.torn_bytes).toBe(54);
    expect(json.key).toBe(KEY);
  });

  it("log --last N shows the last N entries a whole read shows, also past a line out of sequence", async () => {
    const dir = await mkdtemp(path.join(base, "p-"));
    await mkdir(memDir(dir, "k"), { recursive: true });
    // a planted seq between entries 2 and 3: a whole read skips it, and must not judge 3… against it
    const planted = patchLine(900_000_000, ["planted"]);
    await writeFile(path.join(memDir(dir, "k"), "ledger.jsonl"), [1, 2].map((n) => patchLine(n, [`fact ${n}`])).join("") + "garbage\n" + planted + [3, 4, 5, 6].map((n) => patchLine(n, [`fact ${n}`])).join(""));
    const seqs = async (...args: string[]) => (JSON.parse(ok(await runCli(["memory", "log", "k", "--json", ...args], { cwd: dir })).stdout).entries as { seq: number }[]).map((e) => e.seq);
    expect(await seqs()).toEqual([1, 2, 3, 4, 5, 6]);
    for (let n = 1; n <= 7; n++) expect(await seqs("--last", String(n))).toEqual([1, 2, 3, 4, 5, 6].slice(-n));
  });

  it("history: the digest's versions, agents' and a person's, and where digest.md stands", async () => {
    const dir = await builtProject();
    const res = ok(await runCli(["memory", "history", KEY], { cwd: dir }));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments": 4 versions of the digest, oldest first\n/);
    expect(res.stdout).toMatch(/^ {2}\[0\] .*\(the empty digest the memory began with\) +0 chars$/m);
    expect(res.stdout).toMatch(/^ {2}\[1\] +\d{4}-.*Z +scribe@s1\.vvm:2 +42 chars$/m);
    expect(res.stdout).toMatch(/^ {2}\[2\] +\d{4}-.*Z +a person \(edited digest\.md by hand\) +76 chars$/m);
    expect(res.stdout).toMatch(/^ {2}\[3\] +\d{4}-.*Z +scribe@s2\.vvm:2 +56 chars$/m);
    expect(res.stdout).toContain("digest.md now: version [3]\n");
    await appendFile(path.join(memDir(dir, KEY), "digest.md"), "- another hand note\n");
    const json = JSON.parse(ok(await runCli(["memory", "history", KEY, "--json"], { cwd: dir })).stdout);
    expect(json.versions.map((v: { seq: number; by: string | null }) => [v.seq, v.by])).toEqual([[0, null], [1, "agent"], [2, "person"], [3, "agent"]]);
    expect(json.versions[0]).toMatchObject({ seq: 0, ts: null, kind: null, chars: 0 });
    expect(json.current).toMatchObject({ version: null, chars: 56 + "- another hand note\n".length, unusable: null });
    expect(json.torn_bytes).toBe(54);
  });

  it("diff: a unified diff between the digest after two entries, or after one entry and digest.md now", async () => {
    const dir = await builtProject();
    const run = async (...args: string[]) => ok(await runCli(["memory", "diff", KEY, ...args], { cwd: dir })).stdout;
    const v1 = "## Open\n- VND-221 card-processor timeouts\n";
    const v3 = "## Open\n- VND-221 vendor answered\n- api 4.18.3 deployed\n";
    const d13 = await run("1", "3");
    expect(d13).toMatch(/^--- a\/digest\.md\tafter entry 1, \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\n\+\+\+ b\/digest\.md\tafter entry 3, .*Z\n@@ -1,2 \+1,3 @@\n/);
    expect(d13).toContain("\n-- VND-221 card-processor timeouts\n+- VND-221 vendor answered\n+- api 4.18.3 deployed\n");
    expect(applyPatch(v1, d13)).toBe(v3);
    // entry 4 was rejected: the digest after it is still version 3, and so is digest.md now
    expect(await run("4")).toBe("");
    expect(await run("3", "4")).toBe("");
    expect(applyPatch("", await run("0", "1"))).toBe(v1);
    expect(await run("2", "1")).toMatch(/^--- a\/digest\.md\tafter entry 2, .*\n\+\+\+ b\/digest\.md\tafter entry 1, .*\n@@ -1,3 \+1,2 @@\n ## Open\n - VND-221 card-processor timeouts\n-- hand note: vendor call at 10:00\n$/);
    const file = path.join(memDir(dir, KEY), "digest.md");
    await appendFile(file, "- rotate the vendor's API key\n");
    const now = await run("3");
    expect(now).toMatch(/\+\+\+ b\/digest\.md\tdigest\.md now\n@@ -1,3 \+1,4 @@\n/);
    expect(applyPatch(v3, now)).toBe(v3 + "- rotate the vendor's API key\n");
    const json = JSON.parse(await run("4", "--json"));
    expect(json).toMatchObject({ key: KEY, a: { seq: 4, version: 3 }, b: { seq: null, version: null }, identical: false });
    expect(json.diff).toBe(now.replace("after entry 3", "after entry 4 (version 3)"));
    const mistakes: [string[], number, string][] = [
      [["9"], 1, 'vvm: memory project:"oncall:payments" has no entry 9; its last entry is 4\n'],
      [["x"], 64, 'vvm: A "x": expected an entry\'s sequence number (vvm memory history lists them)\n'],
      [["1", "-2"], 64, ""],
    ];
    for (const [args, code, stderr] of mistakes) {
      const res = await runCli(["memory", "diff", KEY, ...args], { cwd: dir });
      expect(res.code).toBe(code);
      if (stderr) expect(res.stderr).toBe(stderr);
      expect(res.stdout).toBe("");
    }
  });

  it("diff and history: a hand edit whose content the ledger did not keep (a likely secret) is named, not shown", async () => {
    const dir = await builtProject();
    const file = path.join(memDir(dir, KEY), "digest.md");
    const token = "ghp_" + "aB3dE5gH7jK9mN2pQ4sT6vW8yZ1aB3dE5gH7";
    await writeFile(file, `## Open\n- deploy token ${token}\n`);
    ok(await runCli(["run", "s1.vvm", "--script", "script.yaml"], { cwd: dir }));
    const hist = ok(await runCli(["memory", "history", KEY], { cwd: dir })).stdout;
    expect(hist).toMatch(/^ {2}\[6\] .*a person \(edited digest\.md by hand\) +content not recorded: digest\.md was changed outside the runtime \(content not recorded: github\/GITHUB_TOKEN in digest line 2\)$/m);
    const res = await runCli(["memory", "diff", KEY, "6"], { cwd: dir });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^vvm: memory project:"oncall:payments": the digest of entry 6 is not in the ledger \(digest\.md was changed outside the runtime \(content not recorded: github/);
    for (const args of [["log", KEY], ["history", KEY, "--json"], ["diff", KEY, "5", "7"]]) expect((await runCli(["memory", ...args], { cwd: dir })).stdout).not.toContain(token);
  });

  it("search: retained facts and lines of past digests, most relevant first, each with its seq and time", async () => {
    const dir = await builtProject();
    const res = ok(await runCli(["memory", "search", KEY, "hand note"], { cwd: dir }));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments": 1 best match for "hand note", most relevant first \(searched 3 retained facts and 5 lines of past and present digests\)\n\[2\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ {2}digest {2}- hand note: vendor call at 10:00 {2}\(in the digest from entry 2 until entry 3\)\n$/);
    const vendor = ok(await runCli(["memory", "search", KEY, "vendor", "--json"], { cwd: dir })).stdout;
    const json = JSON.parse(vendor);
    expect(json).toMatchObject({ key: KEY, query: "vendor", searched: { facts: 3, digest_lines: 5 }, torn_bytes: 54 });
    expect(json.hits.map((h: { kind: string; seq: number; text: string }) => [h.kind, h.seq, h.text]).sort()).toEqual([
      ["digest", 2, "- hand note: vendor call at 10:00"],
      ["digest", 3, "- VND-221 vendor answered"],
      ["fact", 1, "B first shift: VND-221 opened with the vendor"],
    ]);
    expect(json.hits.find((h: { seq: number }) => h.seq === 3)).toMatchObject({ until: null });
    expect(json.hits.find((h: { kind: string }) => h.kind === "fact")).toMatchObject({ index: 0, ts: expect.stringMatching(/^\d{4}-/) });
    // more words that match rank first
    expect(JSON.parse(ok(await runCli(["memory", "search", KEY, "payment retries", "--json"], { cwd: dir })).stdout).hits[0]).toMatchObject({ kind: "fact", seq: 1, index: 1, text: "N check the payment retries" });
    expect(ok(await runCli(["memory", "search", KEY, "vendor", "--limit", "1"], { cwd: dir })).stdout.trimEnd().split("\n")).toHaveLength(2);
    // a fact is shown as forget --fact names it
    expect(ok(await runCli(["memory", "search", KEY, "payment retries", "--limit", "1"], { cwd: dir })).stdout).toMatch(/\n\[1:1\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ {2}fact {4}N check the payment retries\n$/);
    expect(ok(await runCli(["memory", "search", KEY, "zebra"], { cwd: dir })).stdout).toBe('memory project:"oncall:payments": nothing matches "zebra" (searched 3 retained facts and 5 lines of past and present digests)\n');
  });

  it("reading writes nothing: every file, size, mode and mtime is the same after every command", async () => {
    const dir = await builtProject();
    const before = await snapshot(dir);
    const commands = [["ls"], ["ls", "--json"], ["show", KEY], ["show", KEY, "--context", "--task", "VND-221"], ["show", KEY, "--json"], ["log", KEY], ["log", KEY, "--last", "1"], ["log", KEY, "--since", "1h", "--json"], ["history", KEY], ["history", KEY, "--json"], ["search", KEY, "vendor"], ["search", KEY, "vendor", "--json"], ["diff", KEY, "1"], ["diff", KEY, "1", "3", "--json"]];
    for (const c of commands) ok(await runCli(["memory", ...c], { cwd: dir }));
    expect(await snapshot(dir)).toEqual(before);
  });

  it("mistakes and missing memories: exit 64 or 1, one line on stderr, nothing on stdout, no stack trace", async () => {
    const dir = await builtProject();
    const cases: [string[], number, RegExp][] = [
      [["search", "nope", "vendor"], 1, /^vvm: no memory project:"nope"/],
      [["search", KEY, "  "], 64, /^vvm: the query is empty/],
      // only words search leaves out: said, not "nothing matches"
      [["search", KEY, "the and of"], 64, /^vvm: the query "the and of" has no searchable words \(one-letter words and common words such as "the" and "of" are left out\): give the words to look for\n$/],
      [["search", KEY, "a - I"], 64, /^vvm: the query "a - I" has no searchable words/],
      [["search", KEY], 64, /missing required argument 'query'/],
      [["show", "nope"], 1, /^vvm: no memory project:"nope" in \.vvm\/memory/],
      [["show", KEY, "--memory-budget", "lots"], 64, /--memory-budget/],
      [["log", "nope"], 1, /^vvm: no memory project:"nope" in \.vvm\/memory \(give the project with --dir or --program\)\n$/],
      [["history", "nope", "--dir", dir], 1, /^vvm: no memory project:"nope" in .*\.vvm\/memory\n$/],
      [["log", "k-oncall_3apayments"], 1, /no memory project:"k-oncall_3apayments"/],
      [["log", KEY, "--kind", "patches"], 64, /--kind patches: expected one or more of patch, rejected, external_edit, repair/],
      [["log", KEY, "--since", "yesterday"], 64, /--since yesterday: expected a duration/],
      [["log", KEY, "--last", "0"], 64, /--last/],
      [["log", "  "], 64, /key " {2}": key is blank/],
      // a key refused for its length is quoted by its start, not whole
      [["show", "k".repeat(5000)], 64, /^vvm: key "k{80}…": key is 5000 bytes long; the limit is 1024\n$/],
      [["ls", "--path", "x"], 64, /--path is for --scope path/],
      [["ls", "--scope", "path"], 64, /--scope path needs --path/],
      [["ls", "--scope", "galaxy"], 64, /galaxy/],
      [["ls", "--dir", dir, "--program", "s1.vvm"], 64, /--dir and --program both name the project/],
      [["ls", "--scope", "user", "--dir", dir], 64, /^vvm: --dir names a project, and --scope user memories belong to no project/],
      [["show", KEY, "--scope", "user", "--program", "s1.vvm"], 64, /^vvm: --program names a project, and --scope user memories/],
      [["ls", "--program", "missing.vvm"], 64, /--program missing\.vvm: no such file/],
      [["ls", "--program", "."], 64, /^vvm: --program \.: not a file \(give the program, or the project with --dir\)\n$/],
      // a mistyped project is not a project without memories (doctor would report it healthy)
      [["ls", "--dir", "no-such-project"], 64, /^vvm: --dir no-such-project: no such folder\n$/],
      [["doctor", "--dir", "no-such-project"], 64, /^vvm: --dir no-such-project: no such folder\n$/],
      [["show", KEY, "--dir", "s1.vvm"], 64, /^vvm: --dir s1\.vvm: no such folder\n$/],
      [["log"], 64, /missing required argument 'key'/],
    ];
    await expectRefused(cases, (args) => runCli(["memory", ...args], { cwd: dir }));
  });

  it("ls: one line per memory whatever its key holds, controls and line breaks escaped, columns in line", async () => {
    const dir = await mkdtemp(path.join(base, "keys-"));
    const keys = ["a\nb", "plain", "x\u0007y"];
    await writeFile(path.join(dir, "k.vvm"), 'agent a(model="haiku", prompt="p")\n' + keys.map((k, i) => `x${i} = @{model="haiku", prompt="p", memory={scope: "project", key: ${JSON.stringify(k)}}} \`go\`(1)\nexport x${i}\n`).join(""));
    ok(await runCli(["run", "k.vvm", "--provider", "sim"], { cwd: dir }));
    const lines = ok(await runCli(["memory", "ls"], { cwd: dir })).stdout.trimEnd().split("\n");
    expect(lines.map((l) => l.slice(0, 13))).toEqual(["3 memories in", "  a\\u000ab  0", "  plain     0", "  x\\u0007y  0"]);
  });

  it("other scopes: user under HOME, path relative to the project", async () => {
    const dir = await mkdtemp(path.join(base, "scopes-"));
    const home = path.join(dir, "home");
    await writeFile(path.join(dir, "script.yaml"), script);
    await writeFile(path.join(dir, "u.vvm"), program(KEY, "First shift: go.").replace('scope: "project"', 'scope: "user"'));
    await writeFile(path.join(dir, "p.vvm"), program(KEY, "First shift: go.").replace('scope: "project"', 'scope: "path", path: "shared/mem"'));
    ok(await runCli(["run", "u.vvm", "--script", "script.yaml"], { cwd: dir, env: { HOME: home } }));
    ok(await runCli(["run", "p.vvm", "--script", "script.yaml"], { cwd: dir }));
    expect(ok(await runCli(["memory", "ls", "--scope", "user"], { cwd: dir, env: { HOME: home } })).stdout).toMatch(/^1 memory in .*home\/\.vvm\/memory \(user scope\)\n {2}oncall:payments/);
    expect(ok(await runCli(["memory", "log", KEY, "--scope", "path", "--path", "shared/mem"], { cwd: dir })).stdout).toMatch(/^\[1\] patch/);
    expect(ok(await runCli(["memory", "ls"], { cwd: dir })).stdout).toBe("no memories in .vvm/memory (project scope)\n");
    const relative = await runCli(["memory", "ls", "--scope", "user"], { cwd: dir, env: { HOME: "relative/home" } });
    expect(relative.code).toBe(64);
    expect(relative.stderr).toContain('scope "user" needs an absolute home directory');
  });
});

describe("vvm memory and links", () => {
  it("never reads through a link where a regular file belongs, and says so", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const outside = path.join(dir, "outside.txt");
    await writeFile(outside, "OUTSIDE-TEXT " + patchLine(1, ["OUTSIDE-FACT"]));
    await rm(path.join(mem, "digest.md"));
    await symlink(outside, path.join(mem, "digest.md"));
    const ls = ok(await runCli(["memory", "ls"], { cwd: dir }));
    expect(ls.stdout).toContain("warning: digest.md is not a regular file: the digest is not injected and no patch can replace it until it is fixed by hand");
    const hist = ok(await runCli(["memory", "history", KEY], { cwd: dir }));
    expect(hist.stdout).toContain("digest.md now: digest.md is not a regular file");
    await rm(path.join(mem, "ledger.jsonl"));
    await symlink(outside, path.join(mem, "ledger.jsonl"));
    for (const args of [["log", KEY], ["log", KEY, "--last", "1"], ["history", KEY]]) {
      const res = await runCli(["memory", ...args], { cwd: dir });
      expect(res.code).toBe(1);
      expect(res.stderr).toBe("vvm: ledger.jsonl is not a regular file; not read (a memory file must be a regular file with one name, never a link)\n");
      expect(res.stdout).toBe("");
    }
    expect(ok(await runCli(["memory", "ls"], { cwd: dir })).stdout).toContain("warning: ledger.jsonl cannot be read (ledger.jsonl is not a regular file)");
    for (const args of [["ls", "--json"], ["log", KEY, "--json"], ["history", KEY, "--json"]]) expect((await runCli(["memory", ...args], { cwd: dir })).stdout).not.toContain("OUTSIDE");
  });

  it("a memory directory that is a link out of its root is reported, not read", async () => {
    const dir = await builtProject();
    const elsewhere = path.join(dir, "elsewhere");
    await mkdir(elsewhere);
    await writeFile(path.join(elsewhere, "ledger.jsonl"), patchLine(1, ["ELSEWHERE-FACT"]));
    await symlink(elsewhere, path.join(dir, ".vvm", "memory", "k-planted"));
    const ls = ok(await runCli(["memory", "ls"], { cwd: dir }));
    expect(ls.stdout).toMatch(/^ {2}planted +- +digest - +used - +unreadable$/m);
    expect(ls.stdout).toMatch(/warning: memory directory .*k-planted resolves to .*elsewhere, outside .*memory \(symbolic link\?\)/);
    const log = await runCli(["memory", "log", "planted"], { cwd: dir });
    expect(log.code).toBe(1);
    expect(log.stderr).toMatch(/^vvm: memory directory .* resolves to .*, outside .* \(symbolic link\?\)\n$/);
    expect(log.stdout + ls.stdout).not.toContain("ELSEWHERE");
  });
});

describe("vvm memory while a call holds the memory", () => {
  it("reads without the lock and says who holds it", async () => {
    const dir = await builtProject();
    const { store } = makeStore(dir, { lockTimeoutMs: 100 });
    const held = await session(store, KEY);
    try {
      const ls = ok(await runCli(["memory", "ls"], { cwd: dir }));
      expect(ls.stdout).toMatch(/note: in use: the lock is held by pid \d+ on .+ since \d{4}-/);
      expect(ok(await runCli(["memory", "log", KEY, "--last", "1"], { cwd: dir })).stdout).toMatch(/^\[5\] repair/);
    } finally {
      await held.release();
    }
  });
});

describe("vvm memory after the call that held the memory was killed", () => {
  it("says the lock is stale, not in use, and names what the killed writer left", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    // kill -9 (or SIGTERM) mid-commit: its lock, a temporary file, and the torn tail builtProject leaves
    await writeFile(path.join(mem, "lock"), JSON.stringify({ pid: 2 ** 22 + 12345, host: hostname(), since: "2026-01-01T00:00:00Z" }));
    await writeFile(path.join(mem, "digest.md.0123456789abcdef01.tmp"), "half a digest");
    const t0 = Date.now();
    const ls = ok(await runCli(["memory", "ls"], { cwd: dir }));
    expect(ls.stdout).not.toContain("in use");
    expect(ls.stdout).toMatch(/warning: a stale lock: pid 4206649 on .+ held it and no longer runs; the next continue call takes it over\n/);
    expect(ls.stdout).toContain("warning: digest.md.0123456789abcdef01.tmp was left by an interrupted write");
    // nothing is waited for: no call is half-way through a commit
    expect(Date.now() - t0).toBeLessThan(800);
    const show = ok(await runCli(["memory", "show", KEY], { cwd: dir }));
    expect(show.stdout).toContain("a stale lock: pid 4206649");
  });
});

describe("vvm memory while another process commits", () => {
  it("show reads whole states only: a logged digest, logged facts, never a half-done commit", async () => {
    const dir = await mkdtemp(path.join(base, "busy-"));
    const { done, running } = await busyRun(dir, standin);
    const seen: { digest: string; facts: string[]; warnings: string[] }[] = [];
    while (running()) {
      // give the event loop a turn: the child's exit is an I/O event, and in-process runs are all promises
      await new Promise((r) => setTimeout(r, 2));
      const res = await runCli(["memory", "show", "busy", "--json"], { cwd: dir });
      if (res.code === 1 && res.stderr.startsWith("vvm: no memory")) continue;
      noStack(res);
      expect(res.code).toBe(0);
      const json = JSON.parse(res.stdout);
      seen.push({ digest: json.digest, facts: json.facts.shown.map((f: { text: string }) => f.text), warnings: json.warnings });
    }
    expect((await done).code).toBe(0);
    const { entries } = await ledger(dir, "busy");
    expect(entries).toHaveLength(30);
    const digests = new Set(["", ...entries.map((e) => e.digest)]);
    const facts = new Set(entries.flatMap((e) => e.retain));
    expect(seen.length).toBeGreaterThan(0);
    for (const s of seen) {
      expect(digests.has(s.digest)).toBe(true);
      for (const f of s.facts) expect(facts.has(f)).toBe(true);
      expect(s.warnings).toEqual([]);
    }
  });
});

describe("vvm memory show between a commit's two steps", () => {
  it("reads digest.md while it still has the store's own second name for the digest it replaces, and refuses any other", async () => {
    const dir = await mkdtemp(path.join(base, "second-name-"));
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    await writeFile(path.join(mem, "digest.md"), "## Next\n- step 1\n");
    await writeFile(path.join(mem, "ledger.jsonl"), patchLine(1, ["a fact"]));
    // what a commit leaves for a moment (and a crash there until the next call): the old digest under both names
    const second = path.join(mem, `digest.md.${"0".repeat(16)}.01234567.prev`);
    await link(path.join(mem, "digest.md"), second);
    const shown = JSON.parse(ok(await runCli(["memory", "show", "k", "--json"], { cwd: dir })).stdout);
    expect(shown.digest).toBe("## Next\n- step 1\n");
    expect(shown.digest_unusable).toBeNull();
    // a second name that is not the store's own is refused as before
    await rm(second);
    await link(path.join(mem, "digest.md"), path.join(mem, "notes.md"));
    const refused = JSON.parse(ok(await runCli(["memory", "show", "k", "--json"], { cwd: dir })).stdout);
    expect(refused.digest).toBeNull();
    expect(refused.digest_unusable).toBe("digest.md has other hard links");
  });
});

describe("vvm memory log --last on a long ledger", () => {
  it("reads the end of the file only, whatever its length", async () => {
    const dir = await mkdtemp(path.join(base, "long-"));
    const mem = memDir(dir, "big");
    await mkdir(mem, { recursive: true });
    // about 40 MB of entries, written in pieces
    const fact = "x".repeat(380);
    const per = 10_000;
    for (let seq = 1; seq <= 100_000; seq += per) {
      let text = "";
      for (let s = seq; s < seq + per; s++) text += patchLine(s, [`fact ${s} ${fact}`]);
      await appendFile(path.join(mem, "ledger.jsonl"), text);
    }
    const size = (await stat(path.join(mem, "ledger.jsonl"))).size;
    expect(size).toBeGreaterThan(40_000_000);
    const ioBytes = () => {
      try {
        return Number(/^rchar: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))![1]);
      } catch {
        return null; // not Linux: the command's own count below still holds
      }
    };
    const before = ioBytes();
    const res = ok(await runCli(["memory", "log", "big", "--last", "20", "--json"], { cwd: dir }));
    const after = ioBytes();
    const json = JSON.parse(res.stdout);
    expect(json.entries.map((e: { seq: number }) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 99_981 + i));
    expect(json.ledger_bytes).toBe(size);
    expect(json.bytes_read).toBeLessThanOrEqual(64 * 1024);
    // everything this process read meanwhile (the CLI's modules are loaded already): far below the ledger
    if (before !== null && after !== null) expect(after - before).toBeLessThan(2_000_000);
    // the readable form and --since stop early too
    expect(ok(await runCli(["memory", "log", "big", "--last", "3"], { cwd: dir })).stdout.split("\n")[0]).toMatch(/^\[ 99998\] patch/);
  });
});
