// The key recall.jsonl is signed with (runtime/memory/index-key.ts): made once, private, never taken from
// a file others could read or a link.
import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { KEY_FILE, loadIndexKey } from "../../runtime/memory/index-key.ts";
import { useFreshDirs } from "../support/fixtures.ts";

const fresh = useFreshDirs("vvm-index-key-");

describe("the recall index key", () => {
  it("is made on first need (0600), read back the same, and never made by a reader", () => {
    const home = fresh();
    expect(loadIndexKey(home, false)).toBeNull();
    const key = loadIndexKey(home, true)!;
    expect(key).toHaveLength(32);
    const file = path.join(home, KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "latin1")).toBe(key.toString("hex"));
    expect(loadIndexKey(home, false)).toEqual(key);
    expect(loadIndexKey(home, true)).toEqual(key);
  });

  it("is not used when others may read it, when it is a link, or when it is not 64 hex digits", () => {
    const home = fresh();
    const key = loadIndexKey(home, true)!;
    const file = path.join(home, KEY_FILE);
    chmodSync(file, 0o644);
    expect(loadIndexKey(home, true)).toBeNull();
    chmodSync(file, 0o600);
    expect(loadIndexKey(home, true)).toEqual(key);

    const other = fresh();
    mkdirSync(path.join(other, ".vvm"));
    symlinkSync(file, path.join(other, KEY_FILE));
    expect(loadIndexKey(other, true)).toBeNull();

    const third = fresh();
    mkdirSync(path.join(third, ".vvm"));
    writeFileSync(path.join(third, KEY_FILE), key.toString("hex") + "\n", { mode: 0o600 });
    expect(loadIndexKey(third, true)).toBeNull();
  });
});
