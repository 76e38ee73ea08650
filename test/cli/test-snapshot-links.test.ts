// `vvm test --update` writes NAME.test.snap.yaml through a temporary file: a link planted in the repository
// where that temporary file goes is never written through (spec/testing.md).
import { existsSync, lstatSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { writeSnapshots } from "../../src/commands/test-snapshot.ts";
import { runCli } from "../support/cli.ts";
import { useFreshDirs } from "../support/fixtures.ts";

/** A fresh, empty folder for one test (all removed with the file's temporary folder). */
const fresh = useFreshDirs("vvm-snap-links-");

describe("writing snapshots", () => {
  it("never writes through a link where its temporary file would go", async () => {
    const tmp = fresh();
    const victim = path.join(tmp, "victim.txt");
    writeFileSync(victim, "victim content\n");
    const file = path.join(tmp, "t.test.snap.yaml");
    // the names a temporary file beside it could have had: this process's id, and a few more
    for (const name of [`${file}.${process.pid}.tmp`, `${file}.tmp`]) symlinkSync(victim, name);
    await writeSnapshots(file, new Map([["a", { exports: { x: 1 }, memory: {} }]]));
    expect(readFileSync(victim, "utf8")).toBe("victim content\n");
    expect(lstatSync(file).isFile()).toBe(true);
    expect(readFileSync(file, "utf8")).toContain("x: 1");
    expect(existsSync(victim)).toBe(true);
  });
});

describe("vvm test --update over a link", () => {
  it("a snapshot file that is a link is an ERROR line, and the link's target is untouched", async () => {
    const tmp = fresh();
    const victim = path.join(tmp, "victim.txt");
    writeFileSync(victim, "victim content\n");
    writeFileSync(path.join(tmp, "t.vvm"), "x = 1\nexport x\n");
    writeFileSync(path.join(tmp, "t.test.yaml"), "script: []\ntests:\n  - name: a\n    expect: {exports: {x: 1}}\n");
    symlinkSync(victim, path.join(tmp, "t.test.snap.yaml"));
    const r = await runCli(["test", "--update", "t.test.yaml"], { cwd: tmp });
    expect(r.stdout).toBe("PASS  t.test.yaml: a\nERROR t.test.snap.yaml: cannot write it (not a regular file)\n1 passed, 1 failed\n");
    expect(r.code).toBe(1);
    expect(readFileSync(victim, "utf8")).toBe("victim content\n");
  }, 30_000);
});
