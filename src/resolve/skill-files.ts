// Loading each imported skill when the program is checked: its source names a folder (`./path` from the
// importing module, `npm:pkg` in a node_modules above it, `github:` from the user's skills folder), whose
// SKILL.md holds YAML front matter and the instructions. A skill that cannot be loaded is W025 here and
// error(kind="rejected") at a call that uses it (spec/agent-calls.md §8 "Skills").
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import type { LoadedSkill } from "../../runtime/skills.ts";
import { relativeUnder } from "./glob-prefix.ts";

/** A SKILL.md larger than this is refused: instructions go into every request of the agent. */
const MAX_SKILL_BYTES = 256 * 1024;

/** A github: skill's name is one folder of ~/.vvm/skills: no separator, and not `.` or `..`. */
const FOLDER_NAME = /^(?!\.\.?$)[^/\\\0]+$/;
/** An npm package name (`pkg`, `@scope/pkg`): each part starts with a letter, digit, `_` or `-`, so none is `..`. */
const PACKAGE_NAME = /^(@[a-z0-9_~-][a-z0-9._~-]*\/)?[a-z0-9_~-][a-z0-9._~-]*$/i;

/**
 * Where a skill's folder is; `skillsHome` is ~/.vvm/skills (null: no home directory known). `within` (for `./`, `../` and `npm:`) is the folder its source names it in: the
 * module's folder, or the one its leading `..` steps reach, and the project holding the node_modules folder.
 * Followed through links, the skill's folder must stay inside it: a cloned repository's `skills/x -> ~/.claude/skills/y`
 * (or a planted node_modules/pkg link) would otherwise put the user's files in the prompt and grant reading them.
 */
async function locate(name: string, source: string, fromModule: string, skillsHome: string | null): Promise<{ dir: string; within?: string } | { problem: string }> {
  // (the module's path is real: modules are loaded by their real paths)
  const base = path.dirname(fromModule);
  if (source.startsWith("./") || source.startsWith("../")) {
    const dir = path.resolve(base, source);
    const ups = path.relative(base, dir).split(path.sep).filter((part) => part === "..").length;
    return { dir, within: path.resolve(base, ...Array<string>(ups).fill("..")) };
  }
  if (source.startsWith("npm:")) {
    const spec = source.slice(4);
    // a version after the name (`pkg@^2`, `@scope/pkg@1`) chooses nothing here: the installed package is used
    const at = spec.indexOf("@", 1);
    const pkg = at > 0 ? spec.slice(0, at) : spec;
    if (!PACKAGE_NAME.test(pkg)) return { problem: `${JSON.stringify(pkg)} is not a package name (npm:pkg or npm:@scope/pkg)` };
    for (let dir = base; ; dir = path.dirname(dir)) {
      const candidate = path.join(dir, "node_modules", pkg);
      if (await isDirectory(candidate)) return { dir: candidate, within: dir };
      if (path.dirname(dir) === dir) return { problem: `the package ${pkg} is not installed in a node_modules folder above ${base} (npm install ${pkg})` };
    }
  }
  if (source.startsWith("github:")) {
    if (skillsHome === null) return { problem: "github: skills are read from ~/.vvm/skills/<name>/, and no home directory is known (HOME is empty or not an absolute path)" };
    // the name must not climb out of the skills folder
    if (!FOLDER_NAME.test(name)) return { problem: `github: skills are folders of ${skillsHome}, so the skill's name must be one folder name (no "/", "\\", "." or "..")` };
    const dir = path.join(skillsHome, name);
    if (await isDirectory(dir)) return { dir };
    return { problem: `github: skills are not downloaded; put the skill's folder at ${dir} (with its SKILL.md)` };
  }
  return { problem: `the source form is not one this runtime can load (github:owner/repo, npm:package, ./path or ../path)` };
}

async function isDirectory(p: string): Promise<boolean> {
  return (await fs.stat(p).catch(() => null))?.isDirectory() === true;
}

export async function loadSkill(name: string, source: string, fromModule: string, skillsHome: string | null): Promise<LoadedSkill> {
  const fail = (problem: string): LoadedSkill => ({ ok: false, name, source, problem });
  const where = await locate(name, source, fromModule, skillsHome);
  if ("problem" in where) return fail(where.problem);
  let dir: string;
  try {
    dir = await fs.realpath(where.dir);
  } catch {
    return fail(`there is no folder ${where.dir}`);
  }
  if (!(await isDirectory(dir))) return fail(`${where.dir} is not a folder`);
  if (where.within !== undefined) {
    const within = await fs.realpath(where.within).catch(() => where.within!);
    if (relativeUnder(within, dir) === null) {
      return fail(`${where.dir} leads through a symbolic link out of ${within} (to ${dir}), and a skill's folder is read only where its source names it`);
    }
  }
  const file = path.join(dir, "SKILL.md");
  let bytes: Buffer;
  try {
    // never through a link: the folder is the skill, a SKILL.md pointing elsewhere is not
    const fh = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const st = await fh.stat();
      if (!st.isFile()) return fail(`${file} is not a regular file`);
      if (st.size > MAX_SKILL_BYTES) return fail(`${file} is ${st.size} bytes; a SKILL.md may have at most ${MAX_SKILL_BYTES / 1024} KiB`);
      bytes = await fh.readFile();
    } finally {
      await fh.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(code === "ENOENT" ? `${dir} has no SKILL.md` : code === "ELOOP" ? `${file} is a symbolic link` : `${file} cannot be read (${code ?? String(err)})`);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return fail(`${file} is not UTF-8 text`);
  }
  const parsed = await parseSkillFile(text.replace(/^\uFEFF/, ""));
  if ("problem" in parsed) return fail(`${file}: ${parsed.problem}`);
  return { ok: true, name, source, dir, ...parsed };
}

/** SKILL.md: `---`, YAML front matter (a mapping with a `description`), `---`, then the instructions. */
async function parseSkillFile(text: string): Promise<{ description: string; instructions: string } | { problem: string }> {
  const m = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (m === null) return { problem: "it does not start with YAML front matter between --- lines (name, description)" };
  // the yaml package only builds data (never evaluates `---js` front matter) and keeps positions for messages
  // (`default`, the CommonJS module itself: in the bundle that is all its chunk exports; Node gives it too)
  const { parseDocument } = (await import("yaml")).default;
  const doc = parseDocument(m[1], { uniqueKeys: true });
  // nesting that runs the package's recursion out of stack is reported as such, not as a JavaScript RangeError
  const tooDeep = { problem: "its front matter nests lists or mappings too deeply to be read" };
  if (doc.errors.length > 0) return doc.errors[0].code === "RESOURCE_EXHAUSTION" ? tooDeep : { problem: `its front matter is not valid YAML (${doc.errors[0].message.split("\n")[0]})` };
  // (a bounded alias count: a "billion laughs" front matter must not expand without end)
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    if (err instanceof RangeError) return tooDeep;
    return { problem: `its front matter cannot be read (${err instanceof Error ? err.message.split("\n")[0] : String(err)})` };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return { problem: "its front matter is not a mapping of name, description" };
  const { description, name } = data as Record<string, unknown>;
  if (name !== undefined && typeof name !== "string") return { problem: "its front matter's name is not a string" };
  if (typeof description !== "string" || description.trim() === "") return { problem: "its front matter has no description" };
  const instructions = text.slice(m[0].length).trim();
  if (instructions === "") return { problem: "it has no instructions after its front matter" };
  return { description: description.trim(), instructions };
}
