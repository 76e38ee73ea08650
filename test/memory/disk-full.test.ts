// A full disk while repairing a torn ledger tail: the repair entry is written, or the tail is left
// exactly as it was. Needs a tiny tmpfs, so it runs as root only (as CI does) and says why it skips.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isErrorValue } from "../../runtime/values.ts";
import { binding, ledger, makeStore, memDir, patchLine, prov } from "./helpers.ts";
import { fill, useTinyDisk } from "../support/tiny-disk.ts";

const tinyDisk = useTinyDisk("disk-full tests");

async function open(entryDir: string) {
  const { store, warnings } = makeStore(entryDir);
  const s = await store.open(binding("k"), prov(), new AbortController().signal);
  return { s, warnings };
}

describe("disk full during torn-tail repair", () => {
  it("leaves the torn tail untouched when the repair entry does not fit, and repairs once there is room", async (ctx) => {
    const mount = tinyDisk();
    if (mount === null) return ctx.skip();
    const entryDir = mkdtempSync(path.join(mount, "p-"));
    const mem = memDir(entryDir, "k");
    mkdirSync(mem, { recursive: true });
    const file = path.join(mem, "ledger.jsonl");
    // the file ends exactly at a page boundary, so the longer repair entry needs space the disk lacks
    const torn = '{"v":1,"ts":';
    const pad = 4096 - Buffer.byteLength(patchLine(1, ["kept "]) + torn);
    writeFileSync(file, patchLine(1, ["kept " + "k".repeat(pad)]) + torn);
    const before = readFileSync(file);
    expect(before.length).toBe(4096);
    const filler = fill(mount);
    try {
      const { s } = await open(entryDir);
      expect(s instanceof Map && isErrorValue(s)).toBe(true);
      expect(JSON.stringify([...((s as Map<string, Map<string, unknown>>).get("error") ?? new Map())])).toMatch(/could not repair the incomplete last line of ledger.jsonl \(ENOSPC.*memory unchanged/);
      expect(readFileSync(file).equals(before)).toBe(true);
    } finally {
      rmSync(filler);
    }
    const again = await open(entryDir);
    await (again.s as { release(): Promise<void> }).release();
    const { entries, tornBytes } = await ledger(entryDir, "k");
    expect(tornBytes).toBe(0);
    expect(entries.map((e) => e.kind)).toEqual(["patch", "repair"]);
    expect(again.warnings.join("\n")).toMatch(/removed an incomplete last line \(12 bytes\)/);
  });

  it("repairs on a full disk when the torn tail is longer than the repair entry", async (ctx) => {
    const mount = tinyDisk();
    if (mount === null) return ctx.skip();
    const entryDir = mkdtempSync(path.join(mount, "p-"));
    const mem = memDir(entryDir, "k");
    mkdirSync(mem, { recursive: true });
    writeFileSync(path.join(mem, "ledger.jsonl"), patchLine(1, ["kept"]) + `{"v":1,"retain":["${"x".repeat(3000)}`);
    const filler = fill(mount);
    try {
      const { s } = await open(entryDir);
      expect(s instanceof Map).toBe(false);
      await (s as { release(): Promise<void> }).release();
      const { entries, tornBytes } = await ledger(entryDir, "k");
      expect(tornBytes).toBe(0);
      expect(entries.map((e) => e.kind)).toEqual(["patch", "repair"]);
    } finally {
      rmSync(filler);
    }
  });
});
