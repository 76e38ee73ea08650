// write_file and edit_file replace a file atomically: a write that fails part-way (a full disk, a file size
// limit, a kill) leaves the user's file as it was, never cut short or empty (spec/agent-calls.md §8).
// The file size limit (EFBIG) needs no privilege; a full disk (ENOSPC) needs a tiny tmpfs, so root on Linux.
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { chmod, chown, mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { NO_PERMISSIONS } from "../../runtime/tools/permissions.ts";
import { Toolbox } from "../../runtime/tools/toolbox.ts";
import { ROOT, testEnv } from "../support/cli.ts";
import { useFreshDirs } from "../support/fixtures.ts";
import { fill, useTinyDisk } from "../support/tiny-disk.ts";

const fresh = useFreshDirs("vvm-write-failure-");

async function box(dir: string): Promise<Toolbox> {
  return Toolbox.create({ ...NO_PERMISSIONS, read: ["out/**"], write: ["out/**"] }, { programDir: dir, agent: "a", shell: { env: {}, confirm: null } });
}

/** One tool use: what the model is told, and whether it is an error. */
async function use(dir: string, name: string, input: unknown): Promise<{ content: string; isError: boolean }> {
  const [r] = await (await box(dir)).run([{ id: "t1", name, input }], new AbortController().signal, () => {});
  return { content: r.content, isError: r.isError === true };
}

/** A program folder whose out/ holds `files`. */
function project(files: Record<string, string>): string {
  const dir = fresh();
  execFileSync("mkdir", ["-p", path.join(dir, "out")]);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, "out", name), text);
  return dir;
}

const ORIGINAL = "# Notes\n" + "the user's notes\n".repeat(20); // 348 bytes
const BIG = "x".repeat(64 * 1024);

describe("a write that fails part-way", () => {
  it("past the file size limit (EFBIG): write_file and edit_file leave the file whole, say what failed, and leave no temporary file", () => {
    const dir = project({ "notes.md": ORIGINAL });
    // a child whose file size limit (ulimit -f 1: at most 1 KiB) the new content passes; Node ignores SIGXFSZ
    const script = `
      const { Toolbox } = await import(${JSON.stringify(path.join(ROOT, "runtime/tools/toolbox.ts"))});
      const { NO_PERMISSIONS } = await import(${JSON.stringify(path.join(ROOT, "runtime/tools/permissions.ts"))});
      const big = "x".repeat(${BIG.length});
      const box = await Toolbox.create({ ...NO_PERMISSIONS, read: ["out/**"], write: ["out/**"] }, { programDir: ${JSON.stringify(dir)}, agent: "a", shell: { env: {}, confirm: null } });
      const uses = [
        { id: "w", name: "write_file", input: { path: "out/notes.md", content: big } },
        { id: "e", name: "edit_file", input: { path: "out/notes.md", old: "# Notes", new: big } },
        { id: "n", name: "write_file", input: { path: "out/new.md", content: big } },
      ];
      const results = [];
      for (const u of uses) results.push(...(await box.run([u], new AbortController().signal, () => {})));
      process.stdout.write(JSON.stringify(results));
    `;
    const child = spawnSync("sh", ["-c", `ulimit -f 1; exec "${process.execPath}" --import "${import.meta.resolve("tsx")}" --input-type=module -e "$0"`, script], { env: testEnv(), encoding: "utf8" });
    expect(child.stderr).toBe("");
    const [write, edit, created] = JSON.parse(child.stdout) as { content: string; isError: boolean }[];
    expect(write).toMatchObject({ isError: true, content: "out/notes.md was not written: writing the new content failed (EFBIG: the file would pass the size limit); the file is as it was" });
    expect(edit).toMatchObject({ isError: true, content: "out/notes.md was not written: writing the new content failed (EFBIG: the file would pass the size limit); the file is as it was" });
    expect(created).toMatchObject({ isError: true, content: "out/new.md was not written: writing the new content failed (EFBIG: the file would pass the size limit); no file was made" });
    expect(readdirSync(path.join(dir, "out"))).toEqual(["notes.md"]);
    return readFile(path.join(dir, "out", "notes.md"), "utf8").then((text) => expect(text).toBe(ORIGINAL));
  });

  describe("on a full disk (ENOSPC)", () => {
    const tinyDisk = useTinyDisk("ENOSPC tests");

    it("write_file and edit_file of a file larger than the room left: the file is as it was (root on Linux: a tmpfs)", async (ctx) => {
      const mount = tinyDisk();
      if (mount === null) return ctx.skip();
      const dir = path.join(mount, "prog");
      await mkdir(path.join(dir, "out"), { recursive: true });
      const file = path.join(dir, "out", "notes.md");
      const original = "# Notes\n" + "the user's notes\n".repeat(3000); // 51 KB
      await writeFile(file, original);
      fill(mount);
      // longer than the old file: in place, the write ran out of room part-way and cut the file short
      const full = "an agent's report\n".repeat(6000);
      expect(await use(dir, "write_file", { path: "out/notes.md", content: full })).toEqual({
        isError: true,
        content: "out/notes.md was not written: writing the new content failed (ENOSPC: the disk is full); the file is as it was",
      });
      expect(await readFile(file, "utf8")).toBe(original);
      expect((await use(dir, "edit_file", { path: "out/notes.md", old: "# Notes", new: full })).content).toBe(
        "out/notes.md was not written: writing the new content failed (ENOSPC: the disk is full); the file is as it was",
      );
      expect(await readFile(file, "utf8")).toBe(original);
      expect(readdirSync(path.join(dir, "out"))).toEqual(["notes.md"]);
      // with room again, the same write lands
      rmSync(path.join(mount, "filler"));
      expect(await use(dir, "write_file", { path: "out/notes.md", content: full })).toEqual({ isError: false, content: `wrote ${full.length} bytes to out/notes.md (replaced)` });
      expect(await readFile(file, "utf8")).toBe(full);
    });
  });
});

describe("a replacement keeps what the old file had", () => {
  it("its mode (less set-user-ID and set-group-ID) and, as root, its owner, no leftover beside it; a new file is still made with the usual mode", async () => {
    const dir = project({ "secret.md": "a\n", "script.sh": "#!/bin/sh\n", "tool": "#!/bin/sh\n" });
    await chmod(path.join(dir, "out", "secret.md"), 0o600);
    await chmod(path.join(dir, "out", "script.sh"), 0o750);
    await chmod(path.join(dir, "out", "tool"), 0o6755);
    const root = process.getuid?.() === 0;
    if (root) await chown(path.join(dir, "out", "script.sh"), 1234, 5678);
    expect((await use(dir, "write_file", { path: "out/secret.md", content: "b\n" })).content).toBe("wrote 2 bytes to out/secret.md (replaced)");
    expect((await use(dir, "edit_file", { path: "out/script.sh", old: "sh\n", new: "sh\necho hi\n" })).content).toBe("edited out/script.sh: replaced 1 occurrence (the file is now 18 bytes)");
    expect((await stat(path.join(dir, "out", "secret.md"))).mode & 0o7777).toBe(0o600);
    const script = await stat(path.join(dir, "out", "script.sh"));
    expect(script.mode & 0o7777).toBe(0o750);
    if (root) expect([script.uid, script.gid]).toEqual([1234, 5678]);
    // set-user-ID and set-group-ID go, as a write clears them: model text never becomes such a program
    expect((await use(dir, "write_file", { path: "out/tool", content: "#!/bin/sh\nid\n" })).isError).toBe(false);
    expect((await stat(path.join(dir, "out", "tool"))).mode & 0o7777).toBe(0o755);
    expect((await use(dir, "write_file", { path: "out/new/made.md", content: "n\n" })).content).toBe("wrote 2 bytes to out/new/made.md (created)");
    const umask = process.umask();
    expect((await stat(path.join(dir, "out", "new", "made.md"))).mode & 0o777).toBe(0o666 & ~umask);
    expect(readdirSync(path.join(dir, "out")).sort()).toEqual(["new", "script.sh", "secret.md", "tool"]);
  });

  it("edit_file leaves CRLF line ends, a missing final newline and other bytes as they were", async () => {
    const dir = project({ "dos.txt": "one\r\ntwo\r\nthree" });
    expect((await use(dir, "edit_file", { path: "out/dos.txt", old: "two", new: "2" })).isError).toBe(false);
    expect(await readFile(path.join(dir, "out", "dos.txt"), "utf8")).toBe("one\r\n2\r\nthree");
  });

  it("a leftover of a killed write is hidden: list_files and search_files pass it over", async () => {
    const dir = project({ "notes.md": "kept\n", ".notes.md.vvm-0123456789ab.tmp": "half a wri" });
    expect(await use(dir, "list_files", { pattern: "out/**" })).toEqual({ isError: false, content: "out/notes.md" });
    expect((await use(dir, "search_files", { query: "half|kept", pattern: "out/**" })).content).toBe("out/notes.md:1: kept");
  });

  it("a write into a folder that is a link out of the globs is still refused, and a link at the target is replaced by nothing", async () => {
    const dir = project({ "real.md": "real\n" });
    const outside = fresh();
    await symlink(outside, path.join(dir, "out", "away"));
    await symlink(path.join(dir, "out", "real.md"), path.join(dir, "out", "alias.md"));
    expect((await use(dir, "write_file", { path: "out/away/x.md", content: "x" })).content).toMatch(/^permission denied: writing out\/away\/x\.md .*leads through a link out of the program's directory/);
    expect((await use(dir, "write_file", { path: "out/alias.md", content: "x" })).content).toMatch(/^permission denied: out\/alias\.md is a symbolic link/);
    expect(readdirSync(outside)).toEqual([]);
    expect(await readFile(path.join(dir, "out", "real.md"), "utf8")).toBe("real\n");
  });
});
