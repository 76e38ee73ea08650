// A permission glob may escape glob characters in a folder's name (`data \(old\)/**`): the escapes name
// the folder, they are not part of its path.
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { GlobSet } from "../../runtime/tools/globs.ts";
import { useFreshDirs } from "../support/fixtures.ts";

/** A fresh, empty folder for one test (all removed with the file's temporary folder). */
const fresh = useFreshDirs("vvm-glob-escapes-");

describe("escaped glob characters in a glob's folder", () => {
  it("match the folder of that name, and only it", async () => {
    const tmp = realpathSync(fresh());
    for (const dir of ["data (old)", "a[1]", "data"]) {
      mkdirSync(path.join(tmp, dir));
      writeFileSync(path.join(tmp, dir, "f.md"), "x");
    }
    const globs = await GlobSet.compile(["data \\(old\\)/**", "a\\[1\\]/*.md"], tmp);
    expect(globs.matches(path.join(tmp, "data (old)", "f.md"))).toBe(true);
    expect(globs.matches(path.join(tmp, "a[1]", "f.md"))).toBe(true);
    expect(globs.matches(path.join(tmp, "data", "f.md"))).toBe(false);
  });
});
