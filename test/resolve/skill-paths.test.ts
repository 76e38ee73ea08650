// A skill's name and package never climb out of where its source form says the skill is: a github: name is
// one folder of ~/.vvm/skills, an npm: package is a folder of node_modules (spec/agent-calls.md §8 "Skills").
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadSkill } from "../../src/resolve/skill-files.ts";
import { useFreshDirs } from "../support/fixtures.ts";

const fresh = useFreshDirs("vvm-skill-paths-");

/** home/.vvm/skills (empty), project/main.vvm, and a skill folder `outside` beside them. */
function layout(): { skillsHome: string; module: string } {
  const tmp = fresh();
  const skillsHome = path.join(tmp, "home", ".vvm", "skills");
  mkdirSync(skillsHome, { recursive: true });
  mkdirSync(path.join(tmp, "project", "node_modules"), { recursive: true });
  mkdirSync(path.join(tmp, "outside"));
  writeFileSync(path.join(tmp, "outside", "SKILL.md"), "---\ndescription: not a skill of this place\n---\nRead secret.txt.\n");
  writeFileSync(path.join(tmp, "project", "main.vvm"), "");
  return { skillsHome, module: path.join(tmp, "project", "main.vvm") };
}

describe("skill names and packages stay where their source form points", () => {
  it("a github: skill's name is one folder of ~/.vvm/skills: '..' or a slash in it loads nothing", async () => {
    const { skillsHome, module } = layout();
    for (const name of ["../../../outside", "..", ".", "a/../../../../outside", "x\\y"]) {
      const r = await loadSkill(name, "github:acme/x", module, skillsHome);
      expect(r, name).toMatchObject({ ok: false });
      expect((r as { problem: string }).problem, name).toMatch(/one folder name/);
    }
  });

  it("an npm: package is a package name: '..' segments load nothing, even in a scope", async () => {
    const { skillsHome, module } = layout();
    for (const source of ["npm:../../outside", "npm:@x/../../../outside", "npm:..", "npm:@../..", "npm:/abs"]) {
      const r = await loadSkill("s", source, module, skillsHome);
      expect(r, source).toMatchObject({ ok: false });
      expect((r as { problem: string }).problem, source).toMatch(/not a package name/);
    }
  });

  it("plain names still load", async () => {
    const { skillsHome, module } = layout();
    mkdirSync(path.join(skillsHome, "web-search.v2"));
    writeFileSync(path.join(skillsHome, "web-search.v2", "SKILL.md"), "---\ndescription: d\n---\nDo it.\n");
    mkdirSync(path.join(path.dirname(module), "node_modules", "@acme", "pdf"), { recursive: true });
    writeFileSync(path.join(path.dirname(module), "node_modules", "@acme", "pdf", "SKILL.md"), "---\ndescription: d\n---\nDo it.\n");
    expect(await loadSkill("web-search.v2", "github:acme/x", module, skillsHome)).toMatchObject({ ok: true });
    expect(await loadSkill("pdf", "npm:@acme/pdf@^2", module, skillsHome)).toMatchObject({ ok: true });
  });

  it("a ./ or npm: skill folder that a link leads out of its place is not loaded; a link staying inside, or a ../ path as written, is", async () => {
    const { skillsHome, module } = layout();
    const project = path.dirname(module);
    // a cloned repository's links to a folder of the user's (here `outside`, beside the project)
    mkdirSync(path.join(project, "skills"));
    symlinkSync(path.join(project, "..", "outside"), path.join(project, "skills", "linked"));
    symlinkSync(path.join(project, "..", "outside"), path.join(project, "node_modules", "evil"));
    for (const source of ["./skills/linked", "npm:evil"]) {
      const r = await loadSkill("s", source, module, skillsHome);
      expect(r, source).toMatchObject({ ok: false });
      expect((r as { problem: string }).problem, source).toMatch(/leads through a symbolic link out of .*project \(to .*outside\)/);
    }
    mkdirSync(path.join(project, "shared", "s"), { recursive: true });
    writeFileSync(path.join(project, "shared", "s", "SKILL.md"), "---\ndescription: d\n---\nDo it.\n");
    symlinkSync(path.join(project, "shared", "s"), path.join(project, "skills", "inside"));
    expect(await loadSkill("s", "./skills/inside", module, skillsHome)).toMatchObject({ ok: true });
    expect(await loadSkill("s", "../outside", module, skillsHome)).toMatchObject({ ok: true });
  });
});
