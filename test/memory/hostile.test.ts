// A memory directory is untrusted input: what a cloned repository, a concurrent process or a person's
// editor can put there must never make the runtime write outside the directory, through a link, or
// over a person's save. Each test here reproduces a defect of an earlier release.
import { closeSync, existsSync, ftruncateSync, linkSync, lstatSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync, writeSync } from "node:fs";
import { cp, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nodeFs, type MemoryFs } from "../../runtime/memory/fsio.ts";
import { sha256 } from "../../runtime/memory/keys.ts";
import type { MemorySession } from "../../runtime/memory-port.ts";
import { extractBlocks } from "../../runtime/memory/patch.ts";
import { obj } from "../../runtime/values.ts";
import { collect, runCli, spawnCli } from "../support/cli.ts";
import { errorOf } from "../support/errors.ts";
import { binding, call, digestText, ledger, makeStore, memDir, patchLine, patchReply, prov, session, tempDir, plainFacts } from "./helpers.ts";

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

const entryLine = (seq: number, extra: Record<string, unknown>) =>
  JSON.stringify({ v: 1, ts: "t", seq, kind: "patch", retain: [], digest_before: sha256(""), digest_after: sha256(""), provenance: null, ...extra }) + "\n";

describe("a cloned repository's memory directory", () => {
  it("cannot make roll-forward write through a digest.md link (the .git/config takeover)", async () => {
    const victim = path.join(dir, ".git", "config");
    await mkdir(path.dirname(victim), { recursive: true });
    await writeFile(victim, "[core]\n\tbare = false\n");
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    await symlink("../../../.git/config", path.join(mem, "digest.md"));
    // an "interrupted patch" whose digest_before is the hash the store uses for a digest.md it cannot use
    const evil = "[core]\n\tfsmonitor = touch /tmp/pwned\n";
    await writeFile(path.join(mem, "ledger.jsonl"), entryLine(1, { digest: evil, digest_before: sha256("digest.md is not a regular file"), digest_after: sha256(evil) }));
    await writeFile(path.join(dir, "main.vvm"), `agent a(model="haiku", memory={ scope: "project", key: "k" })\nr = @a \`hi\`(())\nexport r\n`);
    const res = await runCli(["run", "main.vvm"], { cwd: dir, env: { HOME: dir } });
    expect(res.code).toBe(0);
    expect(await readFile(victim, "utf8")).toBe("[core]\n\tbare = false\n");
    expect(lstatSync(path.join(mem, "digest.md")).isSymbolicLink()).toBe(true);
    expect(res.stderr).toMatch(/digest.md is not a regular file/);
  });

  it("cannot get an interrupted patch rolled forward when its digest would be refused as a patch", async () => {
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    const secret = `deploy token ${["ghp", "_", "aB3dE5gH7jK9mN2pQ4sT6vW8yZ1aB3dE5gH7"].join("")}\n`;
    await writeFile(path.join(mem, "ledger.jsonl"), entryLine(1, { digest: secret, digest_before: sha256(""), digest_after: sha256(secret) }));
    const { store } = makeStore(dir);
    const s = await session(store, "k");
    await s.release();
    expect(await digestText(dir, "k")).toBeNull();
  });

  it("refuses a digest.md that is a link on every write path, and names the file", async () => {
    const outside = path.join(dir, "outside.txt");
    await writeFile(outside, "keep me");
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "first" }));
    const digest = path.join(memDir(dir, "k"), "digest.md");
    rmSync(digest);
    symlinkSync(outside, digest);
    const again = makeStore(dir);
    expect(await call(again.store, "k", patchReply({ digest: "second", retain: ["r"] }))).toBe("Visible answer.");
    expect(await readFile(outside, "utf8")).toBe("keep me");
    expect(again.warnings.join("\n")).toMatch(/digest.md is not a regular file/);
    // the retain item is still kept
    expect((await ledger(dir, "k")).entries.at(-1)?.retain).toEqual(["r"]);
  });

  it("refuses memory files with other hard links: nothing outside is read into a prompt or written", async () => {
    const outside = path.join(dir, "private.txt");
    await writeFile(outside, "my private notes\n");
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    linkSync(outside, path.join(mem, "digest.md"));
    const { store, warnings } = makeStore(dir);
    const s = await session(store, "k");
    expect(s.context).not.toContain("my private notes");
    await s.complete(patchReply({ digest: "new", retain: ["r"] }));
    expect(await readFile(outside, "utf8")).toBe("my private notes\n");
    expect(warnings.join("\n")).toMatch(/digest.md has other hard links/);
    rmSync(path.join(mem, "digest.md"));
    rmSync(path.join(mem, "ledger.jsonl"));
    linkSync(outside, path.join(mem, "ledger.jsonl"));
    const opened = await store.open(binding("k"), prov(), new AbortController().signal);
    expect(JSON.stringify([...((opened as Map<string, Map<string, unknown>>).get("error") ?? new Map())])).toMatch(/ledger\.jsonl has other hard links/);
    expect(await readFile(outside, "utf8")).toBe("my private notes\n");
  });

  it("a ledger.jsonl that is a directory gives an error naming the file", async () => {
    await mkdir(path.join(memDir(dir, "k"), "ledger.jsonl"), { recursive: true });
    const { store } = makeStore(dir);
    const opened = await store.open(binding("k"), prov(), new AbortController().signal);
    expect(opened).toBeInstanceOf(Map);
    expect(JSON.stringify([...((opened as Map<string, Map<string, unknown>>).get("error") ?? new Map())])).toMatch(/ledger\.jsonl is not a regular file/);
  });

  it("planted temp-file links clobber nothing, and orphans of killed writers are removed under the lock", async () => {
    const victim = path.join(dir, "victim.txt");
    await writeFile(victim, "untouched");
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    // the names earlier releases used: meta.json.<pid>.<n>.tmp and write-file-atomic's digest.md.<n>
    for (let n = 0; n < 400; n++) await symlink(victim, path.join(mem, `meta.json.${process.pid}.${n}.tmp`));
    await writeFile(path.join(mem, "digest.md.1234567"), "an old digest left by a killed writer");
    await writeFile(path.join(mem, `digest.md.${"0a".repeat(9)}.tmp`), "half-written");
    await writeFile(path.join(mem, "notes.txt"), "a person's file");
    await writeFile(path.join(mem, "digest.md.bak"), "a person's backup");
    const { store } = makeStore(dir);
    for (let i = 0; i < 3; i++) await call(store, "k", patchReply({ digest: `d${i}`, retain: [`r${i}`] }));
    expect(await readFile(victim, "utf8")).toBe("untouched");
    expect(lstatSync(path.join(mem, "meta.json")).isFile()).toBe(true);
    const names = await readdir(mem);
    // the digests the commits replaced keep a second name for a few seconds
    expect(names.filter((n) => n.endsWith(".prev")).every((n) => /^digest\.md\.[0-9a-f]{16}\.[0-9a-f]{8}\.prev$/.test(n))).toBe(true);
    expect(names.filter((n) => !n.endsWith(".prev")).sort()).toEqual(["digest.md", "digest.md.bak", "ledger.jsonl", "meta.json", "notes.txt", "recall.jsonl"]);
  });

  it("cannot point the project's .vvm or .vvm/memory at the user's own memories: refused, nothing read, nothing made there", async () => {
    const { store } = makeStore(dir);
    const home = path.join(dir, "home");
    // the user's own memory, made as any user-scope call makes it
    const mine = (await store.open(binding("prefs", "user"), prov(), new AbortController().signal)) as MemorySession;
    await mine.complete(patchReply({ digest: "## Prefs\n- my own note\n" }));
    const userRoot = path.join(home, ".vvm", "memory");
    const before = await readdir(userRoot);
    for (const [link, target] of [[".vvm", path.join(home, ".vvm")], [path.join(".vvm", "memory"), userRoot]] as const) {
      rmSync(path.join(dir, ".vvm"), { recursive: true, force: true });
      if (link !== ".vvm") await mkdir(path.join(dir, ".vvm"));
      symlinkSync(target, path.join(dir, link));
      for (const [key, mode] of [["prefs", "continue"], ["prefs", "dry_run"], ["new-key", "continue"]] as const) {
        const out = await store.open(binding(key), prov(mode), new AbortController().signal);
        expect(errorOf(out as never), `${link} ${key} ${mode}`).toMatchObject({ kind: "rejected" });
        expect(errorOf(out as never)!.message).toContain(`${path.join(dir, link)} is a symbolic link: a project's memories must be in a real directory`);
      }
      for (const args of [["show", "prefs"], ["ls"], ["doctor"]]) {
        const r = await runCli(["memory", ...args], { cwd: dir, env: { HOME: home } });
        expect(r.code, `${args.join(" ")}: ${r.stdout}`).not.toBe(0);
        expect(r.stdout + r.stderr, args.join(" ")).not.toMatch(/my own note|prefs/);
        expect(r.stderr, args.join(" ")).toContain("is a symbolic link: a project's memories must be in a real directory");
      }
    }
    expect(await readdir(userRoot)).toEqual(before);
    expect(await readFile(path.join(userRoot, "k-prefs", "digest.md"), "utf8")).toBe("## Prefs\n- my own note\n");
  });

  it("refuses to commit when the directory is swapped for a link during the call", async () => {
    const outside = path.join(dir, "elsewhere");
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "one" }));
    const s = await session(store, "k");
    const mem = memDir(dir, "k");
    // a faithful copy elsewhere, so nothing but the directory's real path tells the two apart
    await cp(mem, outside, { recursive: true });
    const before = await readFile(path.join(outside, "ledger.jsonl"), "utf8");
    renameSync(mem, path.join(dir, "moved"));
    symlinkSync(outside, mem);
    expect(await s.complete(patchReply({ digest: "two", retain: ["x"] }))).toBe("Visible answer.");
    expect(await readFile(path.join(outside, "digest.md"), "utf8")).toBe("one");
    expect(await readFile(path.join(outside, "ledger.jsonl"), "utf8")).toBe(before);
    // the lock file moved away with the directory, and the real path changed: either refuses
    expect(warnings.join("\n")).toMatch(/(memory lock was lost|resolves to .*elsewhere).*patch not applied/);
  });
});

describe("a store confined to a folder (vvm test)", () => {
  it("refuses a memory outside it, by its path or through a link inside it, before anything is made", async () => {
    const folder = path.join(dir, "test");
    const outside = path.join(dir, "real");
    await mkdir(path.join(folder, "project"), { recursive: true });
    await mkdir(outside);
    symlinkSync(outside, path.join(folder, "project", "linked"));
    const { store } = makeStore(path.join(folder, "project"), { homeDir: path.join(folder, "home"), confine: folder });
    const open = (memory: Record<string, string>) => store.open(obj(memory), prov("continue"), new AbortController().signal);
    for (const p of [outside, "linked/mem", "../../real"]) {
      const out = await open({ scope: "path", key: "team", path: p });
      expect(errorOf(out as never)?.message, p).toMatch(/k-team is outside .*\/test, the only place this run may keep memory/);
    }
    expect(await readdir(outside)).toEqual([]);
    // inside the folder: its project, its HOME, and a path inside it
    const inside: Record<string, string>[] = [{ scope: "project", key: "a" }, { scope: "user", key: "b" }, { scope: "path", key: "c", path: "../elsewhere" }];
    for (const memory of inside) {
      const s = (await open(memory)) as MemorySession;
      expect(errorOf(s as never), JSON.stringify(memory)).toBeNull();
      await s.release();
    }
    await store.close();
  });
});

describe("a person's save while a patch commits", () => {
  /** A file layer that runs `save` at one moment of the digest commit. */
  const saving = (when: "before-check" | "after-check", save: () => void): MemoryFs => ({
    ...nodeFs,
    async append(file, data) {
      await nodeFs.append(file, data);
      if (when === "before-check" && data.includes('"kind":"patch"') && data.includes('"digest":')) save();
    },
    writeAtomic(file, data, beforeRename) {
      if (when !== "after-check" || !file.endsWith("digest.md")) return nodeFs.writeAtomic(file, data, beforeRename);
      return nodeFs.writeAtomic(file, data, async () => {
        await beforeRename?.();
        save();
      });
    },
  });

  it("a save after the re-read and before the final check wins; the patch keeps only its facts", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "model v1" }));
    const file = path.join(memDir(dir, "k"), "digest.md");
    let saved = false;
    const edited = makeStore(dir, { fs: saving("before-check", () => !saved && ((saved = true), writeFileSync(file, "person's save\n"))) });
    await call(edited.store, "k", patchReply({ digest: "model v2", retain: ["fact"] }));
    expect(readFileSync(file, "utf8")).toBe("person's save\n");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "external_edit", "patch"]);
    expect(entries[1].digest).toBe("person's save\n");
    expect(entries[2].digest).toBeUndefined();
    expect(entries[2].retain).toEqual(["fact"]);
    expect(entries[2].reason).toMatch(/edited by hand/);
    for (let i = 1; i < entries.length; i++) expect(entries[i].digest_before).toBe(entries[i - 1].digest_after);
  });

  it("a save into the old file after the final check is put back and recorded", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "model v1" }));
    const file = path.join(memDir(dir, "k"), "digest.md");
    // an editor writing in place through the file it opened before the rename
    let saved = false;
    const edited = makeStore(dir, { fs: saving("after-check", () => !saved && ((saved = true), writeFileSync(file, "late save\n"))) });
    await call(edited.store, "k", patchReply({ digest: "model v2", retain: ["fact"] }));
    expect(readFileSync(file, "utf8")).toBe("late save\n");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "patch", "external_edit"]);
    expect(entries[1].digest).toBe("model v2");
    expect(entries[2].digest).toBe("late save\n");
    expect(entries[2].reason).toMatch(/saved by hand while entry 2 was committed/);
    for (let i = 1; i < entries.length; i++) expect(entries[i].digest_before).toBe(entries[i - 1].digest_after);
    expect(edited.warnings.join("\n")).toMatch(/the save is kept/);
    // the next call sees no further edit
    const next = makeStore(dir);
    await call(next.store, "k", patchReply({ retain: ["more"] }));
    expect((await ledger(dir, "k")).entries.map((e) => e.kind)).toEqual(["patch", "patch", "external_edit", "patch"]);
  });
});

describe("the file a commit replaced", () => {
  it("a save into it after the call is kept and recorded by the next call", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "model v1" }));
    const file = path.join(memDir(dir, "k"), "digest.md");
    // an editor that opened digest.md before the next commit, and writes after the call has finished
    const fd = openSync(file, "r+");
    await call(store, "k", patchReply({ digest: "model v2" }));
    writeSync(fd, "late save\n", 0);
    ftruncateSync(fd, "late save\n".length);
    closeSync(fd);
    const next = makeStore(dir);
    const s = await session(next.store, "k");
    expect(s.context).toContain("## Digest\nlate save");
    await s.release();
    expect(readFileSync(file, "utf8")).toBe("late save\n");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "patch", "external_edit"]);
    expect(entries[2].digest).toBe("late save\n");
    for (let i = 1; i < entries.length; i++) expect(entries[i].digest_before).toBe(entries[i - 1].digest_after);
    // recorded once: a later call finds nothing new
    await (await session(makeStore(dir).store, "k")).release();
    expect((await ledger(dir, "k")).entries).toHaveLength(3);
  });

  it("a burst of commits keeps only the newest few; an older one saved into is still checked once", async () => {
    const { store } = makeStore(dir);
    const mem = memDir(dir, "k");
    const prevs = async () => (await readdir(mem)).filter((n) => n.endsWith(".prev"));
    for (let i = 1; i <= 12; i++) await call(store, "k", patchReply({ digest: `model v${i}` }));
    // four kept by the last call's check, plus the one its own commit made
    expect(await prevs()).toHaveLength(5);
    expect((await prevs()).some((n) => n.startsWith(`digest.md.${sha256("model v11").slice(0, 16)}.`))).toBe(true);
    // a late save into an older one, dated so it sorts last: the next call keeps it although that file is past the limit
    const oldest = (await prevs()).find((n) => !n.startsWith(`digest.md.${sha256("model v11").slice(0, 16)}.`))!;
    const t = new Date(Date.now() - 60_000);
    writeFileSync(path.join(mem, oldest), "late save\n");
    utimesSync(path.join(mem, oldest), t, t);
    await call(store, "k", patchReply({ retain: ["B one more"] }));
    expect(readFileSync(path.join(mem, "digest.md"), "utf8")).toBe("late save\n");
    expect((await ledger(dir, "k")).entries.at(-2)?.kind).toBe("external_edit");
  });

  it("a save that leaves inode, size and modification time as they were is still found before the file goes", async () => {
    // A store reads a replaced file again only when its identity moved. Here the fs layer reports the
    // identity from before the save (a save within one timestamp tick, at the same length), so the next calls
    // pass the file over; the last look before it is removed must still find the save and keep it.
    const frozen = new Map<string, { ino: number; size: number; mtimeMs: number }>();
    const fs: MemoryFs = { ...nodeFs, identity: async (f) => frozen.get(f) ?? nodeFs.identity(f) };
    const { store } = makeStore(dir, { fs });
    const mem = memDir(dir, "k");
    await call(store, "k", patchReply({ digest: "model v1" }));
    await call(store, "k", patchReply({ digest: "model v2" }));
    await call(store, "k", patchReply({ retain: ["B v1 looked at once"] }));
    const old = (await readdir(mem)).find((n) => n.startsWith(`digest.md.${sha256("model v1").slice(0, 16)}.`))!;
    const file = path.join(mem, old);
    frozen.set(file, (await nodeFs.identity(file))!);
    writeFileSync(file, "saved v1");
    expect(readFileSync(file, "utf8")).toHaveLength("model v1".length);
    await call(store, "k", patchReply({ retain: ["B one more"] }));
    // passed over: not read again yet
    expect((await ledger(dir, "k")).entries.some((e) => e.kind === "external_edit")).toBe(false);
    // four newer replaced files push it past the newest kept: it is read one last time, and the save wins
    for (let i = 3; i <= 7; i++) await call(store, "k", patchReply({ digest: `model v${i}` }));
    const edits = (await ledger(dir, "k")).entries.filter((e) => e.kind === "external_edit");
    expect(edits.map((e) => e.digest)).toEqual(["saved v1"]);
  });

  it("a crash between its second name and the rename leaves digest.md usable", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "model v1" }));
    const mem = memDir(dir, "k");
    for (const n of await readdir(mem)) if (n.endsWith(".prev")) rmSync(path.join(mem, n));
    linkSync(path.join(mem, "digest.md"), path.join(mem, `digest.md.${sha256("model v1").slice(0, 16)}.0badc0de.prev`));
    const next = makeStore(dir);
    const s = await session(next.store, "k");
    expect(s.context).toContain("## Digest\nmodel v1");
    await s.release();
    expect(next.warnings).toEqual([]);
    expect((await readdir(mem)).filter((n) => n.endsWith(".prev"))).toEqual([]);
  });
});

describe("sequence numbers", () => {
  it("a planted seq of 2^53-1 is out of sequence and later entries stay readable", async () => {
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    await writeFile(path.join(mem, "ledger.jsonl"), patchLine(1, ["one"]) + patchLine(2, ["two"]) + patchLine(2 ** 53 - 1, ["planted"]));
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ retain: ["three"] }));
    await call(store, "k", patchReply({ retain: ["four"] }));
    const { entries, badLines } = await ledger(dir, "k");
    expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(badLines).toHaveLength(1);
    expect(warnings.join("\n")).not.toMatch(/changed outside|external/);
    const s = await session(store, "k", "dry_run");
    expect(plainFacts(s.context)).toContain("- one\n- two\n- three\n- four");
    expect(s.context).not.toContain("planted");
    await s.release();
  });

  it("a planted last entry that jumps far ahead is out of sequence: the next entry follows the one before it", async () => {
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    await writeFile(path.join(mem, "ledger.jsonl"), patchLine(1, ["one"]) + patchLine(2, ["two"]) + patchLine(10 ** 12, ["planted"]));
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ retain: ["three"] }));
    const { entries, badLines } = await ledger(dir, "k");
    expect(entries.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(badLines).toHaveLength(1);
  });

  it("lines deleted by hand leave a gap that later entries survive; a repeated seq is out of sequence", async () => {
    const mem = memDir(dir, "k");
    await mkdir(mem, { recursive: true });
    await writeFile(path.join(mem, "ledger.jsonl"), patchLine(1, ["one"]) + patchLine(4, ["four"]) + patchLine(4, ["again"]) + patchLine(5, ["five"]));
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ retain: ["six"] }));
    const { entries, badLines } = await ledger(dir, "k");
    expect(entries.map((e) => e.retain[0])).toEqual(["one", "four", "five", "six"]);
    expect(entries.at(-1)?.seq).toBe(6);
    expect(badLines).toHaveLength(1);
  });
});

describe("replies", () => {
  it("a reply starting with a byte-order mark still has its vvm-memory block found", async () => {
    const reply = "\uFEFF```vvm-memory\n" + JSON.stringify({ retain: ["bom"] }) + "\n```\nAnswer.";
    expect(extractBlocks(reply)).toEqual({ visible: "Answer.", blocks: [{ body: JSON.stringify({ retain: ["bom"] }) + "\n", closed: true }] });
    const { store } = makeStore(dir);
    expect(await call(store, "k", reply)).toBe("Answer.");
    expect((await ledger(dir, "k")).entries[0].retain).toEqual(["bom"]);
  });
});

describe.skipIf(!existsSync("/proc/self"))("a memory folder the file system will not make", () => {
  // mkdir under /proc fails with ENOENT although /proc exists: Node's recursive mkdir tried again forever,
  // at full CPU and deaf to Ctrl-C, so the run never ended
  it.each([
    ["a program's memory path there", '{ scope: "path", path: "/proc/vvm-nowhere", key: "k" }', "/proc/vvm-nowhere/k-k (ENOENT"],
    ["HOME there, for user memory", '{ scope: "user", key: "k" }', "/proc/.vvm/memory/k-k (ENOENT"],
    ["HOME there, for a project memory's recall key", '{ scope: "project", key: "k" }', null],
  ])("is a rejected call, not a run that never ends: %s", async (_, memory, refused) => {
    await writeFile(path.join(dir, "m.vvm"), `agent a(model="haiku", prompt="p", memory=${memory})\nx = @a \`hello\`()\nexport x\n`);
    const child = spawnCli(["run", "m.vvm", "--provider", "sim"], { cwd: dir, env: { HOME: "/proc" } });
    const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const r = await collect(child).finally(() => clearTimeout(killer));
    if (refused === null) {
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).x).toMatch(/^\[sim:a\]/);
    } else {
      expect(r.code, r.stderr).toBe(1);
      expect(JSON.parse(r.stdout).x.error).toMatchObject({ kind: "rejected", message: expect.stringContaining(`cannot use ${refused}`) });
    }
  });
});

describe("the recall key with HOME empty or relative", () => {
  it("is neither made nor read in the working directory, the project whose memories it guards", async () => {
    for (const HOME of ["", "relative"]) {
      const project = path.join(dir, `p-${HOME || "empty"}`);
      await mkdir(project);
      await writeFile(path.join(project, "m.vvm"), 'agent a(model="haiku", prompt="p", memory={ scope: "project", key: "k" })\nx = @a `hello`()\nexport x\n');
      // a process of its own: with HOME empty, Node's os.homedir() is empty too
      const r = await collect(spawnCli(["run", "m.vvm", "--provider", "sim"], { cwd: project, env: { HOME } }));
      expect(r.code, r.stderr).toBe(0);
      expect(await readdir(path.join(project, ".vvm")), HOME).toEqual(["memory"]);
      expect(existsSync(path.join(project, "relative")), HOME).toBe(false);
    }
  }, 30_000);
});
