// W026: a literal read/write glob whose fixed folders go through a link out of the program's folder
// (a cloned repository that ships `out -> ~/.ssh` beside `write: ["out/**"]`).
import { mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkProgram } from "../../src/check.ts";
import { runCli } from "../support/cli.ts";
import { writeProgram, type TmpProgram } from "../support/program.ts";

let prog: TmpProgram | null = null;
let outside: TmpProgram | null = null;
afterEach(() => {
  prog?.cleanup();
  outside?.cleanup();
  prog = outside = null;
});

const SOURCE = [
  'agent w(model="haiku", permissions=perm(write=["out/**"], read=["docs/**", "inside/*.md", "deep/ssh/*", "/etc/*.conf"]))',
  'agent r(model="haiku", permissions={read: ["./out/notes.md"]})',
  'x = @w.with(permissions=perm(read=["out/{a,b}/*"])) `go`(())',
  'y = @{model="haiku", permissions=perm(write=["missing/**"])} `go`(())',
  "export x",
  "export y",
  "",
].join("\n");

function project(): { dir: string; target: string } {
  outside = writeProgram({ "secret.txt": "keys\n" });
  prog = writeProgram({ "main.vvm": SOURCE, "docs/a.md": "", "sub/b.md": "" });
  // out leads out; inside leads to a folder of the program; deep/ssh is a link one folder down
  symlinkSync(outside.dir, prog.file("out"));
  symlinkSync(prog.file("sub"), prog.file("inside"));
  mkdirSync(prog.file("deep"));
  symlinkSync(outside.dir, prog.file("deep/ssh"));
  return { dir: prog.dir, target: outside.dir };
}

describe("W026", () => {
  it("names each literal glob whose fixed folders go through a link out of the program's folder, and where it leads", async () => {
    const { dir, target } = project();
    const result = await checkProgram(path.join(dir, "main.vvm"));
    const found = result.diagnostics.filter((d) => d.code === "W026").map((d) => `${d.span.line}:${d.span.col} ${d.message}`);
    expect(found).toEqual([
      `1:48 write glob "out/**" goes through the symbolic link out, which leads out of the program's folder (to ${target}): the agent could write there (spec/agent-calls.md §8)`,
      `1:91 read glob "deep/ssh/*" goes through the symbolic link deep/ssh, which leads out of the program's folder (to ${target}): the agent could read there (spec/agent-calls.md §8)`,
      // (where the call layer would find the file, though it does not exist yet)
      `2:44 read glob "./out/notes.md" goes through the symbolic link out, which leads out of the program's folder (to ${path.join(target, "notes.md")}): the agent could read there (spec/agent-calls.md §8)`,
      `3:36 read glob "out/{a,b}/*" goes through the symbolic link out, which leads out of the program's folder (to ${target}): the agent could read there (spec/agent-calls.md §8)`,
    ]);
  });

  it("reads a glob's fixed folders as the call layer does (escapes, +, @), and never fails on a path it cannot follow", async () => {
    outside = writeProgram({ "id_rsa": "key\n" });
    prog = writeProgram({
      "main.vvm": `agent w(model="haiku", permissions=perm(write=["data+/**", "x@y/**", "data \\\\(old\\\\)/**", "file.txt/sub/**", "${"n".repeat(300)}/**", "loop/**", "gone/**", "far/loop/**"]))\nx = @w \`go\`(())\nexport x\n`,
      "file.txt": "",
    });
    for (const name of ["data+", "x@y", "data (old)"]) symlinkSync(outside.dir, prog.file(name));
    symlinkSync("loop", prog.file("loop"));
    symlinkSync(path.join(outside.dir, "missing"), prog.file("gone"));
    // far leads out, but to a link loop: the call layer cannot resolve far/loop and grants nothing there
    symlinkSync(outside.dir, prog.file("far"));
    symlinkSync("loop", path.join(outside.dir, "loop"));
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => d.message.replace(/ \(to .*/, ""))).toEqual([
      'write glob "data+/**" goes through the symbolic link data+, which leads out of the program\'s folder',
      'write glob "x@y/**" goes through the symbolic link x@y, which leads out of the program\'s folder',
      'write glob "data \\(old\\)/**" goes through the symbolic link data (old), which leads out of the program\'s folder',
    ]);
  });

  it("reaches vvm check's output as a warning, and nothing is reported without links", async () => {
    const { dir } = project();
    const r = await runCli(["check", "main.vvm"], { cwd: dir });
    expect(r.stderr).toContain('main.vvm:1:48: W026 write glob "out/**" goes through the symbolic link out');
    prog!.cleanup();
    prog = writeProgram({ "main.vvm": SOURCE, "out/x": "", "inside/y.md": "" });
    const clean = await checkProgram(prog.file("main.vvm"));
    expect(clean.diagnostics.filter((d) => d.code === "W026")).toEqual([]);
  });
});
