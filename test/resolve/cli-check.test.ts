// `vvm check` through the real CLI: exit codes, the diagnostic shape, and colours.
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { writeProgram, type TmpProgram } from "../support/program.ts";

let prog: TmpProgram | null = null;
afterEach(() => {
  prog?.cleanup();
  prog = null;
});

const ESC = "\x1b[";

describe("vvm check", () => {
  it("exits 0 for a valid program and prints its warnings as path:line:col: CODE message, source line, caret", async () => {
    prog = writeProgram({ "prog.vvm": `agent a(model="haiku")\nunused = @a \`hi\`(())\nkept = 1\nexport kept\n` });
    const r = await runCli(["check", "prog.vvm"], { cwd: prog.dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "prog.vvm:2:1: W030 variable 'unused' is assigned at module level but never read\n" +
        "  unused = @a `hi`(())\n" +
        "  ^~~~~~\n",
    );
  });

  it("prints a diagnostic's hint under the caret (issue 19)", async () => {
    prog = writeProgram({ "prog.vvm": "r = @agent `hi`(())\ny = f(input)\n" });
    const r = await runCli(["check", "prog.vvm"], { cwd: prog.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "prog.vvm:1:6: E010 'agent' is a reserved word and cannot be used as an agent name\n" +
        "  r = @agent `hi`(())\n" +
        "       ^~~~~\n" +
        '  hint: declare an agent and call it by its name: agent worker(model="sonnet", prompt="…"), then @worker\n' +
        "prog.vvm:2:7: E010 'input' is a reserved word and cannot be used as an argument\n" +
        "  y = f(input)\n" +
        "        ^~~~~\n" +
        "  hint: use another name, such as data or item; `it` is the implicit input\n",
    );
  });

  it("exits 0 silently for a program without diagnostics", async () => {
    prog = writeProgram({ "prog.vvm": `x = 1\nexport x\n` });
    const r = await runCli(["check", "prog.vvm"], { cwd: prog.dir });
    expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it("exits 2 and lists every error in order, in every module", async () => {
    prog = writeProgram({
      "prog.vvm": `from "./lib/m.vvm" import f\nbreak\nx = @nobody \`hi\`(())\nexport x\nexport f\n`,
      "lib/m.vvm": `def f():\n  return 1\nreturn 2\nexport f\n`,
    });
    const r = await runCli(["check", "prog.vvm"], { cwd: prog.dir });
    expect(r.code).toBe(2);
    const heads = r.stderr.split("\n").filter((l) => /^\S+:\d+:\d+: /.test(l));
    expect(heads).toEqual([
      "lib/m.vvm:3:1: E080 return outside a function",
      "prog.vvm:2:1: E081 break outside a loop",
      "prog.vvm:3:6: E040 unknown agent '@nobody'",
    ]);
    expect(r.stderr).toContain("  x = @nobody `hi`(())\n       ^~~~~~\n");
  });

  it("shows paths outside the working directory as absolute paths", async () => {
    prog = writeProgram({ "prog/main.vvm": `break\n`, "elsewhere/keep": "" });
    const r = await runCli(["check", prog.file("prog/main.vvm")], { cwd: prog.file("elsewhere") });
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe(`${prog.file("prog/main.vvm")}:1:1: E081 break outside a loop`);
  });

  it("exits 2 with a diagnostic for a binary file (no stack trace)", async () => {
    prog = writeProgram({ "bin.vvm": new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01]) });
    const r = await runCli(["check", "bin.vvm"], { cwd: prog.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("bin.vvm:1:5: E001 cannot check bin.vvm: not a text file: a NUL byte (binary file?) at line 1, column 5\n");
  });

  it("exits 64 for a missing file, a directory, a missing argument or an unknown flag", async () => {
    prog = writeProgram({ "dir/x.vvm": "" });
    const missing = await runCli(["check", "nope.vvm"], { cwd: prog.dir });
    expect(missing.code).toBe(64);
    expect(missing.stderr).toBe("vvm: nope.vvm: no such file\n");
    const dir = await runCli(["check", "dir"], { cwd: prog.dir });
    expect(dir.code).toBe(64);
    expect(dir.stderr).toBe("vvm: dir: not a file\n");
    expect((await runCli(["check"], { cwd: prog.dir })).code).toBe(64);
    const flag = await runCli(["check", "--frobnicate", "dir/x.vvm"], { cwd: prog.dir });
    expect(flag.code).toBe(64);
    expect(flag.stderr).toBe("error: unknown option '--frobnicate'\n(run 'vvm check --help' for usage)\n");
    // each mistake points to the help of the command it was made in
    for (const [args, help] of [[["nosuch"], "vvm"], [["memory", "nosuch"], "vvm memory"], [["memory", "show"], "vvm memory show"], [["runs", "cat"], "vvm runs cat"]] as const) {
      const r = await runCli([...args], { cwd: prog.dir });
      expect(r.code, args.join(" ")).toBe(64);
      expect(r.stderr, args.join(" ")).toMatch(new RegExp(`^error: .*\\n\\(run '${help} --help' for usage\\)\\n$`));
    }
    // a flag another command takes: commander's suggestion follows on the same line, not after an escaped \n
    const suggested = await runCli(["test", "--updat", "dir"], { cwd: prog.dir });
    expect(suggested).toMatchObject({ code: 64, stderr: expect.stringMatching(/^error: unknown option '--updat' \(Did you mean --update\?\)\n/) });
    // a count too long to be one says so, rather than asking for one of at least 1
    const huge = await runCli(["run", "--concurrency", "99999999999999999", "dir/x.vvm"], { cwd: prog.dir });
    expect(huge.code).toBe(64);
    expect(huge.stderr).toContain("expected a whole number of at most 15 digits");
    expect((await runCli(["run", "--concurrency", "0", "dir/x.vvm"], { cwd: prog.dir })).stderr).toContain("expected a whole number of at least 1");
  });

  it("prints --help and --version on stdout, with defaults in the units the flags take", async () => {
    const help = await runCli(["run", "--help"], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/\(default: 60s\)/);
    expect(help.stderr).toBe("");
    // an empty --script was read as the working directory (": a directory, not a file")
    for (const cmd of ["check", "run"]) {
      expect(await runCli([cmd, ""], {})).toMatchObject({ code: 64, stdout: "", stderr: "vvm: an empty file name: name the .vvm program\n" });
    }
    for (const flag of ["--judge-model", "--trace", "--script"]) {
      const blank = await runCli(["run", flag, " ", "x.vvm"], {});
      expect(blank.code).toBe(64);
      expect(blank.stderr).toContain("expected a value, got an empty one");
    }
    // a repeatable flag's empty list is no default a user can read: it printed as `(default: [])`
    for (const cmd of [["run"], ["memory", "forget"]]) {
      const h = await runCli([...cmd, "--help"], {});
      expect(h.stdout).toMatch(/repeatable/);
      expect(h.stdout).not.toMatch(/default: \[/);
    }
    const version = await runCli(["--version"], {});
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it("Ctrl-C that arrives while a program is checked stops both commands with 130 before anything runs", async () => {
    prog = writeProgram({ "prog.vvm": 'x = 1\nexport x\n' });
    const ac = new AbortController();
    ac.abort();
    for (const cmd of ["check", "run"]) {
      const r = await runCli([cmd, "prog.vvm"], { cwd: prog.dir, signal: ac.signal });
      expect(r.code).toBe(130);
      expect(r.stdout).toBe("");
    }
  });

  it("a flat 200,000-line program checks (no false 'nested too deeply'), printing 50 of each code and a count", async () => {
    prog = writeProgram({ "flat.vvm": Array.from({ length: 200_000 }, (_, i) => `x${i} = 2\n`).join("") });
    const r = await runCli(["check", "flat.vvm"], { cwd: prog.dir });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("E001");
    expect(r.stderr.match(/: W030 /g)).toHaveLength(50);
    expect(r.stderr).toMatch(/flat\.vvm: 199950 more W030 not shown\n$/);
  }, 60_000);

  it("colours on a terminal or with FORCE_COLOR, never with NO_COLOR", async () => {
    prog = writeProgram({ "prog.vvm": `break\n` });
    const tty = await runCli(["check", "prog.vvm"], { cwd: prog.dir, stderrIsTTY: true });
    expect(tty.code).toBe(2);
    expect(tty.stderr).toContain(ESC);
    const noColor = await runCli(["check", "prog.vvm"], { cwd: prog.dir, stderrIsTTY: true, env: { NO_COLOR: "1" } });
    expect(noColor.stderr).not.toContain(ESC);
    const pipe = await runCli(["check", "prog.vvm"], { cwd: prog.dir });
    expect(pipe.stderr).not.toContain(ESC);
    const forced = await runCli(["check", "prog.vvm"], { cwd: prog.dir, env: { FORCE_COLOR: "1" } });
    expect(forced.stderr).toBe(tty.stderr);
    // Same text once the colour codes are removed.
    // eslint-disable-next-line no-control-regex
    expect(tty.stderr.replace(/\x1b\[[0-9;]*m/g, "")).toBe(pipe.stderr);
  });
});
