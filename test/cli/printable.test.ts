// Untrusted text printed for a person never carries terminal control sequences: a program's source in a
// diagnostic, its input descriptions in `vvm check`, an error value in an uncaught raise or a failed export.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { printable, printableColumns } from "../../src/printable.ts";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const dir = useTempDir("vvm-printable-");
const ESC = "\u001b";
const OSC_TITLE = `${ESC}]0;PWNED${"\u0007"}`;
const ERASE = `${ESC}[2K`;
/** Any C0 control but tab and newline, DEL, C1, a line or paragraph separator, or a bidi control. */
// eslint-disable-next-line no-control-regex -- what the test looks for
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]/;

describe("printable", () => {
  it("escapes controls, keeps newlines (or not) and keeps ordinary text", () => {
    expect(printable(`a${OSC_TITLE}b\nc\td`)).toBe("a\\u001b]0;PWNED\\u0007b\nc\td");
    expect(printable("a\nb", false)).toBe("a\\u000ab");
    expect(printable(`x\u009b31m \u202eevil`)).toBe("x\\u009b31m \\u202eevil");
    expect(printable("naïve café — 東京 🙂")).toBe("naïve café — 東京 🙂");
    expect(printableColumns(`ab${ESC}c`)).toBe("ab?c");
    // the Unicode line and paragraph separators break a line in editors and log viewers
    expect(printable("a\u2028b\u2029c")).toBe("a\\u2028b\\u2029c");
    expect(printableColumns('y = "a\u2028b"')).toBe('y = "a?b"');
  });
});

describe("through the CLI", () => {
  it("a diagnostic shows a hostile source line without its controls, the caret still under the mistake", async () => {
    const file = path.join(dir, "bad.vvm");
    await writeFile(file, `x = "${OSC_TITLE}${ERASE}" +\n`);
    const r = await runCli(["check", "bad.vvm"], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stderr).toContain(`x = "?]0;PWNED??[2K" +`);
  });

  it("the caret sits under the mistake as a terminal shows the line: wide characters take two cells, combining marks none", async () => {
    await writeFile(path.join(dir, "wide.vvm"), `x = "日本語の文字" + $\n`);
    await writeFile(path.join(dir, "marks.vvm"), `x = "e\u0301e\u0301" + $\n`);
    const wide = await runCli(["check", "wide.vvm"], { cwd: dir });
    expect(wide.stderr).toContain(`wide.vvm:1:16: E001 unexpected character '$'\n  x = "日本語の文字" + $\n  ${" ".repeat(21)}^\n`);
    const marks = await runCli(["check", "marks.vvm"], { cwd: dir });
    expect(marks.stderr).toContain(`marks.vvm:1:14: E001 unexpected character '$'\n  x = "e\u0301e\u0301" + $\n  ${" ".repeat(11)}^\n`);
  });

  it("vvm check lists inputs with their descriptions escaped", async () => {
    await writeFile(path.join(dir, "in.vvm"), `input ticket: "The ticket${"\\u001b"}]0;T${"\\u0007"}"\nexport ticket\n`);
    const r = await runCli(["check", "in.vvm"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stdout).toContain("The ticket\\u001b]0;T\\u0007");
  });

  it("a file's name (a module, the program) is shown escaped in diagnostics, tracebacks and vvm check's inputs", async () => {
    // a cloned repository names its files: ESC and a line break in a name must not reach the terminal raw
    const name = `m${OSC_TITLE}\nx.vvm`;
    await writeFile(path.join(dir, name), "def f():\n  raise \"boom\"\nunused = 1\nexport f\n");
    await writeFile(path.join(dir, "main.vvm"), `from "./${name.replace("\n", "\\n")}" import f\ninput a: "what"\nr = f()\nexport r\n`);
    const ran = await runCli(["run", "main.vvm", "--provider", "sim", "--arg", "a=1"], { cwd: dir });
    expect(ran.code).toBe(1);
    expect(ran.stderr).not.toMatch(RAW);
    expect(ran.stderr).toContain("m\\u001b]0;PWNED\\u0007\\u000ax.vvm:3:1: W030");
    expect(ran.stderr).toContain("uncaught error at m\\u001b]0;PWNED\\u0007\\u000ax.vvm:2:3:");
    await writeFile(path.join(dir, name), "input a: \"what\"\nexport a\n");
    const checked = await runCli(["check", name], { cwd: dir });
    expect(checked.code).toBe(0);
    expect(checked.stdout + checked.stderr).not.toMatch(RAW);
    expect(checked.stdout).toMatch(/^inputs of m\\u001b\]0;PWNED\\u0007\\u000ax\.vvm /);
    const missing = await runCli(["check", `${name}.gone`], { cwd: dir });
    expect(missing).toMatchObject({ code: 64, stderr: "vvm: m\\u001b]0;PWNED\\u0007\\u000ax.vvm.gone: no such file\n" });
  });

  it("an uncaught raise and a failed export print their error values escaped", async () => {
    await writeFile(path.join(dir, "raise.vvm"), `raise "boom${"\\u001b"}[2K"\n`);
    const raised = await runCli(["run", "raise.vvm", "--provider", "sim"], { cwd: dir });
    expect(raised.code).toBe(1);
    expect(raised.stderr).not.toMatch(RAW);
    await writeFile(path.join(dir, "export.vvm"), `r = json("{\\"error\\": {\\"kind\\": \\"k${"\\u009b"}31m\\", \\"message\\": \\"m\\"}}")\nexport r\n`);
    const exported = await runCli(["run", "export.vvm", "--provider", "sim"], { cwd: dir });
    expect(exported.code).toBe(1);
    expect(exported.stderr).not.toMatch(RAW);
    expect(exported.stderr).toContain("(k\\u009b31m)");
  });
});
