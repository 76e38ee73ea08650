// The file tools against hostile paths and awkward files: `..`, absolute paths, links in and out, glob
// tricks, writes to links and hard links, huge, binary and special files. A tool request is untrusted input.
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, openSync, realpathSync, renameSync, symlinkSync, unlinkSync } from "node:fs";
import { link, mkdir, readFile, rm, stat, symlink, truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolResult } from "../../runtime/provider.ts";
import { NO_PERMISSIONS, type Permissions } from "../../runtime/tools/permissions.ts";
import { editFileTool, LIMITS, listFilesTool, readFileTool, writeFileTool } from "../../runtime/tools/file-tools.ts";
import { GlobSet } from "../../runtime/tools/globs.ts";
import { openedAt, Sandbox } from "../../runtime/tools/sandbox.ts";
import { Toolbox, TURN_LIMITS, type ToolEvent } from "../../runtime/tools/toolbox.ts";
import { useTempDir } from "../support/fixtures.ts";

const root = useTempDir("vvm-sandbox-");
let n = 0;

/** A program directory: docs/ (readable in most tests), out/ (writable), a secret beside them, a file outside. */
async function fixture(): Promise<{ dir: string; outside: string }> {
  const base = path.join(root, `case${++n}`);
  const dir = path.join(base, "prog");
  const outside = path.join(base, "outside");
  await mkdir(path.join(dir, "docs", "sub"), { recursive: true });
  await mkdir(path.join(dir, "out"), { recursive: true });
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(dir, "docs", "guide.md"), "line 1\nline 2\nline 3\n");
  await writeFile(path.join(dir, "docs", "sub", "deep.md"), "deep\n");
  await writeFile(path.join(dir, "docs", ".hidden.md"), "hidden\n");
  await writeFile(path.join(dir, "secret.env"), "TOKEN=abc\n");
  await writeFile(path.join(outside, "private.txt"), "private\n");
  return { dir, outside };
}

async function tools(dir: string, p: Partial<Permissions>): Promise<Toolbox> {
  return Toolbox.create({ ...NO_PERMISSIONS, ...p }, { programDir: dir, agent: "a", shell: { env: {}, confirm: null } });
}

/** Run one tool use; returns what the model would be told, and the trace event. */
async function use(box: Toolbox, name: string, input: unknown, signal = new AbortController().signal): Promise<{ result: ToolResult; event: ToolEvent }> {
  let event: ToolEvent | null = null;
  const [result] = await box.run([{ id: "t1", name, input }], signal, (e) => (event = e));
  return { result, event: event! };
}

const ok = async (box: Toolbox, name: string, input: unknown) => {
  const { result } = await use(box, name, input);
  if (result.isError) throw new Error(`expected ${name} ${JSON.stringify(input)} to succeed: ${result.content}`);
  return result.content;
};
const refused = async (box: Toolbox, name: string, input: unknown) => {
  const { result, event } = await use(box, name, input);
  if (!result.isError) throw new Error(`expected ${name} ${JSON.stringify(input)} to be refused, got: ${result.content}`);
  return { message: result.content, event };
};

describe("a folder swapped for a link while a tool opens a file", () => {
  it("openedAt tells the file an open descriptor is on from the one a path names", async () => {
    const { dir, outside } = await fixture();
    const inside = path.join(dir, "docs", "guide.md");
    const fd = openSync(path.join(outside, "private.txt"), "r");
    try {
      expect(openedAt(fd, path.join(outside, "private.txt"))).toBe(true);
      expect(openedAt(fd, inside)).toBe(false);
    } finally {
      closeSync(fd);
    }
  });

  it("a folder on the path swapped for a link right after the check: nothing is read from or written outside", async () => {
    const { dir, outside } = await fixture();
    await mkdir(path.join(dir, "out", "sub"));
    await writeFile(path.join(dir, "out", "sub", "s.txt"), "inside\n");
    await writeFile(path.join(outside, "s.txt"), "TOP SECRET\n");
    const sub = path.join(dir, "out", "sub");
    // the swap lands between the permission check and the open, as another process's would
    const swap = () => {
      renameSync(sub, `${sub}.aside`);
      symlinkSync(outside, sub);
    };
    const unswap = () => {
      unlinkSync(sub);
      renameSync(`${sub}.aside`, sub);
    };
    class Racing extends Sandbox {
      override async forRead(p: string) {
        const r = await super.forRead(p);
        swap();
        return r;
      }
      override async forWrite(p: string) {
        const r = await super.forWrite(p);
        swap();
        return r;
      }
      override async forWalk(p: string) {
        const r = await super.forWalk(p);
        swap();
        return r;
      }
    }
    const sb = new Racing(realpathSync(dir), await GlobSet.compile(["out/**"], realpathSync(dir)), await GlobSet.compile(["out/**"], realpathSync(dir)));
    const signal = new AbortController().signal;
    const attempts: [string, () => Promise<unknown>][] = [
      ["read_file", () => readFileTool(sb, { path: "out/sub/s.txt" }, signal)],
      ["write_file (new)", () => writeFileTool(sb, { path: "out/sub/report.md", content: "x\n" })],
      ["write_file (existing)", () => writeFileTool(sb, { path: "out/sub/s.txt", content: "x\n" })],
      ["edit_file", () => editFileTool(sb, { path: "out/sub/s.txt", old: "TOP", new: "x" })],
      // folders a write makes on the way are made inside the checked folder, never through the link
      ["write_file (new folders)", () => writeFileTool(sb, { path: "out/sub/a/b/report.md", content: "x\n" })],
    ];
    for (const [what, attempt] of attempts) {
      await expect(attempt(), what).rejects.toThrow(/changed while it was being opened \(a folder on its path was replaced, by a link\?\); nothing was (read|written)/);
      unswap();
    }
    // a listing of the swapped folder lists nothing from outside
    await writeFile(path.join(outside, "salary.txt"), "outside\n");
    const listed = await listFilesTool(sb, { pattern: "out/sub/**" }, signal);
    unswap();
    expect(listed.text).not.toMatch(/salary|TOP/);
    expect(await readFile(path.join(outside, "s.txt"), "utf8")).toBe("TOP SECRET\n");
    expect(existsSync(path.join(outside, "report.md"))).toBe(false);
    expect(existsSync(path.join(outside, "a"))).toBe(false);
    expect(await readFile(path.join(sub, "s.txt"), "utf8")).toBe("inside\n");
  });
});

describe("paths", () => {
  it('refuse ".." anywhere, even when the target would be allowed', async () => {
    const { dir } = await fixture();
    const box = await tools(dir, { read: ["**"], write: ["**"] });
    for (const p of ["../outside/private.txt", "docs/../secret.env", "docs/..", "docs/sub/../../docs/guide.md", "docs\\..\\secret.env"]) {
      const { message, event } = await refused(box, "read_file", { path: p });
      expect(message).toMatch(/contains "\.\.", and paths may not climb out of a directory/);
      expect(event).toMatchObject({ allowed: false, error: "denied" });
    }
    expect((await refused(box, "write_file", { path: "out/../../escape.txt", content: "x" })).message).toMatch(/contains "\.\."/);
    for (const pattern of ["../*", "**/../*", "docs/**/../../**", "../outside/**"]) {
      expect((await refused(box, "list_files", { pattern })).message).toMatch(/contains "\.\."/);
      expect((await refused(box, "search_files", { query: ".", pattern })).message).toMatch(/contains "\.\."/);
    }
  });

  it("take absolute paths inside the globs and refuse those outside", async () => {
    const { dir, outside } = await fixture();
    const box = await tools(dir, { read: ["docs/**"] });
    expect(await ok(box, "read_file", { path: path.join(dir, "docs", "guide.md"), limit: 1 })).toMatch(/^line 1\n/);
    expect((await refused(box, "read_file", { path: path.join(outside, "private.txt") })).message).toMatch(/^permission denied: reading .*private\.txt needs the read permission/);
    expect((await refused(box, "read_file", { path: "/etc/passwd" })).message).toMatch(/^permission denied: reading \/etc\/passwd/);
    expect((await refused(box, "list_files", { pattern: "/etc/*" })).message).toMatch(/^permission denied: reading \/etc needs the read permission/);
    // a missing file outside the globs is refused the same way: no telling what exists there
    expect((await refused(box, "read_file", { path: "nothing-here.txt" })).message).toMatch(/^permission denied/);
    expect((await refused(box, "read_file", { path: "docs/nothing.md" })).message).toBe("docs/nothing.md does not exist");
  });

  it("absolute globs allow what they name outside the program's directory", async () => {
    const { dir, outside } = await fixture();
    const box = await tools(dir, { read: [path.join(outside, "*.txt")] });
    expect(await ok(box, "read_file", { path: path.join(outside, "private.txt") })).toBe("private");
    expect(await ok(box, "list_files", { pattern: path.join(outside, "*") })).toBe(path.join(outside, "private.txt"));
  });

  it("follow links, then check where they lead: in is allowed, out is refused", async () => {
    const { dir, outside } = await fixture();
    await symlink(path.join(outside, "private.txt"), path.join(dir, "docs", "out-link.md"));
    await symlink(outside, path.join(dir, "docs", "out-dir"));
    await symlink(path.join(dir, "docs", "guide.md"), path.join(dir, "shortcut.md"));
    await symlink(path.join(dir, "docs"), path.join(dir, "alias"));
    const box = await tools(dir, { read: ["docs/**"] });
    // where the link leads outside the program's directory is not told to the model
    for (const p of ["docs/out-link.md", "docs/out-dir/private.txt"]) {
      const { message } = await refused(box, "read_file", { path: p });
      expect(message).toMatch(/leads through a link out of the program's directory\)$/);
      expect(message).not.toContain(outside);
    }
    // links from outside the globs into them read the allowed file
    expect(await ok(box, "read_file", { path: "shortcut.md", limit: 1 })).toMatch(/^line 1/);
    expect(await ok(box, "read_file", { path: "alias/sub/deep.md" })).toBe("deep");
    // listing and searching never enter a linked directory nor show a link that leads out
    expect(await ok(box, "list_files", { pattern: "docs/**" })).toBe("docs/guide.md\ndocs/sub/deep.md");
    expect(await ok(box, "search_files", { query: "private" })).toMatch(/^no line matches/);
  });

  it("a link whose target cannot be resolved (longer than PATH_MAX once followed) is refused, not taken as written", async () => {
    const { dir, outside } = await fixture();
    // docs/L leads through docs/S1 (10 levels of 250-character names) and S1/S2 (7 more) back up and out:
    // every link is short, but realpath(3) gives ENAMETOOLONG while the kernel's open still follows it
    const name = (i: number) => String(i).padStart(3, "0") + "x".repeat(247);
    const chain = (from: number, count: number) => Array.from({ length: count }, (_, j) => name(from + j)).join("/");
    const script = [
      "set -e",
      `cd "$1/docs"`,
      `mkdir -p ${chain(1, 10)}`,
      `ln -s ${chain(1, 10)} S1`,
      `ln -s "S1/S2/${"../".repeat(57)}${outside.slice(1)}" L`,
      `cd ${chain(1, 10)}`,
      `mkdir -p ${chain(11, 7)}`,
      `ln -s ${chain(11, 7)} S2`,
    ].join("\n");
    execFileSync("sh", ["-c", script, "sh", dir]);
    try {
      expect(await readFile(path.join(dir, "docs", "L", "private.txt"), "utf8")).toBe("private\n");
      const box = await tools(dir, { read: ["docs/**"], write: ["docs/**"] });
      for (const [tool, input] of [
        ["read_file", { path: "docs/L/private.txt" }],
        ["list_files", { pattern: "docs/L/*" }],
        ["search_files", { query: "private", pattern: "docs/L/*" }],
        ["write_file", { path: "docs/L/planted.txt", content: "x" }],
        ["edit_file", { path: "docs/L/private.txt", old: "private", new: "edited" }],
      ] as const) {
        expect((await refused(box, tool, input)).message, tool).toMatch(/cannot be resolved \(ENAMETOOLONG/);
      }
      expect(await ok(box, "search_files", { query: "private" })).toMatch(/^no line matches/);
      expect(await readFile(path.join(outside, "private.txt"), "utf8")).toBe("private\n");
      await expect(stat(path.join(outside, "planted.txt"))).rejects.toThrow();
    } finally {
      // Node's rm gives up on paths this deep; rm(1) does not
      execFileSync("rm", ["-rf", path.join(dir, "docs")]);
    }
  });

  it("the program's directory may itself be reached through a link", async () => {
    const { dir } = await fixture();
    const via = path.join(root, `via-link-${n}`);
    await symlink(dir, via);
    const box = await tools(via, { read: ["docs/*.md"], write: ["out/**"] });
    expect(await ok(box, "read_file", { path: "docs/guide.md", limit: 1 })).toMatch(/^line 1/);
    expect(await ok(box, "write_file", { path: "out/x.md", content: "x" })).toBe("wrote 1 bytes to out/x.md (created)");
    expect(await readFile(path.join(dir, "out", "x.md"), "utf8")).toBe("x");
  });

  it("glob tricks do not widen a permission", async () => {
    const { dir } = await fixture();
    // a permission glob that climbs after a wildcard matches nothing beyond its fixed prefix
    let box = await tools(dir, { read: ["docs/**/../secret.env", "{docs,../outside}/*.{md,txt}", "docs/*.md"] });
    expect((await refused(box, "read_file", { path: "secret.env" })).message).toMatch(/^permission denied/);
    expect((await refused(box, "read_file", { path: path.join(dir, "..", "outside", "private.txt") })).message).toMatch(/^permission denied: reading .*outside\/private\.txt/);
    expect(await ok(box, "read_file", { path: "docs/guide.md", limit: 1 })).toMatch(/^line 1/);
    // a pattern cannot reach past the read globs, whatever it says
    box = await tools(dir, { read: ["docs/*.md"] });
    expect(await ok(box, "list_files", { pattern: "**" })).toBe("docs/guide.md");
    expect(await ok(box, "list_files", { pattern: "{docs,.}/**/*" })).toBe("docs/guide.md");
    expect(await ok(box, "list_files", { pattern: "*" })).toBe('no readable files match "*"');
    // "*" and "**" skip dot names; naming one grants it
    expect((await refused(box, "read_file", { path: "docs/.hidden.md" })).message).toMatch(/^permission denied/);
    box = await tools(dir, { read: ["docs/**", "docs/.hidden.md"] });
    expect(await ok(box, "read_file", { path: "docs/.hidden.md" })).toBe("hidden");
    expect(await ok(box, "list_files", { pattern: "docs/**" })).toBe("docs/guide.md\ndocs/sub/deep.md");
  });

  it("a glob without wildcards names exactly one file", async () => {
    const { dir } = await fixture();
    const box = await tools(dir, { read: ["docs/guide.md"] });
    expect(await ok(box, "read_file", { path: "./docs/guide.md", limit: 1 })).toMatch(/^line 1/);
    expect((await refused(box, "read_file", { path: "docs/sub/deep.md" })).message).toMatch(/^permission denied/);
    expect(await ok(box, "list_files", { pattern: "docs" })).toBe("docs/guide.md");
    expect(await ok(box, "list_files", { pattern: "docs/guide.md" })).toBe("docs/guide.md");
  });
});

describe("writes", () => {
  it("never follow a link at the target, wherever it points", async () => {
    const { dir, outside } = await fixture();
    await symlink(path.join(outside, "private.txt"), path.join(dir, "out", "to-outside.md"));
    await symlink(path.join(dir, "out", "real.md"), path.join(dir, "out", "to-inside.md"));
    await writeFile(path.join(dir, "out", "real.md"), "real\n");
    await symlink(path.join(dir, "out", "missing.md"), path.join(dir, "out", "dangling.md"));
    const box = await tools(dir, { write: ["out/**"] });
    for (const p of ["out/to-outside.md", "out/to-inside.md", "out/dangling.md"]) {
      const { message, event } = await refused(box, "write_file", { path: p, content: "pwned" });
      expect(message).toBe(`permission denied: ${p} is a symbolic link, and writes never follow links; remove the link or write another path`);
      expect(event).toMatchObject({ allowed: false, denied: "write", bytes_written: null });
      expect((await refused(box, "edit_file", { path: p, old: "real", new: "pwned" })).message).toMatch(/is a symbolic link/);
    }
    expect(await readFile(path.join(outside, "private.txt"), "utf8")).toBe("private\n");
    expect(await readFile(path.join(dir, "out", "real.md"), "utf8")).toBe("real\n");
    await expect(stat(path.join(dir, "out", "missing.md"))).rejects.toThrow();
  });

  it("through a linked directory, check where the file would really land", async () => {
    const { dir, outside } = await fixture();
    await symlink(outside, path.join(dir, "out", "elsewhere"));
    await mkdir(path.join(dir, "out", "real-sub"));
    await symlink(path.join(dir, "out", "real-sub"), path.join(dir, "out", "alias-sub"));
    const box = await tools(dir, { write: ["out/**"] });
    expect((await refused(box, "write_file", { path: "out/elsewhere/new.txt", content: "x" })).message).toMatch(/leads through a link out of the program's directory/);
    await expect(stat(path.join(outside, "new.txt"))).rejects.toThrow();
    expect(await ok(box, "write_file", { path: "out/alias-sub/new.txt", content: "x" })).toMatch(/^wrote 1 bytes/);
    expect(await readFile(path.join(dir, "out", "real-sub", "new.txt"), "utf8")).toBe("x");
  });

  it("refuse a file with other hard links (writing it would change them too)", async () => {
    const { dir, outside } = await fixture();
    await link(path.join(outside, "private.txt"), path.join(dir, "out", "hard.txt"));
    const box = await tools(dir, { write: ["out/**"] });
    expect((await refused(box, "write_file", { path: "out/hard.txt", content: "x" })).message).toBe(
      "permission denied: out/hard.txt has other hard links; writing it would change those files too, or (replacing it) part it from them",
    );
    expect(await readFile(path.join(outside, "private.txt"), "utf8")).toBe("private\n");
  });

  it("read a file with other hard links, as any name of it (spec: reads do not refuse hard links), and never write it", async () => {
    const { dir, outside } = await fixture();
    await link(path.join(outside, "private.txt"), path.join(dir, "docs", "linked.txt"));
    const box = await tools(dir, { read: ["docs/**"], write: ["docs/**"] });
    expect(await ok(box, "read_file", { path: "docs/linked.txt" })).toBe("private");
    expect((await refused(box, "edit_file", { path: "docs/linked.txt", old: "private", new: "changed" })).message).toMatch(/has other hard links/);
    expect(await readFile(path.join(outside, "private.txt"), "utf8")).toBe("private\n");
  });

  it("create missing directories, replace files, and refuse directories and special files", async () => {
    const { dir } = await fixture();
    const box = await tools(dir, { write: ["out/**"] });
    expect(await ok(box, "write_file", { path: "out/a/b/c.md", content: "é\n" })).toBe("wrote 3 bytes to out/a/b/c.md (created)");
    expect(await ok(box, "write_file", { path: "out/a/b/c.md", content: "new" })).toBe("wrote 3 bytes to out/a/b/c.md (replaced)");
    expect(await readFile(path.join(dir, "out/a/b/c.md"), "utf8")).toBe("new");
    expect((await refused(box, "write_file", { path: "out/a", content: "x" })).message).toBe("out/a is not a regular file (a directory)");
    expect((await refused(box, "write_file", { path: "out/a/", content: "x" })).message).toMatch(/names a directory/);
    execFileSync("mkfifo", [path.join(dir, "out", "pipe")]);
    expect((await refused(box, "write_file", { path: "out/pipe", content: "x" })).message).toBe("out/pipe is not a regular file (a named pipe)");
  });

  it("edit_file replaces exactly one occurrence", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "out", "e.md"), "a b a\n");
    const box = await tools(dir, { read: ["out/**"], write: ["out/**"] });
    expect((await refused(box, "edit_file", { path: "out/e.md", old: "a", new: "z" })).message).toBe(
      "the old text occurs 2 times in out/e.md; include more of the surrounding text so it occurs once",
    );
    expect((await refused(box, "edit_file", { path: "out/e.md", old: "q", new: "z" })).message).toMatch(/does not occur in out\/e\.md/);
    expect((await refused(box, "edit_file", { path: "out/e.md", old: "", new: "z" })).message).toMatch(/^old is empty/);
    expect((await refused(box, "edit_file", { path: "out/none.md", old: "a", new: "z" })).message).toBe("out/none.md does not exist; write_file creates files");
    expect(await ok(box, "edit_file", { path: "out/e.md", old: "a b", new: "$& $1" })).toBe("edited out/e.md: replaced 1 occurrence (the file is now 8 bytes)");
    // the replacement is taken literally ($& is not a pattern)
    expect(await readFile(path.join(dir, "out", "e.md"), "utf8")).toBe("$& $1 a\n");
  });

  it("two edits of one file in one turn both land, however the path is spelled", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "out", "two.md"), "first\nsecond\n");
    // one turn's edits, run as the loop runs them: side by side
    const edits = async (...uses: [string, string, string][]) => {
      const box = await tools(dir, { read: ["out/**"], write: ["out/**"] });
      const results = await box.run(
        uses.map(([p, old, nu], i) => ({ id: `t${i}`, name: "edit_file", input: { path: p, old, new: nu } })),
        new AbortController().signal,
        () => {},
      );
      return results.map((r) => r.isError);
    };
    expect(await edits(["out/two.md", "first", "1st"], ["out/two.md", "second", "2nd"])).toEqual([false, false]);
    expect(await readFile(path.join(dir, "out", "two.md"), "utf8")).toBe("1st\n2nd\n");
    // one spelling through a linked folder: still one file, still one queue
    await symlink(path.join(dir, "out"), path.join(dir, "alias"));
    expect(await edits(["out/two.md", "1st", "one"], ["alias/two.md", "2nd", "two"])).toEqual([false, false]);
    expect(await readFile(path.join(dir, "out", "two.md"), "utf8")).toBe("one\ntwo\n");
  });

  it("edit_file needs the file readable too: its answers would tell a write-only agent what the file holds", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "out", "wo.txt"), "password=hunter2\n");
    const box = await tools(dir, { write: ["out/**"] });
    for (const old of ["password=hunter2", "nothing like it"]) {
      const { message, event } = await refused(box, "edit_file", { path: "out/wo.txt", old, new: old });
      expect(message).toMatch(/^permission denied: edit_file reads out\/wo\.txt to find the old text, so it needs the read permission as well as write/);
      expect(event).toMatchObject({ allowed: false });
    }
    expect(await ok(box, "write_file", { path: "out/wo.txt", content: "replaced\n" })).toMatch(/^wrote/);
  });
});

describe("awkward files", () => {
  const saved = { ...LIMITS };
  afterEach(() => Object.assign(LIMITS, saved));

  it("a huge file is read capped, with a note saying how to read on", async () => {
    const { dir } = await fixture();
    const big = path.join(dir, "docs", "big.log");
    const line = "x".repeat(99) + "\n";
    await writeFile(big, line.repeat(200_000)); // 20 MB
    const box = await tools(dir, { read: ["docs/**"] });
    const first = await ok(box, "read_file", { path: "docs/big.log" });
    const lines = first.split("\n\n[read_file: ")[0].split("\n");
    expect(lines.length).toBeLessThanOrEqual(LIMITS.readLines);
    expect(first.length).toBeLessThan(LIMITS.readChars + 500);
    expect(first).toMatch(/\[read_file: showing lines 1–\d+ of docs\/big\.log \(20,000,000 bytes in all; stopped at the 100,000-character cap\): call read_file with offset=\d+ to read on\]$/);
    const next = Number(/offset=(\d+)/.exec(first)![1]);
    expect(next).toBe(lines.length + 1);
    const later = await ok(box, "read_file", { path: "docs/big.log", offset: 199_999 });
    expect(later).toBe(`${"x".repeat(99)}\n${"x".repeat(99)}\n\n[read_file: showing lines 199999–200000, the end of docs/big.log]`);
    expect(await ok(box, "read_file", { path: "docs/big.log", offset: 300_000 })).toBe("(docs/big.log has 200000 lines; offset 300000 is past the end)");
  });

  it("files ending at, just before and just after a 64 KiB read chunk are read whole, characters split across it intact", async () => {
    const { dir } = await fixture();
    const chunk = 64 * 1024;
    const body = (bytes: number) => "a".repeat(bytes - 1) + "\n";
    // a 3-byte character straddling the end of the first chunk, and a last line without a newline
    const split = "b".repeat(chunk - 1) + "€\nend";
    const cases: [string, string, string][] = [
      ["exact.txt", body(chunk), "a".repeat(LIMITS.lineChars)],
      ["short.txt", body(chunk - 1), "a".repeat(LIMITS.lineChars)],
      ["long.txt", body(chunk) + "tail", "tail"],
      ["split.txt", split, "end"],
    ];
    for (const [name, text] of cases) await writeFile(path.join(dir, "docs", name), text);
    const box = await tools(dir, { read: ["docs/**"] });
    for (const [name, text, last] of cases) {
      const lines = text.replace(/\n$/, "").split("\n");
      const out = await ok(box, "read_file", { path: `docs/${name}`, offset: lines.length });
      expect(out.startsWith(last), name).toBe(true);
      expect(out, name).toMatch(lines.length > 1 ? /showing lines \d+–\d+, the end of/ : /line cut at/);
    }
    expect(await ok(box, "read_file", { path: "docs/split.txt", offset: 1 })).toMatch(/^b{2000} …\[line cut at 2000 characters\]\nend/);
  });

  it("every use resolves its path afresh: a link repointed between two reads is checked where it now leads", async () => {
    const { dir, outside } = await fixture();
    const linkPath = path.join(dir, "docs", "moving.md");
    await symlink(path.join(dir, "docs", "guide.md"), linkPath);
    const box = await tools(dir, { read: ["docs/**"] });
    expect(await ok(box, "read_file", { path: "docs/moving.md", limit: 1 })).toBe("line 1\n\n[read_file: showing lines 1–1 of docs/moving.md (21 bytes in all; stopped at limit 1): call read_file with offset=2 to read on]");
    await rm(linkPath);
    await symlink(path.join(outside, "private.txt"), linkPath);
    expect((await refused(box, "read_file", { path: "docs/moving.md" })).message).toMatch(/leads through a link out of the program's directory/);
  });

  it("a single enormous line is cut, and the rest of it is not held in memory", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "docs", "one-line.txt"), "y".repeat(5_000_000));
    const box = await tools(dir, { read: ["docs/**"] });
    const out = await ok(box, "read_file", { path: "docs/one-line.txt" });
    expect(out).toBe(`${"y".repeat(LIMITS.lineChars)} …[line cut at ${LIMITS.lineChars} characters]\n\n[read_file: 1 line was longer than ${LIMITS.lineChars} characters and is cut]`);
  });

  it("a line longer than the scan limit stops the reading there: a file of one endless line is not read to its end", async () => {
    const { dir } = await fixture();
    const file = path.join(dir, "docs", "endless.txt");
    await writeFile(file, "a\n" + "z".repeat(LIMITS.lineScanBytes + 1));
    // then 16 GiB more of the same line (a sparse file: nothing on disk, but reading it to the end takes minutes)
    await truncate(file, 16 * 2 ** 30);
    const box = await tools(dir, { read: ["docs/**"] });
    // search_files skips a file this large: the note does not send the model there
    const note = `line 2 of docs/endless.txt runs on past 8 MiB (${(16 * 2 ** 30).toLocaleString("en")} bytes in all), so the reading stopped there: read_file cannot read past it`;
    expect(await ok(box, "read_file", { path: "docs/endless.txt" })).toBe(
      `a\n${"z".repeat(LIMITS.lineChars)} …[line cut at ${LIMITS.lineChars} characters]\n\n[read_file: ${note}; 1 line was longer than ${LIMITS.lineChars} characters and is cut]`,
    );
    expect(await ok(box, "read_file", { path: "docs/endless.txt", offset: 3 })).toBe(`(${note})`);
  });

  it("a line past the scan limit in a file search_files still searches: the note points there", async () => {
    const { dir } = await fixture();
    const size = LIMITS.lineScanBytes + 2 ** 20;
    expect(size).toBeLessThanOrEqual(LIMITS.textFileBytes);
    await writeFile(path.join(dir, "docs", "long.txt"), "z".repeat(size - 6) + "\nafter");
    const box = await tools(dir, { read: ["docs/**"] });
    expect(await ok(box, "read_file", { path: "docs/long.txt", offset: 2 })).toBe(
      `(line 1 of docs/long.txt runs on past 8 MiB (${size.toLocaleString("en")} bytes in all), so the reading stopped there: read_file cannot read past it (search_files can look further))`,
    );
    expect(await ok(box, "search_files", { query: "^after$", pattern: "docs/**" })).toBe("docs/long.txt:2: after");
  });

  it("binary files and files that are not UTF-8 are refused with a note", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "docs", "image.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
    await writeFile(path.join(dir, "docs", "latin1.txt"), Buffer.from("caf\xe9\n", "latin1"));
    await writeFile(path.join(dir, "out.md"), "");
    const box = await tools(dir, { read: ["docs/**", "out.md"], write: ["docs/**"] });
    const { message, event } = await refused(box, "read_file", { path: "docs/image.png" });
    expect(message).toBe("docs/image.png is a binary file (12 bytes, not UTF-8 text); this tool only handles text");
    expect(event).toMatchObject({ allowed: true, ok: false, error: "binary" });
    expect((await refused(box, "read_file", { path: "docs/latin1.txt" })).message).toMatch(/is a binary file \(5 bytes/);
    expect((await refused(box, "edit_file", { path: "docs/image.png", old: "PNG", new: "GIF" })).message).toMatch(/is a binary file/);
    expect(await ok(box, "search_files", { query: "caf|PNG" })).toMatch(/^no line matches .*\n\n\[search_files: 2 binary files skipped\]$/);
    expect(await ok(box, "read_file", { path: "out.md" })).toBe("(out.md is empty)");
  });

  it("directories and named pipes are not read (a pipe would block)", async () => {
    const { dir } = await fixture();
    execFileSync("mkfifo", [path.join(dir, "docs", "fifo")]);
    const box = await tools(dir, { read: ["docs/**", "docs"] });
    expect((await refused(box, "read_file", { path: "docs/fifo" })).message).toBe("docs/fifo is not a regular file");
    expect((await refused(box, "read_file", { path: "docs" })).message).toBe("docs is a directory; list_files lists what is in it");
    // listing skips the pipe, searching does not hang on it
    expect(await ok(box, "list_files", { pattern: "docs/*" })).toBe("docs/guide.md");
    expect(await ok(box, "search_files", { query: "line 2" })).toBe("docs/guide.md:2: line 2");
  });

  it("a search whose regular expression backtracks for ever stops at the limit; a bad one is refused", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "docs", "evil.md"), "a".repeat(40) + "!\n");
    LIMITS.searchTimeoutMs = 300;
    const box = await tools(dir, { read: ["docs/**"] });
    const t0 = performance.now();
    const { message, event } = await refused(box, "search_files", { query: "^(a+)+$" });
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(message).toMatch(/^the search stopped after 0s without finishing/);
    expect(event.error).toBe("timeout");
    expect((await refused(box, "search_files", { query: "(" })).message).toMatch(/^query is not a valid regular expression: /);
  });

  it("a pattern whose matching would backtrack (many '*' in one name) is refused before the walk; extended globs are plain text", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "docs", `meeting-notes-${"quarterly-review-".repeat(10)}.md`), "notes\n");
    const box = await tools(dir, { read: ["docs/**"] });
    // each pair was about six times the work of the one before: 14 of them never finished
    for (const name of ["list_files", "search_files"]) {
      const input = name === "list_files" ? { pattern: `docs/${"*?".repeat(14)}#` } : { query: "notes", pattern: `docs/${"*?".repeat(14)}#` };
      const { message, event } = await refused(box, name, input);
      expect(message).toBe(`the pattern "docs/${"*?".repeat(14)}#" has too many '*' or {…} groups: one path segment may hold two, the others one each (list a folder and narrow it down instead)`);
      expect(event.error).toBe("bad_input");
    }
    // two in each of several names multiply too (the model can make the folders with write_file)
    expect((await refused(box, "list_files", { pattern: "docs/*a*a/*a*a/*a*a" })).message).toMatch(/has too many '\*'/);
    expect(await ok(box, "list_files", { pattern: "docs/*/*-*.md" })).toBe('no readable files match "docs/*/*-*.md"');
    expect(await ok(box, "list_files", { pattern: "docs/**/*.md" })).toMatch(/^docs\/guide\.md\ndocs\/meeting-notes-/);
    expect(await ok(box, "list_files", { pattern: "docs/*-*.md" })).toMatch(/^docs\/meeting-notes-/);
    expect(await ok(box, "list_files", { pattern: "docs/+(guide|x).md" })).toBe('no readable files match "docs/+(guide|x).md"');
  });

  it("many '**' in a pattern cost one match per pattern segment and path segment: a deep tree answers at once", async () => {
    const { dir } = await fixture();
    // the model can make such a tree itself with write_file; picomatch's whole-path expression took minutes on it
    const deep = path.join(dir, "docs", ...Array(60).fill("a"));
    await mkdir(deep, { recursive: true });
    await writeFile(path.join(deep, "f.txt"), "x\n");
    const box = await tools(dir, { read: ["docs/**"] });
    const t0 = performance.now();
    expect(await ok(box, "list_files", { pattern: `docs/${"**/a/".repeat(10)}z` })).toBe(`no readable files match "docs/${"**/a/".repeat(10)}z"`);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(await ok(box, "list_files", { pattern: `docs/${"**/a/".repeat(10)}**/f.txt` })).toBe(`docs/${"a/".repeat(60)}f.txt`);
    expect(await ok(box, "list_files", { pattern: "docs/{a,b}/**/*.txt" })).toBe(`docs/${"a/".repeat(60)}f.txt`);
    expect((await refused(box, "list_files", { pattern: "docs/{a/b,c}/*.txt" })).message).toBe(`the pattern "docs/{a/b,c}/*.txt" has a {…} group holding a '/', a wildcard or another group (list a folder and narrow it down instead)`);
    // {…} groups are alternations: a run of them backtracks within one name as '*' do
    expect((await refused(box, "list_files", { pattern: `docs/${"{,?}".repeat(40)}x` })).message).toMatch(/has too many '\*' or \{…\} groups/);
    expect((await refused(box, "list_files", { pattern: "docs/{,?}x" })).message).toMatch(/has a \{…\} group holding a '\/', a wildcard or another group/);
    expect((await refused(box, "list_files", { pattern: "docs/{a,b}/{a,b}/{a,b}/x" })).message).toMatch(/has more than 2 \{…\} groups/);
    expect((await refused(box, "list_files", { pattern: "docs/*{a,b}*{c,d}" })).message).toMatch(/has too many '\*' or \{…\} groups/);
    expect((await refused(box, "list_files", { pattern: "docs/**/" })).message).toMatch(/has an empty path segment/);
    expect((await refused(box, "list_files", { pattern: "docs/*\\/*" })).message).toMatch(/has an escaped '\/'/);
    expect(await ok(box, "list_files", { pattern: "docs/**/f.{txt,md}" })).toBe(`docs/${"a/".repeat(60)}f.txt`);
    expect((await refused(box, "list_files", { pattern: `docs/${"*/".repeat(40)}x` })).message).toMatch(/has more than 32 path segments/);
  });

  it("listing and search stop at their caps and say so", async () => {
    const { dir } = await fixture();
    await mkdir(path.join(dir, "docs", "many"));
    for (let i = 0; i < 30; i++) await writeFile(path.join(dir, "docs", "many", `f${String(i).padStart(2, "0")}.md`), "hit\nhit\n");
    LIMITS.listFiles = 5;
    LIMITS.searchMatches = 3;
    const box = await tools(dir, { read: ["docs/**"] });
    const listed = await ok(box, "list_files", { pattern: "docs/many/*" });
    expect(listed).toBe("docs/many/f00.md\ndocs/many/f01.md\ndocs/many/f02.md\ndocs/many/f03.md\ndocs/many/f04.md\n\n[list_files: only the first 5 files are listed; use a narrower pattern]");
    expect(await ok(box, "search_files", { query: "hit", pattern: "docs/many/*.md" })).toBe(
      "docs/many/f00.md:1: hit\ndocs/many/f00.md:2: hit\ndocs/many/f01.md:1: hit\n\n[search_files: only the first 3 matching lines are shown]",
    );
  });
});

describe("one reply's tool uses", () => {
  it("past TURN_LIMITS.uses are answered 'not run'; past TURN_LIMITS.resultChars the later results are withheld; searches side by side raise no listener warning", async () => {
    const { dir } = await fixture();
    await writeFile(path.join(dir, "docs", "big.md"), ("x".repeat(99) + "\n").repeat(990));
    const box = await tools(dir, { read: ["docs/**"] });
    const signal = new AbortController().signal;
    const events: ToolEvent[] = [];
    const many = Array.from({ length: TURN_LIMITS.uses + 8 }, (_, i) => ({ id: `u${i}`, name: "search_files", input: { query: "line 2" } }));
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      const results = await box.run(many, signal, (e) => events.push(e));
      expect(results.map((r) => r.toolUseId)).toEqual(many.map((u) => u.id));
      expect(results.slice(0, TURN_LIMITS.uses).every((r) => r.content === "docs/guide.md:2: line 2")).toBe(true);
      for (const r of results.slice(TURN_LIMITS.uses)) {
        expect(r).toMatchObject({ isError: true, content: `not run: one reply may ask for at most ${TURN_LIMITS.uses} tool uses; ask for the rest in your next reply` });
      }
      expect(events.filter((e) => e.error === "too_many")).toHaveLength(8);
      await new Promise((r) => setImmediate(r));
      expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
    // ten reads of 99,000 characters: four fit in 400,000, the rest are withheld (in the order asked)
    const reads = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, name: "read_file", input: { path: "docs/big.md", limit: 2000 } }));
    const read = await box.run(reads, signal, () => {});
    expect(read.map((r) => r.isError)).toEqual([false, false, false, false, true, true, true, true, true, true]);
    expect(read[4]!.content).toMatch(/^result withheld: this reply's tool results passed 400,000 characters \(the tool did run\)/);
  });
});
