import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { BindingError, escapeKey, resolveBinding, unescapeKey, verifyContainment } from "../../runtime/memory/keys.ts";
import { obj } from "../../runtime/values.ts";
import { binding, call, ledger, makeStore, memDir, patchReply, prov, tempDir } from "./helpers.ts";
import { errorOf } from "../support/errors.ts";

const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;

function assertSafeName(name: string) {
  expect(name).toMatch(/^k-[a-z0-9_-]+$/);
  expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
  expect(name).not.toMatch(RESERVED);
  expect(name === "." || name === "..").toBe(false);
}

describe("key encoding", () => {
  it("is reversible and safe for any string", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }), (key) => {
        const name = escapeKey(key);
        assertSafeName(name);
        // long keys are shortened with a hash and read back from meta.json instead
        expect(unescapeKey(name)).toBe(/_h[0-9a-f]{32}$/.test(name) ? null : key.normalize("NFC"));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps keys that differ only in case apart (case-insensitive file systems)", () => {
    expect(escapeKey("Alice").toLowerCase()).not.toBe(escapeKey("alice").toLowerCase());
    expect(escapeKey("Alice")).toBe(escapeKey("Alice").toLowerCase());
  });

  it.each(["../../x", "a/b\\c:d", ".", "..", "CON", "nul.txt", "com1", "a\0b", "trailing. ", "-rf", "user:alice/ticket:INC-1"])("encodes hostile key %j safely", (key) => {
    const name = escapeKey(key);
    assertSafeName(name);
    expect(unescapeKey(name)).toBe(key);
  });

  it("shortens long keys with a hash suffix, distinct for keys sharing a prefix", () => {
    const a = "é".repeat(150); // 300 bytes
    const b = "é".repeat(149) + "e";
    const na = escapeKey(a);
    const nb = escapeKey(b);
    assertSafeName(na);
    assertSafeName(nb);
    expect(na).not.toBe(nb);
    expect(na).toMatch(/_h[0-9a-f]{32}$/);
    expect(unescapeKey(na)).toBeNull(); // the key itself lives in meta.json
    const plain = "k".repeat(300);
    expect(escapeKey(plain).length).toBeLessThan(255);
    expect(escapeKey(plain)).not.toBe(escapeKey("k".repeat(299)));
  });

  it("normalises NFC and NFD spellings to one memory", () => {
    const nfc = "caf\u00e9";
    const nfd = "cafe\u0301";
    expect(escapeKey(nfc)).toBe(escapeKey(nfd));
    const a = resolveBinding(obj({ scope: "project", key: nfc }), "/p", "/h");
    const b = resolveBinding(obj({ scope: "project", key: nfd }), "/p", "/h");
    expect(a.dir).toBe(b.dir);
    expect(b.key).toBe(nfc);
  });
});

describe("bindings", () => {
  it("resolves the three scopes", () => {
    expect(resolveBinding(obj({ scope: "project", key: "a" }), "/proj", "/home/u").dir).toBe("/proj/.vvm/memory/k-a");
    expect(resolveBinding(obj({ scope: "user", key: "a" }), "/proj", "/home/u").dir).toBe("/home/u/.vvm/memory/k-a");
    expect(resolveBinding(obj({ scope: "path", key: "a", path: "mem" }), "/proj", "/home/u").dir).toBe("/proj/mem/k-a");
    expect(resolveBinding(obj({ scope: "path", key: "a", path: "/abs/mem" }), "/proj", "/home/u").dir).toBe("/abs/mem/k-a");
  });

  it("refuses scope user without an absolute home directory (an empty HOME would mean the working directory)", () => {
    for (const home of ["", "relative/home"]) {
      expect(() => resolveBinding(obj({ scope: "user", key: "a" }), "/proj", home)).toThrow(/scope "user" needs an absolute home directory/);
    }
    expect(resolveBinding(obj({ scope: "project", key: "a" }), "/proj", "").dir).toBe("/proj/.vvm/memory/k-a");
  });

  it.each([
    [obj({ scope: "team", key: "a" }), /scope must be/],
    [obj({ scope: "project", key: "" }), /non-empty string/],
    [obj({ scope: "project", key: 3 }), /non-empty string/],
    [obj({ scope: "project", key: " \t " }), /key is blank/],
    [obj({ scope: "project" }), /key must be a non-empty string, got missing/],
    [obj({ scope: "path", key: "a" }), /path must be a non-empty string/],
    [obj({ scope: "project", key: "a", path: "x" }), /only allowed with scope "path"/],
    [obj({ scope: "project", key: "a", ttl: 3 }), /unknown field "ttl"/],
    [obj({ scope: "project", key: "x".repeat(1025) }), /1025 bytes long/],
    ["user:alice", /must be an object/],
  ])("rejects a bad binding %#", (memory, message) => {
    expect(() => resolveBinding(memory as never, "/p", "/h")).toThrow(BindingError);
    expect(() => resolveBinding(memory as never, "/p", "/h")).toThrow(message);
  });

  describe("through the store", () => {
    let cleanup: () => Promise<void> = async () => {};
    afterEach(() => cleanup());

    it("returns error(kind=rejected) for a bad binding without touching the disk", async () => {
      const t = await tempDir();
      cleanup = t.cleanup;
      const { store } = makeStore(t.dir);
      const r = await store.open(obj({ scope: "galaxy", key: "a" }), prov(), new AbortController().signal);
      expect(errorOf(r)?.kind).toBe("rejected");
      expect(errorOf(r)?.message).toMatch(/invalid memory binding on agent helper: memory.scope must be/);
    });

    it("refuses a memory directory that is a symlink leading out of the root", async () => {
      const t = await tempDir();
      cleanup = t.cleanup;
      const outside = path.join(t.dir, "outside");
      await mkdir(outside);
      await mkdir(path.join(t.dir, ".vvm", "memory"), { recursive: true });
      await symlink(outside, path.join(t.dir, ".vvm", "memory", escapeKey("evil")));
      const loc = resolveBinding(obj({ scope: "project", key: "evil" }), t.dir, t.dir);
      await expect(verifyContainment(loc)).rejects.toThrow(/outside/);
      const { store } = makeStore(t.dir);
      const r = await store.open(binding("evil"), prov(), new AbortController().signal);
      expect(errorOf(r)?.kind).toBe("rejected");
      expect(errorOf(r)?.message).toMatch(/symbolic link/);
    });

    it("never reads or writes through a symbolic link inside the memory directory", async () => {
      const t = await tempDir();
      cleanup = t.cleanup;
      const { store, warnings } = makeStore(t.dir);
      await call(store, "d", patchReply({ digest: "v1" }));
      await call(store, "l", patchReply({ digest: "v1" }));
      const victim = path.join(t.dir, "bashrc");
      await writeFile(victim, "export PATH=/usr/bin\n");
      const digest = path.join(memDir(t.dir, "d"), "digest.md");
      await rm(digest);
      await symlink(victim, digest);
      await call(store, "d", patchReply({ digest: "model text", retain: ["kept"] }));
      expect(await readFile(victim, "utf8")).toBe("export PATH=/usr/bin\n");
      expect(warnings.join("\n")).toMatch(/digest.md is not a regular file/);
      expect((await ledger(t.dir, "d")).entries.at(-1)?.retain).toEqual(["kept"]);
      const led = path.join(memDir(t.dir, "l"), "ledger.jsonl");
      await rm(led);
      await symlink(victim, led);
      const r = await store.open(binding("l"), prov(), new AbortController().signal);
      expect(errorOf(r)?.kind).toBe("rejected");
      expect(await readFile(victim, "utf8")).toBe("export PATH=/usr/bin\n");
    });
  });
});
