// Each test runs in a copy of its program's folder: a test file naming a program in a huge folder (its home
// folder, /etc, a dataset) is that test's failure, not gigabytes copied for every test.
// A script file that never ends (a device) is refused too, and an input_file that is a FIFO.
import { execFileSync } from "node:child_process";
import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { MAX_COPY_BYTES } from "../../src/commands/test-run.ts";
import { collect, runCli, spawnCli } from "../support/cli.ts";
import { useFreshDirs } from "../support/fixtures.ts";

/** A fresh, empty folder for one test (all removed with the file's temporary folder). */
const fresh = useFreshDirs("vvm-test-copy-");

describe("vvm test's copy of the program's folder", () => {
  it("is refused past its limit, naming the folder", async () => {
    const tmp = fresh();
    const big = path.join(tmp, "big");
    mkdirSync(big);
    writeFileSync(path.join(big, "p.vvm"), "x = 1\nexport x\n");
    writeFileSync(path.join(big, "data.bin"), "");
    truncateSync(path.join(big, "data.bin"), MAX_COPY_BYTES + 1); // sparse: no disk used
    mkdirSync(path.join(tmp, "tests"));
    writeFileSync(path.join(tmp, "tests", "t.test.yaml"), "program: ../big/p.vvm\nscript: []\ntests:\n  - name: a\n    expect: {exports: {x: 1}}\n");
    const r = await runCli(["test", "tests"], { cwd: tmp });
    expect(r.stdout).toMatch(/^FAIL {2}tests\/t\.test\.yaml:4: a: the program's folder .*big holds more than 256 MiB/);
    expect(r.code).toBe(1);
  }, 30_000);
});

describe("vvm test's copy, when it would go inside what it copies", () => {
  it("a TMPDIR inside the program's folder, or a memory fixture that holds the copy, is said in words", async () => {
    const tmp = fresh();
    mkdirSync(path.join(tmp, "tmp"));
    writeFileSync(path.join(tmp, "t.vvm"), "x = 1\nexport x\n");
    writeFileSync(path.join(tmp, "t.test.yaml"), "script: []\ntests:\n  - name: a\n    expect: {exports: {x: 1}}\n");
    const inside = await collect(spawnCli(["test", "t.test.yaml"], { cwd: tmp, env: { TMPDIR: path.join(tmp, "tmp") } }));
    expect(inside.stdout).toMatch(/^FAIL {2}t\.test\.yaml:3: a: the temporary folder .*\/tmp\/vvm-test-\w+ is inside the program's folder .+, which each test copies into it: set TMPDIR to a folder outside it\n/);
    // (a fixture lies in the test file's folder: here that folder, which holds TMPDIR, while the program is in prog/)
    mkdirSync(path.join(tmp, "prog"));
    writeFileSync(path.join(tmp, "prog", "t.vvm"), "x = 1\nexport x\n");
    writeFileSync(path.join(tmp, "m.test.yaml"), "program: prog/t.vvm\nscript: []\ntests:\n  - name: a\n    memory: .\n    expect: {exports: {x: 1}}\n");
    const root = await collect(spawnCli(["test", "m.test.yaml"], { cwd: tmp, env: { TMPDIR: path.join(tmp, "tmp") } }));
    expect(root.stdout).toMatch(/^FAIL {2}m\.test\.yaml:4: a: memory: \S+ holds the test's own copy of the program \(.+\/\.vvm\/memory\), so it cannot be copied into it: give a folder laid out as \.vvm\/memory\n/);
    // a TMPDIR that does not exist (in-process: a child's tsx would make it for its own cache)
    const tmpdir = vi.spyOn(os, "tmpdir").mockReturnValue(path.join(tmp, "no-such-folder"));
    const missing = await runCli(["test", "t.test.yaml"], { cwd: tmp }).finally(() => tmpdir.mockRestore());
    expect(missing.stdout).toMatch(/^FAIL {2}t\.test\.yaml:3: a: cannot make a temporary folder in .*\/no-such-folder \(no such folder\): set TMPDIR to a folder that exists and can be written\n/);
    expect(inside.stdout + root.stdout + missing.stdout + missing.stderr).not.toMatch(/ERR_|internal error/);
  }, 30_000);
});

describe("vvm test's script file", () => {
  it("a FIFO named as the script fails the test at once", async () => {
    const tmp = fresh();
    writeFileSync(path.join(tmp, "t.vvm"), "x = 1\nexport x\n");
    execFileSync("mkfifo", [path.join(tmp, "s.yaml")]);
    writeFileSync(path.join(tmp, "t.test.yaml"), "script: s.yaml\ntests:\n  - name: a\n    expect: {exports: {x: 1}}\n");
    const r = await runCli(["test", "t.test.yaml"], { cwd: tmp });
    expect(r.stdout).toBe("FAIL  t.test.yaml:3: a: script s.yaml: not a regular file\n0 passed, 1 failed\n");
  }, 20_000);
});

describe("vvm test's input_file", () => {
  it("a FIFO fails the test at once instead of waiting for a writer for ever", async () => {
    const tmp = fresh();
    writeFileSync(path.join(tmp, "t.vvm"), "input a\nexport a\n");
    execFileSync("mkfifo", [path.join(tmp, "in.json")]);
    writeFileSync(path.join(tmp, "t.test.yaml"), "script: []\ntests:\n  - name: a\n    input_file: in.json\n    expect: {}\n");
    // a child: the wait was a blocked open in a worker thread, which would hang this process too
    const child = spawnCli(["test", "t.test.yaml"], { cwd: tmp });
    const r = await Promise.race([collect(child), new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000))]);
    if (r === null) child.kill("SIGKILL");
    expect(r).toEqual({ code: 1, stdout: "FAIL  t.test.yaml:3: a: input_file in.json: not a regular file\n0 passed, 1 failed\n", stderr: "" });
  }, 30_000);
});
