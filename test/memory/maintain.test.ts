// `vvm memory restore | forget | rm | doctor` through the real CLI, on memories built by real runs (script
// provider and the Messages API stand-in): every write under the lock, recorded in the ledger with the
// command and the user, never through a link, never a stack trace.
import { appendFile, chmod, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli as runCliAnyHome, testEnv, type CliOptions } from "../support/cli.ts";
import { nodeFs, type MemoryFs } from "../../runtime/memory/fsio.ts";
import { doctorMemory, finishRemovals, forgetFacts, removeMemory } from "../../runtime/memory/maintain.ts";
import { ATTEMPTS, inspectMemory } from "../../runtime/memory/inspect.ts";
import { obj } from "../../runtime/values.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { resolveBinding, sha256 } from "../../runtime/memory/keys.ts";
import { toolProvenance, type LedgerEntry } from "../../runtime/memory/ledger.ts";
import { selectFacts } from "../../runtime/memory/forget.ts";
import { block, busyRun, expectRefused, noStack, ok, program, scriptFor } from "./projects.ts";
import { ledger, makeStore, memDir, patchReply, session } from "./helpers.ts";

const base = useTempDir("vvm-mem-write-");
const standin = useStandin();
/** Every run, command and store shares one HOME, where the key recall.jsonl is signed with is made (index-key.ts). */
const HOME = path.join(base, "home");
const runCli = (args: string[], opts: CliOptions = {}) => runCliAnyHome(args, { ...opts, env: { HOME, ...opts.env } });

const KEY = "oncall:payments";
const PHONE = "555-0199-PRIYA";
const V1 = "## Open\n- VND-221 card-processor timeouts\n";
const V2 = `## Open\n- VND-221 vendor answered\n- call Priya on ${PHONE} about the refund\n`;
const V3 = "## Open\n- VND-221 closed\n";
const script = scriptFor([
  ["First shift", block(JSON.stringify({ digest: V1, retain: ["B first shift: VND-221 opened with the vendor", "N check the payment retries"] }))],
  ["Second shift", block(JSON.stringify({ digest: V2, retain: ["B second shift: api 4.18.3 deployed", `W @Priya reachable on ${PHONE}`] }))],
  ["Third shift", block(JSON.stringify({ digest: V3, retain: ["B third shift: the vendor closed VND-221"] }))],
]);

/** A project whose memory three runs built: digests V1, V2 (with a phone number), V3, five facts. */
async function builtProject(): Promise<string> {
  const dir = await mkdtemp(path.join(base, "p-"));
  await writeFile(path.join(dir, "script.yaml"), script);
  for (const [n, task] of [[1, "First shift"], [2, "Second shift"], [3, "Third shift"]] as const) await writeFile(path.join(dir, `s${n}.vvm`), program(KEY, `${task}: write the handoff.`));
  for (const n of [1, 2, 3]) ok(await runCli(["run", `s${n}.vvm`, "--script", "script.yaml"], { cwd: dir }));
  return dir;
}

const memory = (dir: string, ...args: string[]) => runCli(["memory", ...args], { cwd: dir, env: { USER: "alice" } });

/**
 * Every entry follows the one before (hash chain), every version the ledger holds hashes to what it says
 * (with digest.md's front matter, `prefix`, once a person added one), and digest.md is the last version.
 */
function explained(entries: LedgerEntry[], digestNow: string, prefix = "") {
  for (let i = 1; i < entries.length; i++) expect({ seq: entries[i].seq, before: entries[i].digest_before }).toEqual({ seq: entries[i].seq, before: entries[i - 1].digest_after });
  expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
  for (const e of entries) if (typeof e.digest === "string" && e.purged_by === undefined) expect([sha256(e.digest), sha256(prefix + e.digest)]).toContain(e.digest_after);
  expect(sha256(digestNow)).toBe(entries.at(-1)!.digest_after);
}

const PREV = /^digest\.md\.[0-9a-f]{16}\.[0-9a-f]{8}\.prev$/;

/** Every regular file under `dir`, with its content. */
async function filesUnder(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) out.set(path.relative(dir, p), await readFile(p));
    }
  };
  await walk(dir);
  return out;
}

describe("vvm memory restore", () => {
  it("makes an earlier digest current as a restore entry; the next continue call is shown it, and the ledger explains every version", async () => {
    const dir = await builtProject();
    const res = ok(await memory(dir, "restore", KEY, "1"));
    expect(res.stdout).toBe(`memory project:"oncall:payments": restored the digest of entry 1, ${V1.length} characters, as entry 4\n`);
    const mem = memDir(dir, KEY);
    expect(await readFile(path.join(mem, "digest.md"), "utf8")).toBe(V1);
    const { entries } = await ledger(dir, KEY);
    expect(entries.at(-1)).toMatchObject({ seq: 4, kind: "restore", restored_from: 1, digest: V1, provenance: { tool: "vvm memory restore", user: "alice" } });
    explained(entries, V1);
    expect(ok(await memory(dir, "history", KEY)).stdout).toMatch(/^ {2}\[4\] +\d{4}-.*Z +vvm memory restore \(alice\): the digest of entry 1 again +\d+ chars$/m);
    expect(ok(await memory(dir, "log", KEY, "--kind", "restore")).stdout).toMatch(/^\[4\] restore .* vvm memory restore \(alice\) {2}digest → 42 chars, restored from entry 1\n$/);

    // the next continue call is shown the restored digest, and its patch follows it in the ledger
    await writeFile(path.join(dir, "s4.vvm"), program(KEY, "Fourth shift: write the handoff."));
    standin.setHandler(() => ({ type: "text", text: patchReply({ digest: V1 + "- fourth shift: quiet\n" }, "ok") }));
    ok(await runCli(["run", "s4.vvm"], { cwd: dir, env: standin.env() }));
    const system = ((standin.requests[0].body.system ?? []) as { text: string }[]).map((b) => b.text).find((t) => t.startsWith("<memory"));
    expect(system).toContain("## Digest\n## Open\n- VND-221 card-processor timeouts\n\n## Retained facts");
    const after = (await ledger(dir, KEY)).entries;
    expect(after.map((e) => e.kind)).toEqual(["patch", "patch", "patch", "restore", "patch"]);
    explained(after, V1 + "- fourth shift: quiet\n");

    // an entry that changed nothing stands for the version in effect after it; the digest in place already writes nothing
    const again = ok(await memory(dir, "restore", KEY, "4", "--json"));
    expect(JSON.parse(again.stdout)).toMatchObject({ key: KEY, requested: 4, version: 4, restored: true, entry: 6 });
    const same = ok(await memory(dir, "restore", KEY, "6"));
    expect(same.stdout).toBe('memory project:"oncall:payments": the digest of entry 6 is the current digest already; nothing written\n');
    expect((await ledger(dir, KEY)).entries).toHaveLength(6);
    // version 0: the empty digest the memory began with
    ok(await memory(dir, "restore", KEY, "0"));
    expect(await readFile(path.join(mem, "digest.md"), "utf8")).toBe("");
  });

  it("records a hand edit first, refuses while read_only unless --force, and keeps the front matter", async () => {
    const dir = await builtProject();
    const file = path.join(memDir(dir, KEY), "digest.md");
    await writeFile(file, "---\nread_only: true\n---\n" + V3 + "- a person's note\n");
    const refused = await memory(dir, "restore", KEY, "1");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('vvm: memory project:"oncall:payments": digest.md is read_only (front matter): --force restores it anyway; digest unchanged; opening the memory recorded entry 4 (the hand edit of digest.md it found) first\n');
    expect(refused.stdout).toBe("");
    // the hand edit is recorded, never lost, even when the restore is refused
    let { entries } = await ledger(dir, KEY);
    expect(entries.at(-1)).toMatchObject({ seq: 4, kind: "external_edit", digest: V3 + "- a person's note\n", provenance: { tool: "vvm memory restore", user: "alice" } });
    ok(await memory(dir, "restore", KEY, "1", "--force"));
    expect(await readFile(file, "utf8")).toBe("---\nread_only: true\n---\n" + V1);
    entries = (await ledger(dir, KEY)).entries;
    expect(entries.at(-1)).toMatchObject({ seq: 5, kind: "restore", restored_from: 1, reason: "digest.md is read_only (front matter); restored anyway (--force)" });
    explained(entries, "---\nread_only: true\n---\n" + V1, "---\nread_only: true\n---\n");
  });

  it("refuses over an unusable digest.md and writes nothing: not even the hand edit, whose content it could not record", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    await writeFile(path.join(mem, "digest.md"), "a person's\0note\n");
    const before = await filesUnder(mem);
    const refused = await memory(dir, "restore", KEY, "1");
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([1, "", 'vvm: memory project:"oncall:payments": digest.md contains NUL bytes (binary file?); its content is in no ledger entry, so it is never replaced: fix or move it by hand first; memory unchanged\n']);
    expect(await filesUnder(mem)).toEqual(before);
  });

  it("runs the restored text through the secret scan and the patch checks; mistakes are exit 64 or 1 without a trace", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    // a cloned repository can plant any ledger line: a version holding a token
    const token = "ghp_" + "aB3dE5gH7jK9mN2pQ4sT6vW8yZ1aB3dE5gH7";
    const planted = `## Open\n- deploy token ${token}\n`;
    await appendFile(path.join(mem, "ledger.jsonl"), JSON.stringify({ v: 1, ts: new Date().toISOString(), seq: 4, kind: "external_edit", digest: planted, retain: [], digest_before: sha256(V3), digest_after: sha256(planted), provenance: null }) + "\n");
    await writeFile(path.join(mem, "digest.md"), planted.replace(token, "(rotated)"));
    const before = await readFile(path.join(mem, "digest.md"), "utf8");
    const res = await memory(dir, "restore", KEY, "4");
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^vvm: memory project:"oncall:payments": the digest of entry 4 appears to contain a secret \(github\/GITHUB_TOKEN in digest line 2\); not restored, digest unchanged; opening the memory recorded entry 5 \(the hand edit of digest\.md it found\) first\n$/);
    expect(res.stdout + res.stderr).not.toContain(token);
    expect(await readFile(path.join(mem, "digest.md"), "utf8")).toBe(before);
    expect((await ledger(dir, KEY)).entries.filter((e) => e.kind === "restore")).toEqual([]);

    const cases: [string[], number, RegExp][] = [
      [["restore", KEY, "99"], 1, /^vvm: memory project:"oncall:payments" has no entry 99; its last entry is 5\n$/],
      [["restore", KEY, "x"], 64, /^vvm: SEQ "x": expected an entry's sequence number/],
      [["restore", "nope", "1"], 1, /^vvm: no memory project:"nope" in \.vvm\/memory/],
      [["restore", KEY], 64, /missing required argument 'seq'/],
      [["restore", KEY, "1", "--lock-timeout", "soon"], 64, /--lock-timeout/],
    ];
    await expectRefused(cases, (args) => memory(dir, ...args));
  });

  it("waits for a call holding the lock, and gives up after --lock-timeout", async () => {
    const dir = await builtProject();
    const { store } = makeStore(dir, { homeDir: HOME });
    const held = await session(store, KEY);
    const res = await memory(dir, "restore", KEY, "1", "--lock-timeout", "300ms");
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^vvm: memory project:"oncall:payments" is in use by another call or process \(held by pid \d+ .*\); gave up after waiting 300 ms \(--lock-timeout\)\n$/);
    // a Ctrl-C while waiting stops the command: exit 130, as for any interruption, not 1 as for a refusal
    for (const args of [["restore", KEY, "1"], ["forget", KEY, "--match", "VND"], ["rm", KEY, "--yes"]]) {
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 150);
      const interrupted = await runCli(["memory", ...args], { cwd: dir, signal: stop.signal });
      expect(interrupted.code).toBe(130);
      expect(interrupted.stderr).toMatch(/^vvm: memory project:"oncall:payments": interrupted while waiting for its lock(; nothing removed)?\n$/);
    }
    const waiting = memory(dir, "restore", KEY, "1");
    await new Promise((r) => setTimeout(r, 100));
    await held.complete(patchReply({ retain: ["a fact from the call that held the lock"] }));
    ok(await waiting);
    expect((await ledger(dir, KEY)).entries.map((e) => e.kind)).toEqual(["patch", "patch", "patch", "patch", "restore"]);
  });
});

describe("a memory removed while a command waits for its lock", () => {
  it("restore, forget and rm say that the memory was removed (exit 1), never an error code", async () => {
    for (const args of [["restore", KEY, "1"], ["forget", KEY, "--match", "VND"], ["rm", KEY, "--yes"]]) {
      const dir = await builtProject();
      // a live holder (this process, as far as the lock says) until the directory is removed
      await writeFile(path.join(memDir(dir, KEY), "lock"), JSON.stringify({ pid: process.pid, host: (await import("node:os")).hostname(), since: new Date().toISOString() }));
      const waiting = memory(dir, ...args);
      // time to reach the wait on a loaded machine; the holder stays live for the command's whole lock timeout
      await new Promise((r) => setTimeout(r, 600));
      // gone at once, as rm's own rename aside does: a recursive rm in place lets the command's retry meet a
      // half-removed directory (the lock file gone first) and take the lock, or add a file rm then cannot pass
      const gone = `${memDir(dir, KEY)}.gone`;
      await rename(memDir(dir, KEY), gone);
      await rm(gone, { recursive: true });
      const res = await waiting;
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 1, stdout: "" });
      expect(res.stderr).toMatch(/(^|\n)vvm: memory project:"oncall:payments" was removed while waiting for its lock(; nothing removed)?\n$/);
    }
  });
});

describe("vvm memory forget", () => {
  it("names facts in a forget entry: they are never recalled, shown, injected or found by search again", async () => {
    const dir = await builtProject();
    const res = ok(await memory(dir, "forget", KEY, "--fact", "1:1"));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments": forgot 1 fact \(entry 4\); recall and vvm memory search no longer show it\n {2}\[#1:1\] \d{4}-.*Z {2}"N check the payment retries"\n$/);
    const byMatch = JSON.parse(ok(await memory(dir, "forget", KEY, "--match", "PRIYA reachable", "--json")).stdout);
    expect(byMatch).toMatchObject({ key: KEY, entry: 5, forgotten: [{ seq: 2, index: 1, text: `W @Priya reachable on ${PHONE}` }], purge: null });
    const { entries } = await ledger(dir, KEY);
    expect(entries.slice(3)).toMatchObject([
      { kind: "forget", forgotten: [{ seq: 1, index: 1 }], provenance: { tool: "vvm memory forget", user: "alice" } },
      { kind: "forget", forgotten: [{ seq: 2, index: 1 }] },
    ]);
    explained(entries, V3);

    const gone = ["N check the payment retries", `reachable on ${PHONE}`];
    const shown = JSON.parse(ok(await memory(dir, "show", KEY, "--json")).stdout);
    expect(shown.facts.shown.map((f: { text: string }) => f.text)).toEqual(["B first shift: VND-221 opened with the vendor", "B second shift: api 4.18.3 deployed", "B third shift: the vendor closed VND-221"]);
    expect(shown.facts.hidden).toBe(0);
    for (const q of ["payment retries", "reachable"]) {
      const found = JSON.parse(ok(await memory(dir, "search", KEY, q, "--json")).stdout);
      expect(found.hits.filter((h: { kind: string }) => h.kind === "fact")).toEqual([]);
    }
    // a continue call: the Memory Context does not carry them, and recall.jsonl leaves them out
    await writeFile(path.join(dir, "s4.vvm"), program(KEY, "Fourth shift: check the payment retries and call Priya."));
    standin.setHandler(() => ({ type: "text", text: "ok" }));
    ok(await runCli(["run", "s4.vvm"], { cwd: dir, env: standin.env() }));
    const system = ((standin.requests[0].body.system ?? []) as { text: string }[]).map((b) => b.text).join("\n");
    expect(system).toContain("B second shift: api 4.18.3 deployed");
    for (const g of gone) expect(system).not.toContain(g);
    // a rebuilt index leaves them out too
    await rm(path.join(memDir(dir, KEY), "recall.jsonl"));
    const context = ok(await memory(dir, "show", KEY, "--context", "--task", "payment retries Priya")).stdout;
    for (const g of gone) expect(context).not.toContain(g);

    // facts forgotten already, facts that are not there, and usage mistakes
    const cases: [string[], number, RegExp][] = [
      [["forget", KEY, "--fact", "1:1"], 1, /that fact is forgotten already; nothing to do/],
      [["forget", KEY, "--fact", "1:7"], 1, /entry 1 has no retained fact 7; nothing forgotten/],
      [["forget", KEY, "--fact", "99"], 1, /there is no entry 99 \(the last is \d+\); nothing forgotten/],
      [["forget", KEY, "--match", "zebra"], 1, /no retained fact contains "zebra"; nothing forgotten/],
      [["forget", KEY], 64, /say which facts to forget: --fact SEQ\[:INDEX\] \(repeatable\) or --match TEXT/],
      [["forget", KEY, "--fact", "1:x"], 64, /--fact "1:x": expected SEQ/],
      [["forget", KEY, "--match", " "], 64, /--match is empty/],
      [["forget", "nope", "--fact", "1"], 1, /^vvm: no memory project:"nope"/],
    ];
    const n = (await ledger(dir, KEY)).entries.length;
    await expectRefused(cases, (args) => memory(dir, ...args));
    expect((await ledger(dir, KEY)).entries).toHaveLength(n);
  });

  it("--purge rewrites the ledger so the text is nowhere under .vvm/, not even as a hash, keeping seq numbers and the digest chain", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const before = (await ledger(dir, KEY)).entries;
    // a digest.md a commit replaced moments ago, holding the text (kept for a few seconds, §5)
    await writeFile(path.join(mem, `digest.md.${sha256(V2).slice(0, 16)}.0badc0de.prev`), V2);
    // the phone number is in a retained fact and in the digest of entry 2: both must go
    const all = async () => [...(await filesUnder(path.join(dir, ".vvm"))).entries()].filter(([, c]) => c.includes(PHONE)).map(([f]) => path.basename(f));
    const holding = await all();
    expect(holding.filter((f) => !PREV.test(f)).sort()).toEqual(["ledger.jsonl", "recall.jsonl"]);
    expect(holding).toContain(`digest.md.${sha256(V2).slice(0, 16)}.0badc0de.prev`);

    const res = ok(await memory(dir, "forget", KEY, "--match", PHONE, "--purge"));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments": forgot 1 fact \(entry 4\); recall and vvm memory search no longer show it\n {2}\[#2:1\] \d{4}-.*Z\npurged: 2 ledger lines rewritten, 2 occurrences replaced by a mark that names no text; recall\.jsonl rebuilt; removed (digest\.md\.[0-9a-f]{16}\.[0-9a-f]{8}\.prev(, )?)+\n$/);
    expect(res.stdout).toContain(".0badc0de.prev");
    expect(res.stdout + res.stderr).not.toContain(PHONE);
    expect(await all()).toEqual([]);

    const after = (await ledger(dir, KEY)).entries;
    expect(after.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    const fact = `W @Priya reachable on ${PHONE}`;
    expect(after[1]).toMatchObject({ seq: 2, purged_by: 4, retain: ["B second shift: api 4.18.3 deployed", { purged: expect.stringMatching(/^[0-9a-f]{16}$/) }] });
    expect(after[1].digest).toMatch(/\n- call Priya on \[purged [0-9a-f]{16}\] about the refund\n$/);
    // untouched entries keep their bytes; the hash of the digest that held the text is renamed wherever it is named
    expect(after[0]).toEqual(before[0]);
    expect(after[1].digest_after).not.toBe(before[1].digest_after);
    expect(after[2]).toEqual({ ...before[2], digest_before: after[1].digest_after, purged_by: 4 });
    expect(after[3]).toMatchObject({ kind: "forget", purge: true, forgotten: [{ seq: 2, index: 1 }], provenance: { tool: "vvm memory forget", user: "alice" } });
    // nothing left to try guesses against: neither the text's hash nor the old digest's
    for (const hash of [sha256(PHONE), sha256(fact), before[1].digest_after]) {
      expect([...(await filesUnder(path.join(dir, ".vvm"))).values()].filter((c) => c.includes(hash))).toEqual([]);
    }

    // the memory goes on working: a call, search, history and diff; nothing warns about the rewritten ledger
    const run = ok(await runCli(["run", "s1.vvm", "--script", "script.yaml"], { cwd: dir }));
    expect(run.stderr).not.toMatch(/warning/);
    expect(JSON.parse(ok(await memory(dir, "search", KEY, "Priya", "--json")).stdout).hits.filter((h: { kind: string }) => h.kind === "fact")).toEqual([]);
    expect(ok(await memory(dir, "diff", KEY, "1", "2")).stdout).toContain("+- call Priya on [purged ");
    expect(ok(await memory(dir, "log", KEY)).stdout).toMatch(/^\[2\] patch .*\+1 fact: "B second shift: api 4\.18\.3 deployed"; 1 purged fact$/m);
    expect(await all()).toEqual([]);
  });

  it("--purge of text only past digests held names no fact, and log says what it did", async () => {
    const dir = await builtProject();
    const res = ok(await memory(dir, "forget", KEY, "--match", "call Priya on", "--purge"));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments": purged \(entry 4\)\npurged: 2 ledger lines rewritten, 1 occurrence replaced by a mark that names no text; recall\.jsonl rebuilt/);
    expect((await ledger(dir, KEY)).entries[3]).toMatchObject({ kind: "forget", purge: true, forgotten: [], reason: "purged every occurrence of the text given from the ledger (vvm memory forget --purge)" });
    expect(ok(await memory(dir, "log", KEY, "--last", "1")).stdout).toMatch(/^\[4\] forget +\S+ \S+ +vvm memory forget \(alice\) +purged every occurrence of the text given from the ledger \(vvm memory forget --purge\)\n$/);
  });

  it("--purge run again after one was killed between its new ledger and the replaced copies of digest.md removes those copies", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const copy = `digest.md.${sha256(V2).slice(0, 16)}.0badc0de.prev`;
    await writeFile(path.join(mem, copy), V2);
    ok(await memory(dir, "forget", KEY, "--match", PHONE, "--purge"));
    // what a purge killed right after renaming its new ledger into place leaves: a copy it had not removed yet
    await writeFile(path.join(mem, copy), V2);
    const res = await memory(dir, "forget", KEY, "--match", PHONE, "--purge");
    expect(res).toEqual({ code: 1, stdout: "", stderr: `vvm: memory project:"oncall:payments": nothing in the ledger holds that text; the ledger is unchanged; removed ${copy}, a copy of an earlier digest.md that held it\n` });
    expect([...(await filesUnder(path.join(dir, ".vvm"))).values()].filter((c) => c.includes(PHONE))).toEqual([]);
  });

  it("--purge removes the old recall.jsonl (which holds the text) before the directory fsync that makes its new ledger last, so a power loss cannot bring it back", async () => {
    const dir = await builtProject();
    const index = path.join(memDir(dir, KEY), "recall.jsonl");
    expect(await readFile(index, "utf8")).toContain(PHONE);
    const seen: { indexThere: boolean; syncDir: boolean | undefined }[] = [];
    const recording: MemoryFs = {
      ...nodeFs,
      async writeAtomic(file, data, beforeRename, opts) {
        if (path.basename(file) !== "ledger.jsonl") return nodeFs.writeAtomic(file, data, beforeRename, opts);
        return nodeFs.writeAtomic(
          file,
          data,
          async () => {
            await beforeRename?.();
            seen.push({ indexThere: existsSync(index), syncDir: opts?.syncDir });
          },
          opts,
        );
      },
    };
    const opts = { who: { tool: "vvm memory forget", user: "alice" }, lockTimeoutMs: 10_000, signal: new AbortController().signal, warn: () => {}, homeDir: HOME, fs: recording };
    await forgetFacts(resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME), { facts: [], match: PHONE }, true, opts);
    expect(seen).toEqual([{ indexThere: false, syncDir: true }]);
    // rebuilt afterwards, without the text
    expect(await readFile(index, "utf8")).not.toContain(PHONE);
  });

  it("--purge reaches the text in either Unicode form, in provenance and in field names; a line nested too deep is skipped, never a crash", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const h = (await ledger(dir, KEY)).entries.at(-1)!.digest_after;
    const nfc = "Jos\u00e9 Ruiz";
    const nfd = "Jose\u0301 Ruiz";
    const entry = (seq: number, extra: Record<string, unknown>) =>
      JSON.stringify({ v: 1, ts: "2026-11-26T00:00:00Z", seq, kind: "patch", retain: [], digest_before: h, digest_after: h, provenance: null, ...extra }) + "\n";
    let deep = "1";
    for (let i = 0; i < 100_000; i++) deep = `[${deep}]`;
    await appendFile(
      path.join(mem, "ledger.jsonl"),
      entry(4, { retain: [`W ${nfd} approves refunds`], provenance: { program: `/home/${nfc.toLowerCase()}/p.vvm`, line: 1, agent: "a", model: "m", mode: "continue" } }) +
        entry(5, { retain: [`B asked ${nfc} twice`], [`note about ${nfd}`]: 1 }) +
        `{"v":1,"ts":"t","seq":6,"kind":"patch","retain":[],"digest_before":"${h}","digest_after":"${h}","x":${deep}}\n`,
    );
    const logged = await memory(dir, "log", KEY, "--json");
    noStack(logged);
    expect(logged.code).toBe(0);
    JSON.parse(logged.stdout);
    const res = await memory(dir, "forget", KEY, "--match", nfc, "--purge");
    noStack(res);
    expect(res.code).toBe(0);
    const holding = [...(await filesUnder(path.join(dir, ".vvm"))).entries()].filter(([, c]) => [nfc, nfd].some((t) => c.toString("utf8").toLowerCase().includes(t.toLowerCase())));
    expect(holding.map(([f]) => f)).toEqual([]);
  });

  it("--purge never renames a field this release writes, scrubs its own entry too, and refuses a line whose escapes it cannot read", async () => {
    const dir = await builtProject();
    const file = path.join(memDir(dir, KEY), "ledger.jsonl");
    // text that is only part of known field names ("digest", provenance's "line"): nothing to purge, nothing renamed
    for (const text of ["dige", "lin"]) {
      const bytes = await readFile(file, "utf8");
      const res = await memory(dir, "forget", KEY, "--match", text, "--purge");
      expect(res).toMatchObject({ code: 1, stderr: expect.stringContaining("nothing in the ledger holds that text; nothing purged") });
      expect(await readFile(file, "utf8")).toBe(bytes);
    }
    // a name that is also the user running the purge: the purge's own entry records that user, and loses it too
    const before = (await ledger(dir, KEY)).entries;
    ok(await runCli(["memory", "forget", KEY, "--match", "priya", "--purge"], { cwd: dir, env: { USER: "priya" } }));
    const after = (await ledger(dir, KEY)).entries;
    expect(after.slice(0, -1).map((e) => Object.keys(e).filter((k) => k !== "purged_by"))).toEqual(before.map((e) => Object.keys(e)));
    expect(toolProvenance(after.at(-1)!.provenance)?.user).toMatch(/^\[purged [0-9a-f]{16}\]$/);
    expect((await readFile(file, "utf8")).toLowerCase()).not.toContain("priya");
    ok(await memory(dir, "history", KEY));
    ok(await memory(dir, "diff", KEY, "1", "2"));
    // a line that is no readable entry (nested too deep) and holds an escape: the text may hide behind it
    let deep = '"B tiger\\n77 ok"';
    for (let i = 0; i < 20; i++) deep = `[${deep}]`;
    await appendFile(file, `{"v":1,"ts":"t","seq":99,"kind":"patch","retain":[],"x":${deep}}\n`);
    const refused = await memory(dir, "forget", KEY, "--match", "tiger", "--purge");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/not a readable entry and holds escapes the purge cannot see through/);
  });

  it("--purge is refused, and writes nothing, while digest.md holds the text in its front matter or in an edit no entry records yet", async () => {
    const dir = await builtProject();
    const file = path.join(memDir(dir, KEY), "digest.md");
    const snapshot = async () => [...(await filesUnder(path.join(dir, ".vvm"))).entries()].filter(([f]) => !f.endsWith("recall.jsonl"));
    for (const content of [`---\n# owner: Priya ${PHONE}\n---\n${V3}`, `${V3}- Priya ${PHONE}\n`]) {
      await writeFile(file, content);
      const before = await snapshot();
      const res = await memory(dir, "forget", KEY, "--match", PHONE, "--purge");
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/the current digest \(digest\.md\) holds that text.*nothing purged\n$/);
      expect(await snapshot()).toEqual(before);
    }
  });

  it("--purge is refused while the current digest holds the text, and changes nothing", async () => {
    const dir = await builtProject();
    ok(await memory(dir, "restore", KEY, "2"));
    // recall.jsonl, derived, is brought up to date by any session on the memory; nothing else may change
    const kept = async () => [...(await filesUnder(path.join(dir, ".vvm"))).entries()].filter(([f]) => !f.endsWith("recall.jsonl"));
    const snapshot = await kept();
    const res = await memory(dir, "forget", KEY, "--match", PHONE, "--purge");
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('vvm: memory project:"oncall:payments": the current digest (digest.md) holds that text: edit digest.md (or restore a version without it) first, then purge; nothing purged\n');
    expect(await kept()).toEqual(snapshot);
    // once the digest no longer holds it, a fact forgotten earlier can still be purged
    ok(await memory(dir, "restore", KEY, "3"));
    ok(await memory(dir, "forget", KEY, "--fact", "2:1"));
    const purged = JSON.parse(ok(await memory(dir, "forget", KEY, "--fact", "2:1", "--purge", "--json")).stdout);
    expect(purged).toMatchObject({ forgotten: [], already_forgotten: [{ seq: 2, index: 1 }], purge: { entries_rewritten: 1 } });
    const left = [...(await filesUnder(path.join(dir, ".vvm"))).values()].filter((c) => c.includes(`reachable on ${PHONE}`));
    expect(left).toEqual([]);
  });
});

describe("vvm memory restore while vvm run patches the same key", () => {
  it("two processes: every patch and every restore is in the ledger, in one unbroken chain", async () => {
    const dir = await mkdtemp(path.join(base, "busy-"));
    const { done, running } = await busyRun(dir, standin);
    let restored = 0;
    while (running()) {
      await new Promise((r) => setTimeout(r, 5));
      const res = await memory(dir, "restore", "busy", "1", "--json");
      if (res.code === 1 && /no memory|has no entry 1/.test(res.stderr)) continue;
      noStack(res);
      expect(res.code).toBe(0);
      if (JSON.parse(res.stdout).restored) restored++;
    }
    expect((await done).code).toBe(0);
    const { entries, badLines, tornBytes } = await ledger(dir, "busy");
    expect({ badLines, tornBytes }).toEqual({ badLines: [], tornBytes: 0 });
    expect(restored).toBeGreaterThan(0);
    expect(entries.filter((e) => e.kind === "patch")).toHaveLength(30);
    expect(entries.filter((e) => e.kind === "restore")).toHaveLength(restored);
    expect(new Set(entries.flatMap((e) => e.retain)).size).toBe(30);
    for (const e of entries.filter((x) => x.kind === "restore")) expect(toolProvenance(e.provenance)).toEqual({ tool: "vvm memory restore", user: "alice" });
    explained(entries, await readFile(path.join(memDir(dir, "busy"), "digest.md"), "utf8"));
  }, 60_000);
});

describe("vvm memory rm", () => {
  it("removes the memory's directory with --yes or a yes on the terminal, and nothing else", async () => {
    const dir = await builtProject();
    await writeFile(path.join(dir, "other.vvm"), program("other", "First shift: go."));
    ok(await runCli(["run", "other.vvm", "--script", "script.yaml"], { cwd: dir }));
    const mem = memDir(dir, KEY);
    // off a terminal, without --yes: a usage error, nothing removed
    const refused = await memory(dir, "rm", KEY);
    expect(refused.code).toBe(64);
    expect(refused.stderr).toBe('vvm: vvm memory rm asks before it removes a memory, and there is no terminal to ask on: pass --yes to remove memory project:"oncall:payments" without asking\n');
    // a person at a terminal who says no
    const no = await runCli(["memory", "rm", KEY], { cwd: dir, answer: "n" });
    expect(no.code).toBe(1);
    expect(no.stderr).toMatch(/^Remove memory project:"oncall:payments" \(\.vvm\/memory\/k-oncall_3apayments: 3 ledger entries, digest \d+ B\) and all its history\? This cannot be undone\. \[y\/N\] vvm: memory project:"oncall:payments" not removed\n$/);
    expect((await stat(mem)).isDirectory()).toBe(true);
    // a Ctrl-C at the question (the terminal's interrupt aborts the command, and the question gets no answer)
    const stop = new AbortController();
    const interrupted = await runCli(["memory", "rm", KEY], { cwd: dir, answer: null, signal: stop.signal, ctrlCAtQuestion: stop });
    expect(interrupted.code).toBe(130);
    expect(interrupted.stderr).toMatch(/vvm: memory project:"oncall:payments" not removed\n$/);
    expect((await stat(mem)).isDirectory()).toBe(true);
    // and one who says yes
    const yes = ok(await runCli(["memory", "rm", KEY], { cwd: dir, answer: "y" }));
    expect(yes.stdout).toMatch(/^removed memory project:"oncall:payments" \(\.vvm\/memory\/k-oncall_3apayments\): \d+ files, \d+(\.\d)? (B|KB)\n$/);
    await expect(lstat(mem)).rejects.toThrow(/ENOENT/);
    expect(ok(await memory(dir, "ls")).stdout).toMatch(/^1 memory in \.vvm\/memory \(project scope\)\n {2}other /);
    // --yes, --json; then the key is missing
    const json = JSON.parse(ok(await memory(dir, "rm", "other", "--yes", "--json")).stdout);
    expect(json).toMatchObject({ key: "other", finished: 0 });
    expect(json.removed.slice(0, 4)).toEqual(["ledger.jsonl", "recall.jsonl", "digest.md", "meta.json"]);
    const missing = await memory(dir, "rm", "other", "--yes");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^vvm: no memory project:"other" in \.vvm\/memory/);
    noStack(missing);
  });

  it("never follows a link: a link in the memory is unlinked, a memory that is a link is refused, a held lock is waited for", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const outside = path.join(dir, "outside");
    await mkdir(outside);
    await writeFile(path.join(outside, "precious.txt"), "keep me");
    await symlink(outside, path.join(mem, "sub"));
    await symlink(path.join(outside, "precious.txt"), path.join(mem, "notes.md"));
    // another memory's name that is a link to this one
    const alias = path.join(dir, ".vvm", "memory", "k-alias");
    await symlink(mem, alias);
    const aliased = await memory(dir, "rm", "alias", "--yes");
    expect(aliased.code).toBe(1);
    expect(aliased.stderr).toMatch(/^vvm: memory project:"alias": .*k-alias is a symbolic link, not the memory's own directory; remove the link by hand \(rm never follows one\)\n$/);
    expect((await stat(path.join(mem, "ledger.jsonl"))).isFile()).toBe(true);

    const { store } = makeStore(dir, { homeDir: HOME });
    const held = await session(store, KEY);
    const busy = await memory(dir, "rm", KEY, "--yes", "--lock-timeout", "200ms");
    expect(busy.code).toBe(1);
    // who holds it, as restore, forget and a call say it
    expect(busy.stderr).toMatch(/^vvm: memory project:"oncall:payments" is in use by another call or process \(held by pid \d+ .*\); gave up after waiting 200 ms/);
    await held.release();

    ok(await memory(dir, "rm", KEY, "--yes"));
    await expect(lstat(mem)).rejects.toThrow(/ENOENT/);
    expect(await readFile(path.join(outside, "precious.txt"), "utf8")).toBe("keep me");
    expect((await lstat(alias)).isSymbolicLink()).toBe(true);
  });
  it("an rm killed part-way leaves no memory behind: no call, ls or show reads what is left, and the next rm finishes it", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const root = path.dirname(mem);
    // stops for good once the ledger is gone, as a kill -9 at that point would
    let stopped!: () => void;
    const there = new Promise<void>((resolve) => (stopped = resolve));
    const killed: MemoryFs = {
      ...nodeFs,
      async remove(file) {
        if (path.basename(file) !== "recall.jsonl") return nodeFs.remove(file);
        stopped();
        return new Promise<void>(() => {});
      },
    };
    const opts = { who: { tool: "vvm memory rm", user: "alice" }, lockTimeoutMs: 10_000, signal: new AbortController().signal, warn: () => {}, homeDir: HOME, fs: killed };
    void removeMemory(resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME), opts);
    await there;
    // the digest is still on disk, but not as a memory (removing the files in place left digest.md, read as one)
    const [left] = (await readdir(root)).filter((n) => n.startsWith(".rm-"));
    expect(left).toMatch(/^\.rm-k-oncall_3apayments\.[0-9a-f]{12}$/);
    expect(await readFile(path.join(root, left, "digest.md"), "utf8")).toContain("VND-221");
    await expect(lstat(mem)).rejects.toThrow(/ENOENT/);
    const ls = ok(await memory(dir, "ls"));
    expect(ls.stdout).toBe(`no memories in .vvm/memory (project scope)\n(an rm of "${KEY}" was cut short and left ${left}: vvm memory rm "${KEY}" --yes finishes it)\n`);
    expect(JSON.parse(ok(await memory(dir, "ls", "--json")).stdout).removals_cut_short).toEqual([{ key: KEY, dir: left }]);
    expect((await memory(dir, "show", KEY)).code).toBe(1);
    // doctor calls it a problem (the files meant to go are still there), which --fix finishes
    const doctor = await memory(dir, "doctor");
    expect([doctor.code, doctor.stdout]).toEqual([1, `problem: an rm of "${KEY}" was cut short and left ${left}\n      --fix will finish removing it\n`]);
    await mkdir(path.join(root, left.replace(/\.[0-9a-f]+$/, ".0123456789ab")));
    expect(JSON.parse(ok(await memory(dir, "doctor", "--fix", "--json")).stdout).removals_cut_short).toEqual([
      { key: KEY, dir: left.replace(/\.[0-9a-f]+$/, ".0123456789ab"), finished: true },
      { key: KEY, dir: left, finished: true },
    ].sort((a, b) => (a.dir < b.dir ? -1 : 1)));
    expect(await readdir(root)).toEqual([]);
    await mkdir(path.join(root, left));
    await writeFile(path.join(root, left, "digest.md"), "old");
    // the next rm of the key finishes it, with nothing to ask (the memory itself is gone)
    const finished = ok(await memory(dir, "rm", KEY));
    expect(finished.stdout).toBe(`finished a removal of memory project:"${KEY}" cut short earlier (.vvm/memory/k-oncall_3apayments was already gone)\n`);
    expect(await readdir(root)).toEqual([]);
    // and an rm of a memory made again since finishes any such leftover too
    ok(await runCli(["run", "s1.vvm", "--script", "script.yaml"], { cwd: dir }));
    await mkdir(path.join(root, `.rm-k-oncall_3apayments.0123456789ab`));
    await writeFile(path.join(root, `.rm-k-oncall_3apayments.0123456789ab`, "digest.md"), "old");
    const again = ok(await memory(dir, "rm", KEY, "--yes"));
    expect(again.stdout).toMatch(/\n\(and finished a removal of it cut short earlier\)\n$/);
    expect(await readdir(root)).toEqual([]);
    const none = await memory(dir, "rm", KEY, "--yes");
    expect(none.stderr).toMatch(/^vvm: no memory project:"oncall:payments" in \.vvm\/memory/);
  });

  it("two rm finishing the same leftover at once: a subdirectory the other one removed meanwhile is no error", async () => {
    const dir = await builtProject();
    const root = path.dirname(memDir(dir, KEY));
    const left = path.join(root, ".rm-k-oncall_3apayments.0123456789ab");
    for (const sub of ["a", "b"]) {
      await mkdir(path.join(left, sub), { recursive: true });
      await writeFile(path.join(left, sub, "f"), "x");
    }
    // the other rm removes each subdirectory right after this one saw it
    const raced: MemoryFs = {
      ...nodeFs,
      async inspect(file) {
        const st = await nodeFs.inspect(file);
        if (st?.type === "dir" && ["a", "b"].includes(path.basename(file))) await rm(file, { recursive: true });
        return st;
      },
    };
    const warned: string[] = [];
    expect(await finishRemovals(resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME), (m) => warned.push(m), raced)).toBe(1);
    expect(warned).toEqual([]);
    expect((await readdir(root)).filter((n) => n.startsWith(".rm-"))).toEqual([]);
  });

  it("a folder swapped for a link between rm's check and its unlinks takes nothing outside with it", async () => {
    // the swap lands where the walk lists a folder it has checked: the aside folder itself, then a subfolder in it
    for (const swapAt of [1, 2]) {
      const dir = await builtProject();
      const mem = memDir(dir, KEY);
      const root = path.dirname(mem);
      await mkdir(path.join(mem, "sub"));
      await writeFile(path.join(mem, "sub", "notes.md"), "the memory's own");
      const outside = path.join(dir, "outside");
      await mkdir(outside);
      for (const name of ["ledger.jsonl", "digest.md", "precious.txt"]) await writeFile(path.join(outside, name), "keep me");
      let lists = 0;
      const swapping: MemoryFs = {
        ...nodeFs,
        async list(d) {
          if (++lists === swapAt) {
            const [aside] = (await readdir(root)).filter((n) => n.startsWith(".rm-"));
            const swapped = swapAt === 1 ? path.join(root, aside) : path.join(root, aside, "sub");
            await rename(swapped, path.join(dir, "moved"));
            await symlink(outside, swapped);
          }
          return nodeFs.list(d);
        },
      };
      const opts = { who: { tool: "vvm memory rm", user: "alice" }, lockTimeoutMs: 10_000, signal: new AbortController().signal, warn: () => {}, homeDir: HOME, fs: swapping };
      await removeMemory(resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME), opts).catch(() => {});
      expect(lists, `swap ${swapAt}`).toBeGreaterThanOrEqual(swapAt);
      expect((await readdir(outside)).sort(), `swap ${swapAt}`).toEqual(["digest.md", "ledger.jsonl", "precious.txt"]);
      // what was removed is what was opened: the memory's own files, wherever the swap moved them
      expect(await readdir(path.join(dir, "moved")), `swap ${swapAt}`).toEqual([]);
    }
  });

  it("two rm removing the same emptied directory at once: the one that finds it gone is no error", async () => {
    const empty = path.join(base, "emptied");
    for (let round = 0; round < 5; round++) {
      await mkdir(empty);
      // each finds a directory (unlink: EISDIR), then all but one find it gone when they remove it
      await Promise.all(Array.from({ length: 16 }, () => nodeFs.remove(empty)));
      expect(existsSync(empty)).toBe(false);
    }
  });

  it("ls shows a leftover's key on its own line, a line break in it escaped as in the memories' rows; a name no rm makes is neither listed nor touched", async () => {
    const dir = await builtProject();
    const root = path.dirname(memDir(dir, KEY));
    // a name a repository ships, to pass for a healthy memory in the listing: no rm makes such a name, so it is
    // neither listed nor touched
    const planted = ".rm-k-x\n  fake:key  9 entries  ok\n.0";
    await mkdir(path.join(root, planted));
    // and one whose name decodes to a key with a line break
    await mkdir(path.join(root, ".rm-k-a_0ab.0"));
    const ls = ok(await memory(dir, "ls"));
    expect(ls.stdout.split("\n").slice(-2)).toEqual(['(an rm of "a\\nb" was cut short and left .rm-k-a_0ab.0: vvm memory rm "a\\nb" --yes finishes it)', ""]);
    ok(await memory(dir, "doctor", "--fix"));
    expect((await readdir(root)).filter((n) => n.startsWith(".rm-"))).toEqual([planted]);
  });

  it("doctor shows a leftover's key on one line, a line break in it escaped; a name no rm makes is not a leftover", async () => {
    const dir = await builtProject();
    const root = path.dirname(memDir(dir, KEY));
    await mkdir(path.join(root, ".rm-k-x\nmemory project:\"fake\": healthy\n.0"));
    await mkdir(path.join(root, ".rm-k-a_0ab.0"));
    const doctor = await memory(dir, "doctor");
    expect(doctor.stdout.split("\n").slice(1)).toEqual(['problem: an rm of "a\\nb" was cut short and left .rm-k-a_0ab.0', "      --fix will finish removing it", ""]);
  });

  it("doctor --fix that could not finish a leftover (a link: never followed) says so, not that --fix will finish it", async () => {
    const dir = await builtProject();
    const root = path.dirname(memDir(dir, KEY));
    const outside = path.join(dir, "outside");
    await mkdir(outside);
    await symlink(outside, path.join(root, ".rm-k-oncall_3apayments.0123456789ab"));
    // without --fix: no promise that --fix will finish what no rm made
    const looked = await memory(dir, "doctor");
    expect(looked.code).toBe(1);
    expect(looked.stdout).toMatch(/\nproblem: \.rm-k-oncall_3apayments\.0123456789ab is named as an rm's leftover but is not a folder, so no rm made it\n {6}remove it by hand \(--fix finishes only what an rm left\)\n$/);
    const fixed = await memory(dir, "doctor", "--fix");
    expect(fixed.code).toBe(1);
    expect(fixed.stdout).toMatch(/\nproblem: an rm of "oncall:payments" was cut short and left \.rm-k-oncall_3apayments\.0123456789ab\n {6}--fix could not remove it: remove it by hand \(the warning on stderr says why\)\n$/);
    expect(fixed.stderr).toMatch(/^vvm: warning: .*\.rm-k-oncall_3apayments\.0123456789ab is not a directory of its own; remove it by hand \(rm never follows a link\)\n$/);
    // ls does not advise an rm that would leave it too
    expect(ok(await memory(dir, "ls")).stdout).toMatch(/\n\(\.rm-k-oncall_3apayments\.0123456789ab is named as an rm's leftover but is not a folder, so no rm made it: remove it by hand\)\n$/);
  });

  it("a leftover folder rm may not open is said as one, not as a link or as no folder", async () => {
    const dir = await mkdtemp(path.join(base, "p-"));
    const root = path.join(dir, ".vvm", "memory");
    // one leftover rm may not open at all, one with a folder inside that it may not open
    const closed = path.join(root, ".rm-k-gone.000000000001");
    const inner = path.join(root, ".rm-k-gone.000000000002", "sub");
    for (const d of [closed, inner]) await mkdir(d, { recursive: true });
    await writeFile(path.join(inner, "notes.md"), "kept");
    for (const d of [closed, inner]) await chmod(d, 0);
    const argv = [process.execPath, "--import", import.meta.resolve("tsx"), path.join(ROOT, "src/main.ts"), "memory", "rm", "gone"];
    // root opens any folder: the child runs without that power (CAP_DAC_OVERRIDE)
    const cmd = process.getuid?.() === 0 ? ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", ...argv] : argv;
    const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd: dir, env: testEnv({ HOME }), encoding: "utf8" });
    for (const d of [closed, inner]) await chmod(d, 0o700);
    expect(r.status).toBe(1);
    expect(r.stderr.split("\n").sort()).toEqual([
      "",
      `vvm: no memory project:"gone" in .vvm/memory (give the project with --dir or --program)`,
      `vvm: warning: ${closed} is a folder rm may not open (permission denied); remove it by hand`,
      `vvm: warning: ${inner} is a folder rm may not open (permission denied); removed nothing more (remove it by hand)`,
    ]);
    expect(await readdir(inner)).toEqual(["notes.md"]);
  });

  it("a memory an rm takes aside while another command reads it is no memory, not one that 'cannot be read (ENOENT)'", async () => {
    const dir = await builtProject();
    const loc = resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME);
    // the other rm's rename lands between finding the directory and listing it
    const vanishing: MemoryFs = {
      ...nodeFs,
      async list(d) {
        if (d === loc.dir) await rm(d, { recursive: true });
        return nodeFs.list(d);
      },
    };
    expect(await inspectMemory(loc, { fs: vanishing, signal: new AbortController().signal })).toBeNull();
  });

  it("a tree nested deeper than any rm enters is left with a word, not walked for minutes", async () => {
    const dir = await builtProject();
    const root = path.dirname(memDir(dir, KEY));
    const left = path.join(root, ".rm-k-oncall_3apayments.0123456789ab");
    await mkdir(path.join(left, ...Array<string>(40).fill("d")), { recursive: true });
    const warned: string[] = [];
    expect(await finishRemovals(resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME), (m) => warned.push(m))).toBe(0);
    expect(warned).toEqual([`${path.join(left, "d")} holds folders more than 32 deep; removed nothing more (remove it by hand)`]);
    expect(existsSync(left)).toBe(true);
    // in the memory itself: the memory is removed all the same (taken aside first), and what is left is said
    await rm(left, { recursive: true });
    await mkdir(path.join(memDir(dir, KEY), ...Array<string>(40).fill("d")), { recursive: true });
    const res = await memory(dir, "rm", KEY, "--yes");
    expect([res.code, res.stdout.startsWith('removed memory project:"oncall:payments" ')]).toEqual([0, true]);
    expect(res.stderr).toMatch(/^vvm: warning: .*\.rm-k-oncall_3apayments\.[0-9a-f]{12}\/d holds folders more than 32 deep; removed nothing more \(remove it by hand\)\n$/);
    expect(existsSync(memDir(dir, KEY))).toBe(false);
  });

  it("a leftover whose paths are longer than the system takes is removed all the same: each folder is opened inside the one before", async () => {
    const dir = await builtProject();
    const root = path.dirname(memDir(dir, KEY));
    const left = path.join(root, ".rm-k-oncall_3apayments.0123456789ab");
    // 20 folders of 250 characters: a path past the 4,096 bytes the system takes, well within 32 deep (made a
    // folder at a time, each from the one before)
    await mkdir(left);
    const python = (code: string) => execFileSync("python3", ["-c", code, left]);
    python("import os, sys\nos.chdir(sys.argv[1])\nfor i in range(20):\n    os.mkdir('d' * 250)\n    os.chdir('d' * 250)");
    try {
      const res = await memory(dir, "rm", KEY, "--yes");
      noStack(res);
      expect([res.code, res.stderr]).toEqual([0, ""]);
      expect(res.stdout).toMatch(/^removed memory project:"oncall:payments" .*\n\(and finished a removal of it cut short earlier\)\n$/);
      expect(await readdir(root)).toEqual([]);
    } finally {
      // (what the test folder's removal cannot do either)
      if (existsSync(left)) python("import shutil, sys\nshutil.rmtree(sys.argv[1])");
    }
  });

  it("a leftover it must not enter (a link, a file) is left, said, and hides neither the memory's removal nor the other leftovers", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const root = path.dirname(mem);
    const outside = path.join(dir, "outside");
    await mkdir(outside);
    await writeFile(path.join(outside, "precious.txt"), "keep me");
    // planted by a repository: sorted before the real leftover
    await symlink(outside, path.join(root, ".rm-k-oncall_3apayments.000000000000"));
    await mkdir(path.join(root, ".rm-k-oncall_3apayments.111111111111"));
    await writeFile(path.join(root, ".rm-k-oncall_3apayments.111111111111", "digest.md"), "old");
    const res = ok(await memory(dir, "rm", KEY, "--yes"));
    expect(res.stdout).toMatch(/^removed memory project:"oncall:payments" .*\n\(and finished a removal of it cut short earlier\)\n$/);
    expect(res.stderr).toMatch(/^vvm: warning: .*\.rm-k-oncall_3apayments\.000000000000 is not a directory of its own; remove it by hand \(rm never follows a link\)\n$/);
    await expect(lstat(mem)).rejects.toThrow(/ENOENT/);
    expect(await readdir(root)).toEqual([".rm-k-oncall_3apayments.000000000000"]);
    expect(await readFile(path.join(outside, "precious.txt"), "utf8")).toBe("keep me");
    // with nothing else left to remove: the same word, and no memory
    const again = await memory(dir, "rm", KEY, "--yes");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^vvm: warning: .* is not a directory of its own; .*\nvvm: no memory project:"oncall:payments" in \.vvm\/memory/);
    noStack(again);
  });
});

describe("vvm memory doctor", () => {
  it("a healthy memory built by runs: healthy, exit 0, and --fix writes nothing", async () => {
    const dir = await builtProject();
    const res = ok(await memory(dir, "doctor", KEY));
    expect(res.stdout).toBe('memory project:"oncall:payments" (.vvm/memory/k-oncall_3apayments): healthy\n');
    const snapshot = await filesUnder(path.join(dir, ".vvm"));
    ok(await memory(dir, "doctor", "--fix"));
    expect(await filesUnder(path.join(dir, ".vvm"))).toEqual(snapshot);
    const json = JSON.parse(ok(await memory(dir, "doctor", "--json")).stdout);
    expect(json).toMatchObject({ scope: "project", healthy: true, memories: [{ key: KEY, entries: 3, healthy: true, findings: [] }] });
  });

  it("--fix tidies the notes that carry a fix (a replaced digest.md past its time, a recall index signed with another key) without a ledger entry, and waits for no call over them", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    // a teammate's run signs the index with its runtime's key, and replaces digest.md (kept as a .prev file)
    await writeFile(path.join(dir, "s4.vvm"), program(KEY, "Second shift: write the handoff."));
    ok(await runCliAnyHome(["run", "s4.vvm", "--script", "script.yaml"], { cwd: dir, env: { HOME: path.join(base, "teammate") } }));
    const old = new Date(Date.now() - 60_000);
    for (const f of (await readdir(mem)).filter((n) => PREV.test(n))) await utimes(path.join(mem, f), old, old);
    const found = JSON.parse(ok(await memory(dir, "doctor", KEY, "--json")).stdout);
    const kinds = found.findings.map((f: { code: string; severity: string; fix: string | null }) => `${f.code} ${f.severity} ${f.fix !== null}`);
    expect(new Set(kinds)).toEqual(new Set(["recall note true", "replaced note true"]));
    // a call that holds the lock tidies them itself: --fix does not wait for it
    const lock = path.join(mem, "lock");
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: (await import("node:os")).hostname(), since: new Date().toISOString() }));
    const waited = ok(await memory(dir, "doctor", KEY, "--fix", "--lock-timeout", "200ms"));
    expect(waited.stderr).toBe("");
    expect(waited.stdout).not.toContain("tidied");
    await rm(lock);
    const entries = (await ledger(dir, KEY)).entries.length;
    const res = ok(await memory(dir, "doctor", KEY, "--fix"));
    expect(res.stdout).toMatch(/^memory project:"oncall:payments" \(\.vvm\/memory\/k-oncall_3apayments\): healthy\n {2}tidied (\d+) \(notes: temporary or derived files, as the next continue call would; not recorded\):\n/);
    expect(Number(/tidied (\d+)/.exec(res.stdout)![1])).toBe(kinds.length);
    expect((await readdir(mem)).sort()).toEqual(["digest.md", "ledger.jsonl", "meta.json", "recall.jsonl"]);
    expect((await ledger(dir, KEY)).entries).toHaveLength(entries);
    expect(JSON.parse(ok(await memory(dir, "doctor", KEY, "--json")).stdout)).toMatchObject({ healthy: true, findings: [] });
  });

  it("a ledger with thousands of lines that are not entries: show gives one warning, doctor names ten and counts the rest", async () => {
    const dir = await builtProject();
    const file = path.join(memDir(dir, KEY), "ledger.jsonl");
    const at = (await readFile(file)).length;
    await appendFile(file, "not an entry\n".repeat(5000));
    const show = await memory(dir, "show", KEY);
    expect(show.stdout.match(/unreadable or out-of-sequence/g)).toHaveLength(1);
    expect(show.stdout).toContain(`ledger.jsonl has 5000 unreadable or out-of-sequence lines, at bytes ${at}, ${at + 13}, ${at + 26}, ${at + 39}, ${at + 52}, …; calls skip them`);
    const doctor = await memory(dir, "doctor", KEY);
    expect(doctor.stdout.match(/is not a ledger entry/g)).toHaveLength(10);
    expect(doctor.stdout).toContain("  problem: ledger.jsonl: 4990 more lines are skipped as above (5000 in all)\n");
  });

  it("reports a damaged memory; --fix repairs what can be repaired under the lock and records it; the rest is left to a person", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    const outside = path.join(dir, "outside.json");
    await writeFile(outside, '{"not": "meta"}\n');
    // a hand edit of the ledger (a new file, as sed -i makes) with a line that is not an entry
    const lines = (await readFile(path.join(mem, "ledger.jsonl"), "utf8")).split("\n");
    lines.splice(1, 0, "this line is not JSON");
    await writeFile(path.join(mem, "ledger.jsonl.new"), lines.join("\n"));
    await rm(path.join(mem, "ledger.jsonl"));
    await writeFile(path.join(mem, "ledger.jsonl"), lines.join("\n"));
    await rm(path.join(mem, "ledger.jsonl.new"));
    // a killed writer: a torn tail, a temporary file, its lock
    await appendFile(path.join(mem, "ledger.jsonl"), '{"v":1,"seq":4,"kind":"pat');
    await writeFile(path.join(mem, "digest.md.0123456789abcdef01.tmp"), "half a digest");
    await writeFile(path.join(mem, "lock"), JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import("node:os")).hostname(), since: "2026-01-01T00:00:00Z" }));
    // a person's edit, and meta.json replaced by a link out of the memory
    await appendFile(path.join(mem, "digest.md"), "- a person's note\n");
    await rm(path.join(mem, "meta.json"));
    await symlink(outside, path.join(mem, "meta.json"));
    const old = new Date(Date.now() - 60_000);
    await utimes(path.join(mem, "lock"), old, old);

    const res = await memory(dir, "doctor", KEY);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/^memory project:"oncall:payments" \(\.vvm\/memory\/k-oncall_3apayments\): 7 problems\n/);
    const codes = JSON.parse((await memory(dir, "doctor", KEY, "--json")).stdout).findings.map((f: { code: string; fix: string | null }) => [f.code, f.fix !== null]);
    expect(codes.sort()).toEqual([
      ["digest-edited", true],
      ["ledger-line", false],
      ["lock-stale", true],
      ["not-regular", true],
      ["orphan", true],
      ["recall", true],
      ["torn-tail", true],
    ]);
    expect(res.stdout).toContain("  problem: ledger.jsonl: the line at byte ");
    expect(res.stdout).toContain("      fix by hand\n");

    const fixed = await memory(dir, "doctor", KEY, "--fix");
    expect(fixed.code).toBe(1); // the unreadable line is a person's to mend
    expect(fixed.stdout).toMatch(/^memory project:"oncall:payments" \(\.vvm\/memory\/k-oncall_3apayments\): 1 problem\n {2}fixed 6 \(recorded in the ledger as entry 6\):\n/);
    expect(await readFile(outside, "utf8")).toBe('{"not": "meta"}\n');
    expect((await lstat(path.join(mem, "meta.json"))).isFile()).toBe(true);
    expect((await readdir(mem)).filter((f) => !PREV.test(f)).sort()).toEqual(["digest.md", "ledger.jsonl", "meta.json", "recall.jsonl"]);
    const { entries, badLines, tornBytes } = await ledger(dir, KEY);
    expect({ bad: badLines.length, tornBytes }).toEqual({ bad: 1, tornBytes: 0 });
    expect(entries.slice(3).map((e) => [e.seq, e.kind, toolProvenance(e.provenance)?.tool])).toEqual([
      [4, "repair", "vvm memory doctor"],
      [5, "external_edit", "vvm memory doctor"],
      [6, "repair", "vvm memory doctor"],
    ]);
    expect(entries[5].reason).toMatch(/^vvm memory doctor --fix: a stale lock: pid \d+ on .* no longer runs; meta\.json is a symbolic link; .*ledger\.jsonl ends with 26 bytes of an incomplete line.*; digest\.md\.0123456789abcdef01\.tmp was left by an interrupted write; recall\.jsonl does not match ledger\.jsonl/);

    // the person mends the ledger; doctor --fix rebuilds the index the edit made stale, and all is well
    const mended = (await readFile(path.join(mem, "ledger.jsonl"), "utf8")).replace("this line is not JSON\n", "");
    await rm(path.join(mem, "ledger.jsonl"));
    await writeFile(path.join(mem, "ledger.jsonl"), mended);
    ok(await memory(dir, "doctor", KEY, "--fix"));
    expect(JSON.parse(ok(await memory(dir, "doctor", "--json")).stdout).memories[0]).toMatchObject({ healthy: true });
  });

  /**
   * A call of this process half-way through its commit: its ledger line written, its new digest.md held back
   * until doctor (through `opts.fs`) has looked at the memory `looks` times (each look ends at recall.jsonl).
   */
  async function committingWhileDoctorLooks(dir: string, looks: number) {
    let open!: () => void;
    const looked = new Promise<void>((r) => (open = r));
    const paused: MemoryFs = {
      ...nodeFs,
      async writeAtomic(file, data, beforeRename, opts) {
        if (path.basename(file) === "digest.md") await looked;
        return nodeFs.writeAtomic(file, data, beforeRename, opts);
      },
    };
    const watching: MemoryFs = {
      ...nodeFs,
      async identity(file) {
        if (path.basename(file) === "recall.jsonl" && --looks === 0) open();
        return nodeFs.identity(file);
      },
    };
    const { store } = makeStore(dir, { homeDir: HOME, fs: paused });
    const held = await session(store, KEY);
    const committing = held.complete(patchReply({ digest: "## Open\n- nothing\n", retain: ["B fourth shift: quiet"] })).then(() => store.close());
    while ((await ledger(dir, KEY)).entries.length < 4) await new Promise((r) => setTimeout(r, 5));
    const opts = { who: { tool: "vvm memory doctor", user: "alice" }, lockTimeoutMs: 10_000, signal: new AbortController().signal, warn: () => {}, homeDir: HOME, fs: watching };
    return { loc: resolveBinding(obj({ scope: "project", key: KEY }), dir, HOME), opts, committing };
  }

  it("while a call commits, doctor looks again until the commit is done: a half-written commit is not reported as damage", async () => {
    const dir = await builtProject();
    const { loc, opts, committing } = await committingWhileDoctorLooks(dir, 1);
    const doctored = await doctorMemory(loc, false, opts);
    await committing;
    expect(doctored.after.findings).toEqual([]);
  });

  it("--fix while a call commits: what the call had half written when doctor looked is not recorded as repaired", async () => {
    const dir = await builtProject();
    // the commit stays half-way through for as long as doctor looks again without the lock (about a second)
    const { loc, opts, committing } = await committingWhileDoctorLooks(dir, ATTEMPTS);
    const doctored = await doctorMemory(loc, true, opts);
    await committing;
    expect(doctored.before.findings.filter((f) => f.problem).map((f) => f.code)).toEqual(["digest-interrupted", "meta-stale"]);
    // under the lock, the call had completed its update: nothing was repaired, and no repair entry says otherwise
    expect({ fixed: doctored.fixed, entry: doctored.entry, after: doctored.after.findings }).toEqual({ fixed: [], entry: null, after: [] });
    expect((await ledger(dir, KEY)).entries.map((e) => e.kind)).toEqual(["patch", "patch", "patch", "patch"]);
  });

  it("--fix waiting for the lock says so on stderr while it waits, as restore and forget do, and gives up naming the holder", async () => {
    const dir = await builtProject();
    await writeFile(path.join(memDir(dir, KEY), "meta.json"), "{\n");
    // a live holder (this process, as far as the lock says)
    await writeFile(path.join(memDir(dir, KEY), "lock"), JSON.stringify({ pid: process.pid, host: (await import("node:os")).hostname(), since: new Date().toISOString() }));
    const res = await memory(dir, "doctor", KEY, "--fix", "--lock-timeout", "1500ms");
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^vvm: warning: memory project:"oncall:payments": waiting for the memory lock \(held by pid \d+ on [^)]+\)\n$/);
    expect(res.stdout).not.toContain("the store: waiting");
    expect(res.stdout).toMatch(/\n {2}--fix could not run: memory project:"oncall:payments" is in use by another call or process \(held by pid \d+ on [^)]+\); gave up after waiting 1500 ms \(--lock-timeout\)\n {2}problem: meta\.json is not valid/);
  });

  it("oversized and linked memory files are a person's to fix; a held lock is a note; a missing key is exit 1", async () => {
    const dir = await builtProject();
    const mem = memDir(dir, KEY);
    await writeFile(path.join(mem, "digest.md"), "x".repeat(1024 * 1024 + 1));
    const { store } = makeStore(dir, { homeDir: HOME });
    const held = await session(store, KEY);
    try {
      const json = JSON.parse((await memory(dir, "doctor", KEY, "--json")).stdout);
      expect(json.findings.map((f: { code: string; severity: string; fix: string | null }) => [f.code, f.severity, f.fix])).toEqual([
        ["oversized", "problem", null],
        // the call holding the lock recorded the edit; meta.json is written when it completes
        ["meta-stale", "problem", "write meta.json afresh"],
        ["lock-held", "note", null],
      ]);
    } finally {
      await held.release();
    }
    await rm(path.join(mem, "ledger.jsonl"));
    await symlink(path.join(dir, "script.yaml"), path.join(mem, "ledger.jsonl"));
    const res = await memory(dir, "doctor", KEY, "--fix");
    expect(res.code).toBe(1);
    expect(res.stdout).toContain("problem: ledger.jsonl is a symbolic link; it is never read or written through, so every continue call on this memory fails\n      fix by hand\n");
    noStack(res);
    const missing = await memory(dir, "doctor", "nope");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^vvm: no memory project:"nope"/);
    // every memory under the root: one that is a link out of the root is reported, never entered
    const elsewhere = path.join(dir, "elsewhere");
    await mkdir(elsewhere);
    await symlink(elsewhere, path.join(dir, ".vvm", "memory", "k-planted"));
    const all = await memory(dir, "doctor", "--fix", "--json");
    expect(all.code).toBe(1);
    const json = JSON.parse(all.stdout);
    expect(json.memories.map((m: { key: string }) => m.key)).toEqual([KEY]);
    expect(json.unreadable).toEqual([{ dir: path.join(dir, ".vvm", "memory", "k-planted"), problem: expect.stringMatching(/k-planted resolves to .*elsewhere, outside .* \(symbolic link\?\)$/) }]);
    expect(await readdir(elsewhere)).toEqual([]);
  });
});

describe("ledgers with the new kinds", () => {
  it("a continue call reads restore, forget and unknown kinds without a warning, and numbers on", async () => {
    const dir = await builtProject();
    ok(await memory(dir, "restore", KEY, "1"));
    ok(await memory(dir, "forget", KEY, "--fact", "3"));
    const mem = memDir(dir, KEY);
    await appendFile(path.join(mem, "ledger.jsonl"), JSON.stringify({ v: 1, ts: new Date().toISOString(), seq: 6, kind: "annotate", retain: [], digest_before: sha256(V1), digest_after: sha256(V1), provenance: null, note: "from a later release" }) + "\n");
    const run = ok(await runCli(["run", "s3.vvm", "--script", "script.yaml"], { cwd: dir }));
    expect(run.stderr).not.toMatch(/warning/);
    const { entries } = await ledger(dir, KEY);
    expect(entries.map((e) => [e.seq, e.kind])).toEqual([[1, "patch"], [2, "patch"], [3, "patch"], [4, "restore"], [5, "forget"], [6, "annotate"], [7, "patch"]]);
    // the fact retained again by entry 7 is a new fact: forgetting entry 3's did not forget it
    expect(JSON.parse(ok(await memory(dir, "show", KEY, "--json")).stdout).facts.shown.map((f: { seq: number }) => f.seq)).toEqual([1, 1, 2, 2, 7]);
    expect(ok(await memory(dir, "log", KEY, "--kind", "forget")).stdout).toMatch(/^\[5\] forget .*forgot 1 fact: #3:0\n$/);
  });
});

describe("forget's selection", () => {
  it("names a fact that is not there once, however often the command line names it", () => {
    const all = [{ seq: 1, index: 0, ts: "t", text: "W one", forgotten: false }];
    const { missing } = selectFacts(all, { facts: [{ seq: 4, index: null }, { seq: 4, index: null }, { seq: 1, index: 3 }, { seq: 1, index: 3 }], match: null });
    expect(missing).toEqual(["entry 4 retained no fact", "entry 1 has no retained fact 3"]);
    // past the ledger's end: said as such, not as an entry that retained nothing
    expect(selectFacts(all, { facts: [{ seq: 12, index: 0 }, { seq: 4, index: null }], match: null }, 5).missing).toEqual(["there is no entry 12 (the last is 5)", "entry 4 retained no fact"]);
  });
});
