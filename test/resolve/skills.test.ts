// The program-wide skill registry (E030–E032, W001) and per-module skill visibility (W010).
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkProgram } from "../../src/check.ts";
import { isKnownSkillSource } from "../../src/resolve/skills.ts";
import { writeProgram, type TmpProgram } from "../support/program.ts";

let prog: TmpProgram | null = null;
afterEach(() => {
  prog?.cleanup();
  prog = null;
});

const where = (p: TmpProgram, d: { code: string; path: string; span: { line: number; col: number } }) =>
  `${path.relative(p.dir, d.path)} ${d.code} ${d.span.line}:${d.span.col}`;

describe("skill registry", () => {
  it("maps every skill name to its source across modules; agreeing modules are fine", async () => {
    prog = writeProgram({
      "main.vvm": `import "web-search" from "github:acme/skills"\nfrom "./lib.vvm" import run\nx = run(1)\nexport x\n`,
      "lib.vvm": `import "web-search" from "github:acme/skills"\nimport "pdf" from "npm:@acme/pdf"\nagent a(model="haiku", skills=["web-search", "pdf"])\ndef run(v):\n  return @a \`go\`(v)\nexport run\n`,
    });
    const result = await checkProgram(prog.file("main.vvm"));
    // (W025: neither is there to load, at the first import of each)
    expect(result.diagnostics.map((d) => where(prog!, d))).toEqual(["lib.vvm W025 1:26", "lib.vvm W025 2:19"]);
    expect([...result.skills].sort()).toEqual([
      ["pdf", "npm:@acme/pdf"],
      ["web-search", "github:acme/skills"],
    ]);
  });

  it("E032 names the module that registered the other source first (dependencies load first)", async () => {
    prog = writeProgram({
      "main.vvm": `import "s" from "./skills/s"\nfrom "./lib.vvm" import v\nexport v\n`,
      "lib.vvm": `import "s" from "github:other/s"\nv = 1\nexport v\n`,
    });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => where(prog!, d))).toEqual(["lib.vvm W025 1:17", "main.vvm E032 1:17"]);
    expect(result.diagnostics[1]!.message).toBe(`skill 's' is imported from "./skills/s" here but from "github:other/s" in lib.vvm:1`);
    expect(result.skills.get("s")).toBe("github:other/s");
  });

  it("W010 is per module: a skill imported by another module does not count", async () => {
    prog = writeProgram({
      "main.vvm": `import "web-search" from "github:acme/skills"\nfrom "./lib.vvm" import run\nx = run(1)\nexport x\n`,
      "lib.vvm": `agent a(model="haiku", skills=["web-search"])\ndef run(v):\n  return @a \`go\`(v)\nexport run\n`,
    });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => where(prog!, d))).toEqual(["lib.vvm W010 1:32", "main.vvm W025 1:26"]);
  });

  it("an unknown source form warns and still registers the name", async () => {
    prog = writeProgram({ "main.vvm": `import "s" from "https://example.com/s"\nagent a(model="haiku", skills=["s"])\nx = @a \`go\`(())\nexport x\n` });
    const result = await checkProgram(prog.file("main.vvm"));
    // (W001 says it; no W025 on top)
    expect(result.diagnostics.map((d) => d.code)).toEqual(["W001"]);
    expect(result.skillFiles.get("s")).toMatchObject({ ok: false });
    expect(result.skills.get("s")).toBe("https://example.com/s");
  });

  it("knows the portable source forms", () => {
    for (const ok of ["github:owner/repo", "github:a-b/c.d/sub/dir", "github:o/r@v1.2", "npm:pkg", "npm:@scope/pkg", "npm:pkg@^2", "./local", "../up/x"]) {
      expect(isKnownSkillSource(ok), ok).toBe(true);
    }
    for (const bad of ["github:owner", "github:/repo", "npm:", "local", "/abs/path", "gitlab:o/r", "https://x.y/z", ". /x"]) {
      expect(isKnownSkillSource(bad), bad).toBe(false);
    }
  });
});
