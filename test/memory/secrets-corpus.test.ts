// The secret scan against a corpus of realistic secrets and evasions, and a corpus of ordinary memory
// lines (test/memory/secret-corpus.ts); bench/secrets.bench.ts prints the same rates.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activeRules, scanSecrets, type Finding } from "../../runtime/memory/secrets.ts";
import { MAX_RETAIN_CHARS } from "../../runtime/memory/patch.ts";
import { cleanCorpus, secretCorpus, windows, type SecretSample } from "./secret-corpus.ts";
import { call, ledger, makeStore, memDir, patchReply, tempDir } from "./helpers.ts";

const secrets = secretCorpus();
const clean = cleanCorpus();
const scan = (s: SecretSample) => scanSecrets(s.digest, s.retain);

describe("secret corpus", () => {
  let found: Map<string, Finding[]>;
  beforeAll(async () => {
    found = new Map();
    for (const s of secrets) found.set(s.name, await scan(s));
  });

  it("has at least 80 shapes and every one of them is refused", () => {
    expect(secrets.length).toBeGreaterThanOrEqual(80);
    expect(secrets.filter((s) => found.get(s.name)!.length === 0).map((s) => s.name)).toEqual([]);
  });

  it("exercises every rule of our own", async () => {
    const fired = new Set([...found.values()].flat().map((f) => f.ruleId));
    expect((await activeRules()).filter((id) => id.startsWith("vvm/") && !fired.has(id))).toEqual([]);
  });

  it("finds the evasions in the normalised or decoded view, where the raw text hides them", () => {
    const hidden = secrets.filter((s) => s.name.startsWith("evasion/") && !/inside|in-url/.test(s.name));
    expect(hidden.length).toBeGreaterThanOrEqual(20);
    for (const s of hidden) expect(found.get(s.name)!.some((f) => f.view !== "raw"), s.name).toBe(true);
  });

  it("reports rule, field and line only, never the secret", async () => {
    const ids = new Set(await activeRules());
    for (const s of secrets) {
      const fs = found.get(s.name)!;
      for (const f of fs) {
        expect(Object.keys(f).sort()).toEqual(["field", "line", "messageId", "ruleId", "view"]);
        expect(ids.has(f.ruleId)).toBe(true);
        expect(f.messageId).toMatch(/^[A-Za-z0-9_]{1,40}$/);
        expect(f.field).toMatch(/^(digest|retain\[\d+\])$/);
        expect(Number.isInteger(f.line) && f.line >= 1).toBe(true);
      }
      const text = JSON.stringify(fs);
      for (const w of windows(s)) expect(text.includes(w), s.name).toBe(false);
    }
  });

  it("names the part where a secret starts", async () => {
    const s = secrets.find((x) => x.name === "evasion/split-digest-and-retain")!;
    expect(found.get(s.name)!.map((f) => f.field)).toContain("digest");
    const inRetain = await scanSecrets("## Notes\n- nothing here\n", ["harmless", "still harmless", secrets.find((x) => x.name === "token/google-api-key")!.retain[1]]);
    expect(inRetain.map((f) => `${f.field}:${f.line}`)).toEqual(["retain[2]:1"]);
  });
});

describe("clean corpus", () => {
  it("has at least 200 ordinary lines and passes each one alone", async () => {
    expect(clean.length).toBeGreaterThanOrEqual(200);
    const flagged: string[] = [];
    for (const line of clean) if ((await scanSecrets(undefined, [line])).length > 0) flagged.push(line);
    expect(flagged).toEqual([]);
  });

  it("passes as one digest and as patches of 20 retain items (the seams between parts are scanned too)", async () => {
    expect(await scanSecrets(clean.join("\n"), [])).toEqual([]);
    for (let i = 0; i < clean.length; i += 20) {
      expect(await scanSecrets(undefined, clean.slice(i, i + 20).map((l) => l.slice(0, MAX_RETAIN_CHARS)))).toEqual([]);
    }
  });
});

describe("a refused patch through the store", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ dir, cleanup } = await tempDir()));
  afterAll(() => cleanup());

  it("leaves no trace of the secret in the memory directory or the warnings", async () => {
    const { store, warnings } = makeStore(dir);
    try {
      for (const [i, s] of secrets.entries()) {
        const key = `secret-${i}`;
        await call(store, key, patchReply(s.digest === undefined ? { retain: s.retain } : { digest: s.digest, retain: s.retain }));
        const last = (await ledger(dir, key)).entries.at(-1);
        expect(last?.kind, s.name).toBe("rejected");
        expect(last?.reason, s.name).toMatch(/likely secret/);
        const stored = await Promise.all((await readdir(memDir(dir, key))).map((f) => readFile(path.join(memDir(dir, key), f), "utf8")));
        const seen = [...stored, ...warnings].join("\n");
        for (const w of windows(s)) expect(seen.includes(w), `${s.name}: ${JSON.stringify(w)}`).toBe(false);
      }
    } finally {
      await store.close();
    }
  });
});
