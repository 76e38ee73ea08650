import { appendFile, mkdir, readdir, readFile, rm, stat, truncate, utimes, writeFile } from "node:fs/promises";
import { execFileSync, spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nodeFs, type MemoryFs } from "../../runtime/memory/fsio.ts";
import { escapeKey } from "../../runtime/memory/keys.ts";
import type { MemorySession } from "../../runtime/memory-port.ts";
import { binding, call, digestText, ledger, makeStore, memDir, patchLine, patchReply, prov, session, tempDir, plainFacts } from "./helpers.ts";
import { errorOf } from "../support/errors.ts";

let dir = "";
let cleanup: () => Promise<void> = async () => {};
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(() => cleanup());

async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(d: string) {
    let names: string[];
    try {
      names = await readdir(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(d, n);
      const st = await stat(p);
      if (st.isDirectory()) await walk(p);
      else out[path.relative(root, p)] = (await readFile(p)).toString("base64") + "@" + st.mtimeMs;
    }
  }
  await walk(root);
  return out;
}

function enospc(): Error {
  return Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
}

describe("continue", () => {
  it("injects an empty memory with the update protocol, then applies the patch", async () => {
    const { store, warnings } = makeStore(dir);
    const s = await session(store, "user:alice");
    expect(s.context).toContain("## Digest\n(empty)");
    expect(s.context).toContain("```vvm-memory");
    expect(s.context).toContain("digest 12000 characters");
    const visible = await s.complete(patchReply({ digest: "## Stable\n- W @Alice likes tea\n", retain: ["B @Alice asked about tea"] }, "Tea it is."));
    expect(visible).toBe("Tea it is.");
    expect(await digestText(dir, "user:alice")).toBe("## Stable\n- W @Alice likes tea\n");
    const { entries, badLines, tornBytes } = await ledger(dir, "user:alice");
    expect({ badLines, tornBytes }).toEqual({ badLines: [], tornBytes: 0 });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      v: 1,
      seq: 1,
      kind: "patch",
      digest: "## Stable\n- W @Alice likes tea\n",
      retain: ["B @Alice asked about tea"],
      provenance: { program: "/proj/main.vvm", line: 3, agent: "helper", model: "sonnet", mode: "continue" },
    });
    expect(entries[0].digest_before).not.toBe(entries[0].digest_after);
    expect(Date.parse(entries[0].ts)).not.toBeNaN();
    const meta = JSON.parse(await readFile(path.join(memDir(dir, "user:alice"), "meta.json"), "utf8"));
    expect(meta).toMatchObject({ schema: 1, key: "user:alice", scope: "project", last_mode: "continue", digest_sha256: entries[0].digest_after, generation: 1 });
    expect(warnings).toEqual([]);

    const s2 = await session(store, "user:alice");
    expect(s2.context).toContain("## Digest\n## Stable\n- W @Alice likes tea");
    expect(plainFacts(s2.context)).toContain("## Retained facts (oldest first)\n- B @Alice asked about tea");
    await s2.release();
  });

  it("records no entry when the reply has no block, and strips blocks in every mode", async () => {
    const { store } = makeStore(dir);
    expect(await call(store, "k", "plain answer")).toBe("plain answer");
    expect((await ledger(dir, "k")).entries).toEqual([]);
    expect(await call(store, "k", patchReply({}, "x"), "dry_run")).toBe("x");
    expect(await call(store, "k", patchReply({}, "y"), "fresh")).toBe("y");
  });

  it("keeps the newest retained facts that fit the token budget, oldest first", async () => {
    const { store } = makeStore(dir, { budgetTokens: 20 }); // 80 characters: two lines of 32
    for (let i = 1; i <= 5; i++) await call(store, "k", patchReply({ retain: [`fact number ${i}`] }));
    const s = await session(store, "k", "dry_run");
    const day = new Date().toISOString().slice(0, 10);
    const facts = s.context!.split("\n").filter((l) => l.startsWith("- [#"));
    expect(facts).toEqual([`- [#4 ${day}] fact number 4`, `- [#5 ${day}] fact number 5`]);
    expect(s.context).toContain("\n(3 more retained facts are not shown: only the newest and those most relevant to this call fit the budget)\n");
    await s.release();
  });

  it("keeps the existing front matter when a patch replaces the digest", async () => {
    const { store } = makeStore(dir);
    await mkdir(memDir(dir, "k"), { recursive: true });
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), "---\ndigest_limit: 50\n---\nold body\n");
    const s = await session(store, "k");
    expect(s.context).toContain("## Digest\nold body");
    expect(s.context).not.toContain("digest_limit");
    expect(s.context).toContain("digest 50 characters");
    await s.complete(patchReply({ digest: "new body\n" }));
    expect(await digestText(dir, "k")).toBe("---\ndigest_limit: 50\n---\nnew body\n");
    await call(store, "k", patchReply({ digest: "x".repeat(51) }));
    expect(await digestText(dir, "k")).toBe("---\ndigest_limit: 50\n---\nnew body\n");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["external_edit", "patch", "rejected"]);
    expect(entries[2].reason).toBe('"digest" is 51 characters; the limit is 50');
  });

  it("refuses digest rewrites under read_only but keeps retain", async () => {
    const { store, warnings } = makeStore(dir);
    await mkdir(memDir(dir, "k"), { recursive: true });
    const text = "---\nread_only: true\n---\nPinned by a human.\n";
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), text);
    const s = await session(store, "k");
    expect(s.context).toContain("The digest is read-only");
    await s.complete(patchReply({ digest: "overwritten", retain: ["kept fact"] }));
    expect(await digestText(dir, "k")).toBe(text);
    const last = (await ledger(dir, "k")).entries.at(-1)!;
    expect(last).toMatchObject({ kind: "patch", retain: ["kept fact"], reason: expect.stringMatching(/read_only/) });
    expect(last.digest).toBeUndefined();
    expect(warnings.join("\n")).toMatch(/read_only/);
    await call(store, "k", patchReply({ digest: "overwritten" }));
    expect((await ledger(dir, "k")).entries.at(-1)!.kind).toBe("rejected");
  });
});

describe("rejected patches", () => {
  it.each([
    ["two blocks", patchReply({ digest: "a" }) + patchReply({ digest: "b" }), /2 vvm-memory blocks in one reply/],
    ["malformed JSON", patchReply('{"digest": "half'), /not valid JSON/],
    ["wrong types", patchReply({ digest: ["a"] }), /"digest" must be a string, got a list/],
    ["unknown keys", patchReply({ digest: "a", mood: "x" }), /unknown key "mood"/],
    ["a 2 MB digest", patchReply({ digest: "d".repeat(2 * 1024 * 1024) }), /2097152 characters; the limit is 12000/],
    ["a secret", patchReply({ digest: "token ghp_" + "aB3dE5gH7jK9mN2pQ4sT6vW8yZ1aB3dE5gH7" }), /likely secret found: github\/GITHUB_TOKEN in digest line 1/],
    ["a base64-wrapped secret", patchReply({ retain: ["note", "blob " + Buffer.from("token ghp_" + "aB3dE5gH7jK9mN2pQ4sT6vW8yZ1aB3dE5gH7").toString("base64")] }), /GITHUB_TOKEN in retain\[1\] line 1 \(decoded text\)/],
  ])("%s: digest untouched, a rejected entry without the text", async (_name, reply, reason) => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "original" }));
    const visible = await call(store, "k", reply);
    expect(visible).toBe("Visible answer." + (reply.split("Visible answer.").length > 2 ? "\n\nVisible answer." : ""));
    expect(await digestText(dir, "k")).toBe("original");
    const raw = await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"), "utf8");
    const last = JSON.parse(raw.trim().split("\n").at(-1)!);
    expect(last.kind).toBe("rejected");
    expect(last.reason).toMatch(reason);
    expect(last.digest).toBeUndefined();
    expect(last.digest_before).toBe(last.digest_after);
    expect(raw).not.toContain("ghp_");
    expect(raw).not.toContain("ddddd");
    expect(warnings.some((w) => w.includes("patch rejected, memory unchanged"))).toBe(true);
  });

  it("an unpaired surrogate (half an emoji, as JSON escapes allow) is refused: it would reach every later request, which the API refuses as invalid JSON", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply('{"digest": "mood \\ud83d", "retain": ["W fact \\ude00 half"]}'));
    const last = (await ledger(dir, "k")).entries.at(-1)!;
    expect(last.kind).toBe("rejected");
    expect(last.reason).toMatch(/"digest" contains an unpaired surrogate/);
    await call(store, "k", patchReply('{"retain": ["ok", "W fact \\ude00 half"]}'));
    expect((await ledger(dir, "k")).entries.at(-1)!.reason).toMatch(/retain\[1\] contains an unpaired surrogate/);
    const next = await session(store, "k", "dry_run");
    expect(next.context).not.toMatch(/[\uD800-\uDFFF]/u);
    await next.release();
  });
});

describe("dry_run and fresh", () => {
  it("dry_run reads memory and writes nothing at all", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "remember me", retain: ["f1"] }));
    const before = await snapshot(dir);
    const s = await session(store, "k", "dry_run");
    expect(s.context).toContain("remember me");
    expect(plainFacts(s.context)).toContain("- f1");
    expect(s.context).toContain("read-only (dry_run)");
    expect(await s.complete(patchReply({ digest: "changed" }, "seen"))).toBe("seen");
    expect(await snapshot(dir)).toEqual(before);
  });

  it("dry_run on a memory that does not exist creates nothing", async () => {
    const { store } = makeStore(dir);
    const s = await session(store, "nobody", "dry_run");
    expect(s.context).toContain("(empty)");
    await s.complete(patchReply({ digest: "x" }));
    expect(await snapshot(dir)).toEqual({});
  });

  it("fresh reads nothing, writes nothing and takes no lock", async () => {
    const { store } = makeStore(dir, { lockTimeoutMs: 50 });
    await call(store, "k", patchReply({ digest: "secret plan" }));
    const holder = await session(store, "k"); // holds the lock
    const before = await snapshot(dir);
    const s = await session(store, "k", "fresh");
    expect(s.context).toBeNull();
    expect(await s.complete(patchReply({ digest: "changed" }, "ok"))).toBe("ok");
    expect(await snapshot(dir)).toEqual(before);
    await holder.release();
  });
});

describe("hand edits", () => {
  it("records a digest edited outside the runtime before anything else", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "v1" }));
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), "v1 plus a human note\n");
    const s = await session(store, "k");
    expect(s.context).toContain("v1 plus a human note");
    await s.complete(patchReply({ digest: "v2" }));
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => [e.seq, e.kind])).toEqual([
      [1, "patch"],
      [2, "external_edit"],
      [3, "patch"],
    ]);
    expect(entries[1]).toMatchObject({ digest: "v1 plus a human note\n", digest_before: entries[0].digest_after });
    expect(entries[2].digest_before).toBe(entries[1].digest_after);
  });

  it("keeps a person's restore of the previous digest: an edit, not an update to finish", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "v1" }));
    await call(store, "k", patchReply({ digest: "v2" }));
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), "v1");
    const s = await session(store, "k");
    expect(s.context).toContain("## Digest\nv1");
    await s.complete("no change");
    expect(await digestText(dir, "k")).toBe("v1");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "patch", "external_edit"]);
    expect(warnings.join("\n")).not.toMatch(/interrupted/);
  });

  it("a digest.md too large to read, or not a regular file, is not injected and retain keeps working", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "big", patchReply({ digest: "v1" }));
    await truncate(path.join(memDir(dir, "big"), "digest.md"), 3 * 1024 ** 3); // sparse: nothing is written
    await mkdir(path.join(memDir(dir, "dir"), "digest.md"), { recursive: true });
    for (const key of ["big", "dir"]) {
      const s = await session(store, key);
      expect(s.context).toContain("not shown");
      await s.complete(patchReply({ digest: "replaced?", retain: [`fact for ${key}`] }));
      const { entries } = await ledger(dir, key);
      expect(entries.at(-1)).toMatchObject({ kind: "patch", retain: [`fact for ${key}`] });
    }
    expect((await stat(path.join(memDir(dir, "big"), "digest.md"))).size).toBe(3 * 1024 ** 3);
    expect((await stat(path.join(memDir(dir, "dir"), "digest.md"))).isDirectory()).toBe(true);
    expect(warnings.join("\n")).toMatch(/3221225472 bytes, over the 1048576-byte cap/);
    expect(warnings.join("\n")).toMatch(/not a regular file/);
  });

  it("ignores a meta.json whose numbers are not whole: sequence numbers stay whole and contiguous", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "v1" }));
    const metaFile = path.join(memDir(dir, "k"), "meta.json");
    const meta = JSON.parse(await readFile(metaFile, "utf8")) as Record<string, unknown>;
    await writeFile(metaFile, JSON.stringify({ ...meta, last_seq: "one" }));
    await call(store, "k", patchReply({ retain: ["fact B"] }));
    await call(store, "k", "no change");
    const { entries, badLines } = await ledger(dir, "k");
    expect(badLines).toEqual([]);
    expect(entries.map((e) => e.seq)).toEqual([1, 2]);
    expect(JSON.parse(await readFile(metaFile, "utf8")).last_seq).toBe(2);
  });

  it("keeps a hand edit made during the call and records it before the patch", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "v1" }));
    const s = await session(store, "k");
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), "v1, corrected by a person while the model ran\n");
    await s.complete(patchReply({ digest: "v2 from the model", retain: ["still kept"] }));
    expect(await digestText(dir, "k")).toBe("v1, corrected by a person while the model ran\n");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "external_edit", "patch"]);
    expect(entries[1].digest).toBe("v1, corrected by a person while the model ran\n");
    expect(entries[2]).toMatchObject({ retain: ["still kept"], reason: "digest rewrite refused: digest.md was edited by hand during the call" });
    expect(entries[2].digest_before).toBe(entries[1].digest_after);
    expect(warnings.join("\n")).toMatch(/edited during the call/);
  });

  it("does not copy a secret a person put in digest.md into the ledger", async () => {
    const { store, warnings } = makeStore(dir);
    await mkdir(memDir(dir, "k"), { recursive: true });
    const token = "xoxb-1234567890-" + "aB3dE5gH7jK9mN2pQ4sT6vW8";
    await writeFile(path.join(memDir(dir, "k"), "digest.md"), `bot token ${token}\n`);
    await (await session(store, "k")).release();
    const raw = await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"), "utf8");
    expect(raw).not.toContain(token);
    expect(JSON.parse(raw).reason).toMatch(/content not recorded: slack/);
    expect(warnings.join("\n")).toMatch(/appears to contain a secret/);
  });

  it.each([
    ["binary", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d]), /NUL bytes/],
    ["huge", Buffer.alloc(3 * 1024 * 1024, 0x61), /over the 1048576-byte cap/],
  ])("a %s digest.md is not injected, not overwritten, and retain still works", async (_n, content, reason) => {
    const { store, warnings } = makeStore(dir);
    await mkdir(memDir(dir, "k"), { recursive: true });
    const file = path.join(memDir(dir, "k"), "digest.md");
    await writeFile(file, content);
    const s = await session(store, "k");
    expect(s.context).toMatch(/not shown: digest\.md/);
    expect(s.context!.length).toBeLessThan(5000);
    await s.complete(patchReply({ digest: "replacement", retain: ["still remembered"] }));
    expect((await readFile(file)).equals(content)).toBe(true);
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["external_edit", "patch"]);
    expect(entries[0].digest).toBeUndefined();
    expect(entries[1]).toMatchObject({ retain: ["still remembered"], reason: expect.stringMatching(reason) });
    expect(warnings.join("\n")).toMatch(reason);
  });
});

describe("ledger recovery", () => {
  it("repairs a torn last line under the lock, keeping every complete line", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "one", retain: ["a"] }));
    const file = path.join(memDir(dir, "k"), "ledger.jsonl");
    const good = await readFile(file, "utf8");
    await appendFile(file, '{"v":1,"ts":"2026-01-01T00:00:00Z","seq":2,"kind":"pat');
    // dry_run reads past it without writing
    const d = await session(store, "k", "dry_run");
    expect(plainFacts(d.context)).toContain("- a");
    await d.release();
    expect(await readFile(file, "utf8")).toBe(good + '{"v":1,"ts":"2026-01-01T00:00:00Z","seq":2,"kind":"pat');
    await call(store, "k", patchReply({ digest: "two" }));
    const { entries, badLines, tornBytes } = await ledger(dir, "k");
    expect({ badLines, tornBytes }).toEqual({ badLines: [], tornBytes: 0 });
    expect(entries.map((e) => [e.seq, e.kind])).toEqual([
      [1, "patch"],
      [2, "repair"],
      [3, "patch"],
    ]);
    expect(entries[1].reason).toBe(`removed ${'{"v":1,"ts":"2026-01-01T00:00:00Z","seq":2,"kind":"pat'.length} bytes of an incomplete last line (interrupted write)`);
    expect(warnings.join("\n")).toMatch(/repaired ledger.jsonl/);
    expect(await digestText(dir, "k")).toBe("two");
  });

  it("keeps a last entry that only lost its line break (an editor), instead of cutting it off", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "one", retain: ["a"] }));
    await call(store, "k", patchReply({ retain: ["b"] }));
    const file = path.join(memDir(dir, "k"), "ledger.jsonl");
    const raw = await readFile(file, "utf8");
    await writeFile(file, raw.slice(0, -1));
    const s = await session(store, "k");
    expect(plainFacts(s.context)).toContain("- a\n- b");
    await s.complete(patchReply({ retain: ["c"] }));
    expect((await readFile(file, "utf8")).startsWith(raw)).toBe(true);
    const { entries, tornBytes } = await ledger(dir, "k");
    expect(tornBytes).toBe(0);
    expect(entries.map((e) => [e.seq, e.kind])).toEqual([
      [1, "patch"],
      [2, "patch"],
      [3, "patch"],
    ]);
    expect(warnings.join("\n")).toMatch(/added the missing line break after entry 2/);
  });

  it("keeps a last entry of the largest size the runtime writes (well over one 64 KiB read) that lost its line break", async () => {
    const { store } = makeStore(dir);
    const digest = "漢".repeat(11_999);
    const retain = Array.from({ length: 20 }, (_, i) => `${i}` + "事".repeat(498));
    await call(store, "k", patchReply({ digest, retain }));
    const file = path.join(memDir(dir, "k"), "ledger.jsonl");
    expect((await stat(file)).size).toBeGreaterThan(64 * 1024);
    await truncate(file, (await stat(file)).size - 1);
    await call(store, "k", "no change");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch"]);
    expect(entries[0].retain).toEqual(retain);
  });

  it("a FIFO where meta.json or ledger.jsonl belongs never blocks: meta is ignored, the ledger refuses the call", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "m", patchReply({ digest: "v1" }));
    await call(store, "l", patchReply({ digest: "v1" }));
    const fifo = (p: string) => execFileSync("mkfifo", [p]);
    await rm(path.join(memDir(dir, "m"), "meta.json"));
    fifo(path.join(memDir(dir, "m"), "meta.json"));
    await call(store, "m", patchReply({ retain: ["still works"] }));
    expect((await ledger(dir, "m")).entries.at(-1)?.retain).toEqual(["still works"]);
    expect(warnings.join("\n")).toMatch(/meta.json cannot be read \(meta.json is not a regular file\)/);
    await rm(path.join(memDir(dir, "l"), "ledger.jsonl"));
    fifo(path.join(memDir(dir, "l"), "ledger.jsonl"));
    const out = await store.open(binding("l"), prov(), new AbortController().signal);
    expect(errorOf(out as never)).toMatchObject({ kind: "rejected" });
    expect(errorOf(out as never)!.message).toMatch(/ledger.jsonl is not a regular file|not a regular file/);
  });

  it("reports an unreadable line in the middle and keeps it", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ retain: ["first"] }));
    const file = path.join(memDir(dir, "k"), "ledger.jsonl");
    await appendFile(file, "this is not json\n");
    await call(store, "k", patchReply({ retain: ["second"] }));
    const raw = await readFile(file, "utf8");
    expect(raw).toContain("this is not json\n");
    const { entries, badLines } = await ledger(dir, "k");
    expect(badLines).toHaveLength(1);
    expect(entries.map((e) => e.seq)).toEqual([1, 2]);
    const offset = Buffer.byteLength(raw.split("this is not json")[0]);
    expect(warnings.join("\n")).toContain(`unreadable or out-of-sequence line at byte ${offset}; it is kept as is`);
    const s = await session(store, "k", "dry_run");
    expect(plainFacts(s.context)).toContain("- first\n- second");
    await s.release();
  });

  it("a ledger damaged in thousands of places is one warning, naming the count and the first places", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ retain: ["first"] }));
    const file = path.join(memDir(dir, "k"), "ledger.jsonl");
    const before = (await stat(file)).size;
    // garbage, a line that only looks like an object, and one indented entry that is still read
    await appendFile(file, "x\n".repeat(20_000) + "{not json}\n" + `  ${patchLine(2, ["indented"]).trimEnd()}  \n`);
    await call(store, "k", patchReply({ retain: ["third"] }));
    await call(store, "k", patchReply({ retain: ["fourth"] }));
    const damaged = warnings.filter((w) => w.includes("ledger.jsonl has"));
    expect(damaged).toEqual([expect.stringContaining(`ledger.jsonl has 20001 unreadable or out-of-sequence lines, at bytes ${before}, ${before + 2}, ${before + 4}, ${before + 6}, ${before + 8}, …; they are kept as is and skipped`)]);
    expect((await ledger(dir, "k")).entries.flatMap((e) => e.retain)).toEqual(["first", "indented", "third", "fourth"]);
  });

  it("sees a ledger appended to, truncated or rewritten by hand between calls of one store", async () => {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ retain: ["first"] }));
    await call(store, "k", patchReply({ retain: ["second"] }));
    const file = path.join(memDir(dir, "k"), "ledger.jsonl");
    const context = async () => {
      const s = await session(store, "k", "dry_run");
      await s.release();
      return s.context!;
    };
    expect(plainFacts(await context())).toContain("- first\n- second");
    const original = await readFile(file, "utf8");
    const [l1, l2] = original.trimEnd().split("\n");
    // appended by hand (another tool): recalled on the next call
    const e3 = { ...JSON.parse(l2), seq: 3, retain: ["by hand"] };
    await appendFile(file, JSON.stringify(e3) + "\n");
    expect(plainFacts(await context())).toContain("- first\n- second\n- by hand");
    // truncated back: forgotten
    await writeFile(file, original);
    expect(await context()).not.toContain("by hand");
    // rewritten in place with the same size (same inode, possibly the same mtime tick)
    await writeFile(file, l1 + "\n" + l2.replace('"second"', '"SECOND"') + "\n");
    expect((await readFile(file)).length).toBe(Buffer.byteLength(original));
    const ctx = await context();
    expect(plainFacts(ctx)).toContain("- SECOND");
    expect(plainFacts(ctx)).not.toContain("- second");
    // a continue call after a hand truncation appends after what is really there
    await writeFile(file, l1 + "\n");
    await call(store, "k", patchReply({ retain: ["third"] }));
    const { entries, badLines } = await ledger(dir, "k");
    expect(badLines).toEqual([]);
    expect(entries.map((e) => e.retain)).toEqual([["first"], ["third"]]);
    expect(plainFacts(await context())).toContain("- first\n- third");
  });

  it("reads only the ledger's tail once the recall index exists: cost does not grow with the ledger", async () => {
    let bytesRead = 0;
    const counting: MemoryFs = {
      ...nodeFs,
      async openRead(file) {
        const h = await nodeFs.openRead(file);
        if (h === null) return null;
        return { ...h, read: async (s, l) => ((bytesRead += file.endsWith("ledger.jsonl") ? l : 0), h.read(s, l)) };
      },
    };
    const measure = async (entries: number) => {
      const key = `k${entries}`;
      await mkdir(memDir(dir, key), { recursive: true });
      const lines = Array.from({ length: entries }, (_, i) => patchLine(i + 1, [`fact ${i} ${"x".repeat(200)}`]));
      await writeFile(path.join(memDir(dir, key), "ledger.jsonl"), lines.join(""));
      // the first continue call builds recall.jsonl from the whole ledger, once
      await (await session(makeStore(dir).store, key)).release();
      // a later run (a new store: nothing cached in memory) reads the index, and of the ledger only its end
      const { store } = makeStore(dir, { fs: counting });
      bytesRead = 0;
      const s = await session(store, key, "dry_run");
      await s.release();
      return { bytesRead, context: s.context! };
    };
    const small = await measure(1000); // ~440 KB
    const large = await measure(20_000); // ~6 MB
    expect(Math.abs(large.bytesRead - small.bytesRead)).toBeLessThan(100); // the last lines differ by a few digits
    expect(large.bytesRead).toBeLessThanOrEqual(64 * 1024 + 4096);
    expect(plainFacts(large.context)).toContain("- fact 19999 ");
  });
});

describe("faults", () => {
  const failing = (which: "append" | "digest" | "meta" | "digest+truncate"): MemoryFs => ({
    ...nodeFs,
    async append(file, data) {
      if (which === "append") {
        // a partial write, then the disk is full
        await nodeFs.append(file, data.subarray(0, 10));
        throw enospc();
      }
      return nodeFs.append(file, data);
    },
    async writeAtomic(file, data, beforeRename) {
      if ((which === "digest" || which === "digest+truncate") && file.endsWith("digest.md")) throw enospc();
      return nodeFs.writeAtomic(file, data, beforeRename);
    },
    async overwrite(file, data) {
      if (which === "meta" && file.endsWith("meta.json")) throw enospc();
      return nodeFs.overwrite(file, data);
    },
    async truncate(file, len) {
      if (which === "digest+truncate") throw enospc();
      return nodeFs.truncate(file, len);
    },
  });

  async function seed() {
    const { store } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "old", retain: ["r0"] }));
    return { ledger: await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"), "utf8") };
  }

  it("ENOSPC while appending to the ledger: memory unchanged", async () => {
    const before = await seed();
    const { store, warnings } = makeStore(dir, { fs: failing("append") });
    expect(await call(store, "k", patchReply({ digest: "new" }, "shown anyway"))).toBe("shown anyway");
    expect(await digestText(dir, "k")).toBe("old");
    expect(await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"), "utf8")).toBe(before.ledger);
    expect(warnings.join("\n")).toMatch(/could not append to ledger.jsonl \(ENOSPC\); memory unchanged/);
    // the new digest's temporary file, written alongside the append, is gone too
    expect((await readdir(memDir(dir, "k"))).filter((n) => n.startsWith("digest.md."))).toEqual([]);
  });

  it("the digest is renamed into place only after the ledger line is on disk, however slow its fsync", async () => {
    await seed();
    const order: string[] = [];
    const slowLedger: MemoryFs = {
      ...nodeFs,
      async append(file, data, opts) {
        await nodeFs.append(file, data, opts);
        if (!file.endsWith("ledger.jsonl")) return;
        await new Promise((r) => setTimeout(r, 50));
        order.push("ledger synced");
      },
      async writeAtomic(file, data, beforeRename) {
        order.push("digest written");
        return nodeFs.writeAtomic(file, data, async () => {
          await beforeRename?.();
          order.push("digest renamed");
        });
      },
    };
    const { store } = makeStore(dir, { fs: slowLedger });
    await call(store, "k", patchReply({ digest: "new" }));
    expect(order).toEqual(["digest written", "ledger synced", "digest renamed"]);
    expect(await digestText(dir, "k")).toBe("new");
  });

  it("ENOSPC while writing digest.md: the ledger entry is withdrawn, memory unchanged", async () => {
    const before = await seed();
    const { store, warnings } = makeStore(dir, { fs: failing("digest") });
    await call(store, "k", patchReply({ digest: "new" }));
    expect(await digestText(dir, "k")).toBe("old");
    expect(await readFile(path.join(memDir(dir, "k"), "ledger.jsonl"), "utf8")).toBe(before.ledger);
    expect(warnings.join("\n")).toMatch(/could not write digest.md \(ENOSPC\); memory unchanged/);
    expect((await readdir(memDir(dir, "k"))).filter((n) => n.startsWith("digest.md."))).toEqual([]);
  });

  it("a crash between ledger and digest is completed by the next call", async () => {
    await seed();
    const { store, warnings } = makeStore(dir, { fs: failing("digest+truncate") });
    await call(store, "k", patchReply({ digest: "new", retain: ["r1"] }));
    expect(await digestText(dir, "k")).toBe("old");
    expect(warnings.join("\n")).toMatch(/ledger entry 2 is completed by the next call/);
    const healthy = makeStore(dir);
    const s = await session(healthy.store, "k");
    expect(s.context).toContain("## Digest\nnew");
    await s.release();
    expect(await digestText(dir, "k")).toBe("new");
    const { entries } = await ledger(dir, "k");
    expect(entries.map((e) => e.kind)).toEqual(["patch", "patch", "repair"]);
    expect(entries[2].reason).toBe("completed the interrupted update of entry 2");
    expect(healthy.warnings.join("\n")).toMatch(/completed an interrupted memory update/);
  });

  it("an empty meta.json (a writer killed between creating and writing it) is like none: no warning, rebuilt", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "one" }));
    await writeFile(path.join(memDir(dir, "k"), "meta.json"), "");
    await call(store, "k", patchReply({ digest: "two" }));
    expect(warnings).toEqual([]);
    expect(JSON.parse(await readFile(path.join(memDir(dir, "k"), "meta.json"), "utf8")).last_seq).toBe(2);
  });

  it("ENOSPC on meta.json: digest and ledger complete, meta rebuilt later, no false hand-edit", async () => {
    await seed();
    const { store, warnings } = makeStore(dir, { fs: failing("meta") });
    await call(store, "k", patchReply({ digest: "new" }));
    expect(await digestText(dir, "k")).toBe("new");
    expect(warnings.join("\n")).toMatch(/meta.json not updated \(ENOSPC\)/);
    const healthy = makeStore(dir);
    await call(healthy.store, "k", patchReply({ retain: ["after"] }));
    expect((await ledger(dir, "k")).entries.map((e) => e.kind)).toEqual(["patch", "patch", "patch"]);
    const meta = JSON.parse(await readFile(path.join(memDir(dir, "k"), "meta.json"), "utf8"));
    expect(meta.digest_sha256).toBe((await ledger(dir, "k")).entries[1].digest_after);
  });

  it("the memory directory deleted mid-call: nothing applied, a clear message, next call starts over", async () => {
    const { store, warnings } = makeStore(dir);
    await call(store, "k", patchReply({ digest: "old" }));
    const s = await session(store, "k");
    await rm(memDir(dir, "k"), { recursive: true, force: true });
    expect(await s.complete(patchReply({ digest: "new" }, "still returned"))).toBe("still returned");
    expect(warnings.join("\n")).toMatch(/(memory directory was removed|lock was lost)[^\n]*patch not applied/);
    await expect(stat(memDir(dir, "k"))).rejects.toThrow();
    await call(store, "k", patchReply({ digest: "again" }));
    expect(await digestText(dir, "k")).toBe("again");
  });
});

describe("locking", () => {
  it("returns error(kind=locked) when the lock is not free within the timeout", async () => {
    const a = makeStore(dir);
    const b = makeStore(dir, { lockTimeoutMs: 150 });
    const held = await session(a.store, "k");
    const t0 = Date.now();
    const r = await b.store.open(binding("k"), prov(), new AbortController().signal);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(errorOf(r)).toEqual({ kind: "locked", message: expect.stringMatching(new RegExp(`memory project:"k" is in use by another call or process \\(held by pid ${process.pid} on [^)]+ since \\d\\d:\\d\\d:\\d\\d\\); gave up after waiting 150 ms`)) });
    const rd = await b.store.open(binding("k"), prov("dry_run"), new AbortController().signal);
    expect(errorOf(rd)?.kind).toBe("locked");
    await held.complete("done");
    const ok = (await b.store.open(binding("k"), prov(), new AbortController().signal)) as MemorySession;
    expect(ok.context).not.toBeNull();
    await ok.release();
  });

  it("stops waiting when the call is aborted", async () => {
    const { store } = makeStore(dir, { lockTimeoutMs: 10_000 });
    const held = await session(store, "k");
    const ac = new AbortController();
    const p = store.open(binding("k"), prov(), ac.signal);
    setTimeout(() => ac.abort(), 50);
    expect(errorOf(await p)?.message).toMatch(/interrupted while waiting/);
    await held.release();
  });

  it("serialises concurrent calls on one key: no lost update", async () => {
    const { store } = makeStore(dir);
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const s = await session(store, "shared");
        await new Promise((r) => setTimeout(r, Math.random() * 5));
        await s.complete(patchReply({ digest: `writer ${i}`, retain: [`from ${i}`] }));
      }),
    );
    const { entries } = await ledger(dir, "shared");
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(entries.flatMap((e) => e.retain)).size).toBe(20);
    for (let i = 1; i < entries.length; i++) expect(entries[i].digest_before).toBe(entries[i - 1].digest_after);
    expect(await digestText(dir, "shared")).toBe(entries[19].digest);
  });

  it("different keys do not wait for each other", async () => {
    const { store } = makeStore(dir, { lockTimeoutMs: 100 });
    const a = await session(store, "worker-1");
    const b = await session(store, "worker-2");
    await Promise.all([a.complete(patchReply({ digest: "a" })), b.complete(patchReply({ digest: "b" }))]);
    expect([await digestText(dir, "worker-1"), await digestText(dir, "worker-2")]).toEqual(["a", "b"]);
  });

  it("takes over at once a lock whose holder on this machine has exited, and says who holds a lock it waits for", async () => {
    const lock = path.join(memDir(dir, "k"), "lock");
    await mkdir(memDir(dir, "k"), { recursive: true });
    // a pid that is not running: a child that has exited
    const { pid } = spawnSync(process.execPath, ["-e", "0"]);
    await writeFile(lock, JSON.stringify({ pid, host: os.hostname(), since: new Date().toISOString() }));
    const { store, warnings } = makeStore(dir, { staleMs: 60_000, lockTimeoutMs: 1000 });
    const t0 = Date.now();
    await call(store, "k", patchReply({ digest: "mine" }));
    expect(Date.now() - t0).toBeLessThan(500);
    expect(await digestText(dir, "k")).toBe("mine");
    // a live holder (this process) is waited for, and named after a second
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() }));
    const slow = makeStore(dir, { staleMs: 60_000, lockTimeoutMs: 1500 });
    const r = await slow.store.open(binding("k"), prov(), new AbortController().signal);
    expect(errorOf(r)?.kind).toBe("locked");
    expect(slow.warnings).toEqual([expect.stringMatching(new RegExp(`waiting for the memory lock \\(held by pid ${process.pid} on `))]);
    expect(warnings).toEqual([]);
  });

  it("a memory removed (vvm memory rm) while a call waited for its lock: continue starts it anew, dry_run reads nothing", async () => {
    const { store } = makeStore(dir, { staleMs: 60_000, lockTimeoutMs: 5000 });
    for (const mode of ["continue", "dry_run"] as const) {
      await call(store, "k", patchReply({ digest: "before rm", retain: ["an old fact"] }));
      // a live holder (this process, as far as the lock says) until the directory is removed
      await writeFile(path.join(memDir(dir, "k"), "lock"), JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() }));
      const waiting = store.open(binding("k"), prov(mode), new AbortController().signal);
      await new Promise((r) => setTimeout(r, 100));
      await rm(memDir(dir, "k"), { recursive: true });
      const s = await waiting;
      expect(errorOf(s)).toBeNull();
      expect((s as MemorySession).context).toContain("(empty)");
      await (s as MemorySession).complete(patchReply({ digest: "after rm", retain: ["a new fact"] }));
      if (mode === "continue") {
        expect((await ledger(dir, "k")).entries.map((e) => [e.seq, e.digest, e.retain])).toEqual([[1, "after rm", ["a new fact"]]]);
        await rm(memDir(dir, "k"), { recursive: true });
      } else expect(await readdir(path.join(dir, ".vvm", "memory"))).toEqual([]);
    }
  });

  it("takes over a lock left by a killed process once it is stale", async () => {
    await mkdir(path.join(memDir(dir, "k"), "lock"), { recursive: true });
    const old = new Date(Date.now() - 3000);
    await utimes(path.join(memDir(dir, "k"), "lock"), old, old);
    const { store } = makeStore(dir, { staleMs: 2000, lockTimeoutMs: 1000 });
    const t0 = Date.now();
    await call(store, "k", patchReply({ digest: "mine" }));
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(await digestText(dir, "k")).toBe("mine");
  });

  it("refuses to apply when the lock was compromised during the call", async () => {
    const { store, warnings } = makeStore(dir, { staleMs: 2000 });
    await call(store, "k", patchReply({ digest: "old" }));
    const s = await session(store, "k");
    // another party replaces the lock: the holder's next refresh notices
    await rm(path.join(memDir(dir, "k"), "lock"), { recursive: true });
    await new Promise((r) => setTimeout(r, 1300));
    await s.complete(patchReply({ digest: "new" }));
    expect(await digestText(dir, "k")).toBe("old");
    expect(warnings.join("\n")).toMatch(/lock was lost during the call/);
  });

  it("close() releases locks still held", async () => {
    const a = makeStore(dir);
    await session(a.store, "k");
    await a.store.close();
    const b = makeStore(dir, { lockTimeoutMs: 100 });
    await call(b.store, "k", patchReply({ digest: "after close" }));
    expect(await digestText(dir, "k")).toBe("after close");
  });
});

describe("layout", () => {
  it("places user and path scopes where the binding says", async () => {
    const { store } = makeStore(dir);
    for (const [m, where] of [
      [binding("u", "user"), path.join(dir, "home", ".vvm", "memory", escapeKey("u"))],
      [binding("p", "path", "mem/store"), path.join(dir, "mem", "store", escapeKey("p"))],
    ] as const) {
      const s = (await store.open(m, prov(), new AbortController().signal)) as MemorySession;
      await s.complete(patchReply({ digest: "here" }));
      expect(await readFile(path.join(where, "digest.md"), "utf8")).toBe("here");
    }
  });

  it("a path binding that names a file is refused in words", async () => {
    const { store } = makeStore(dir);
    await writeFile(path.join(dir, "notes.txt"), "a file\n");
    const out = await store.open(binding("p", "path", "notes.txt"), prov(), new AbortController().signal);
    expect(errorOf(out as never)).toMatchObject({ kind: "rejected", message: `memory path:"p": ${path.join(dir, "notes.txt")}, or a folder on the way to it, is a file, not a directory` });
  });

  it("hostile keys stay inside the memory root", async () => {
    const { store } = makeStore(dir);
    for (const key of ["../../x", "a/b\\c:d", "..", "é".repeat(150), "cafe\u0301"]) await call(store, key, patchReply({ digest: key }));
    const names = await readdir(path.join(dir, ".vvm", "memory"));
    expect(names).toHaveLength(5);
    // and outside it only the user's key for recall.jsonl (index-key.ts)
    expect((await readdir(dir)).sort()).toEqual([".vvm", "home"]);
    expect(await readdir(path.join(dir, "home", ".vvm"))).toEqual(["recall.key"]);
    for (const n of names) expect(Buffer.byteLength(n)).toBeLessThanOrEqual(255);
    const meta = JSON.parse(await readFile(path.join(memDir(dir, "é".repeat(150)), "meta.json"), "utf8"));
    expect(meta.key).toBe("é".repeat(150));
    await call(store, "caf\u00e9", patchReply({ retain: ["same memory"] }));
    expect((await ledger(dir, "caf\u00e9")).entries).toHaveLength(2);
  });
});
