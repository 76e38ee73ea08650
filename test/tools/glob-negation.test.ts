// A `!` in a permission glob. A glob is matched as its fixed folders and the wildcard rest (globs.ts); picomatch
// reads a `!` that starts a pattern as a negation, so a rest starting with one (`docs/!*.md`) would have allowed
// everything under docs/ it does not name, dot files and all, where the whole glob names files called `!….md`.
// And `./!secret/**` is as negated as `!secret/**`: split, it granted secret/**, the very folder it excluded.
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Toolbox } from "../../runtime/tools/toolbox.ts";
import { GlobSet } from "../../runtime/tools/globs.ts";
import { globProblem, NO_PERMISSIONS, parsePermissions } from "../../runtime/tools/permissions.ts";
import { VvmRaise, type Value } from "../../runtime/values.ts";
import { useFreshDirs } from "../support/fixtures.ts";

const fresh = useFreshDirs("vvm-glob-negation-");

function program(): string {
  const dir = realpathSync(fresh());
  mkdirSync(path.join(dir, "docs", ".git"), { recursive: true });
  mkdirSync(path.join(dir, "docs", "deep"), { recursive: true });
  mkdirSync(path.join(dir, "secret"), { recursive: true });
  for (const f of ["docs/!notes.md", "docs/guide.md", "docs/.env", "docs/.git/config", "docs/deep/plan.txt", "secret/key.pem"]) writeFileSync(path.join(dir, f), "TOKEN=abc\n");
  return dir;
}

describe("a '!' at the start of a glob's wildcard part", () => {
  it("is the first character of a name, as in the whole glob, not a negation of the rest", async () => {
    const dir = program();
    const globs = await GlobSet.compile(["docs/!*.md"], dir);
    expect(globs.matches(path.join(dir, "docs", "!notes.md"))).toBe(true);
    for (const f of ["docs/guide.md", "docs/.env", "docs/.git/config", "docs/deep/plan.txt"]) expect(globs.matches(path.join(dir, f)), f).toBe(false);
  });

  it("grants a model no file the glob does not name", async () => {
    const dir = program();
    const box = await Toolbox.create({ ...NO_PERMISSIONS, read: ["docs/!*.md"] }, { programDir: dir, agent: "a", shell: { env: {}, confirm: null } });
    const uses = ["docs/.env", "docs/.git/config", "docs/deep/plan.txt", "docs/!notes.md"].map((p, i) => ({ id: `t${i}`, name: "read_file", input: { path: p } }));
    const results = await box.run(uses, new AbortController().signal, () => {});
    expect(results.map((r) => r.isError)).toEqual([true, true, true, false]);
    expect(results[0].content).toMatch(/^permission denied: reading docs\/\.env/);
  });
});

describe("a negated glob behind './'", () => {
  it("is refused like '!secret/**', not split into a grant of secret/**", () => {
    for (const g of ["./!secret/**", "././!secret/**", "!secret/**"]) expect(globProblem(g), g).toMatch(/is negated/);
    const site = { path: "main.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };
    expect(() => parsePermissions(new Map<string, Value>([["read", ["./!secret/**"]]]), site)).toThrow(VvmRaise);
    // a `!` inside a folder name is no negation
    expect(globProblem("docs/!drafts/**")).toBeNull();
  });
});

describe("a '!' opening a bracket class", () => {
  it("negates the class, as in a shell: config/[!s]* allows what does not start with s (dot names aside), not only what does", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "config"));
    for (const f of ["secrets.env", "app.env", "!x", ".env"]) writeFileSync(path.join(dir, "config", f), "x\n");
    const globs = await GlobSet.compile(["config/[!s]*"], dir);
    expect(globs.matches(path.join(dir, "config", "secrets.env"))).toBe(false);
    expect(globs.matches(path.join(dir, "config", "app.env"))).toBe(true);
    expect(globs.matches(path.join(dir, "config", "!x"))).toBe(true);
    // nor does a negated class open a name starting with a dot, as '*' does not ([^s] neither)
    expect(globs.matches(path.join(dir, "config", ".env"))).toBe(false);
    const caret = await GlobSet.compile(["config/[^s]*", "**/[!_]*"], dir);
    expect(caret.matches(path.join(dir, "config", ".env"))).toBe(false);
    expect(caret.matches(path.join(dir, "config", "app.env"))).toBe(true);
  });
});

describe("names starting with a dot", () => {
  it("are matched only by a glob that names a dot: a '{…}' group or an extended glob of wildcards does not reach them", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "config", ".git"), { recursive: true });
    for (const f of ["config/.env", "config/app.env", "config/.git/config", "config/a.json"]) writeFileSync(path.join(dir, f), "x\n");
    const globs = await GlobSet.compile(["config/{*.json,*.env}", "config/**/@(*)", "config/+(*)/**"], dir);
    expect(globs.matches(path.join(dir, "config", "app.env"))).toBe(true);
    expect(globs.matches(path.join(dir, "config", "a.json"))).toBe(true);
    expect(globs.matches(path.join(dir, "config", ".env"))).toBe(false);
    expect(globs.matches(path.join(dir, "config", ".git", "config"))).toBe(false);
    // named, they are granted
    const named = await GlobSet.compile(["config/{.env,*.json}", "config/.git/**"], dir);
    expect((await GlobSet.compile(["config/\\.env*"], dir)).matches(path.join(dir, "config", ".env"))).toBe(true);
    expect(named.matches(path.join(dir, "config", ".env"))).toBe(true);
    expect(named.matches(path.join(dir, "config", ".git", "config"))).toBe(true);
  });

  it("a '{…}' choice that names a dot grants that name, and its other choices still skip dot names", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "config", ".hidden"), { recursive: true });
    for (const f of ["config/.env", "config/a.json", "config/.secret.json", "config/.hidden/b.json", "config/{a,b}", "config/a"]) writeFileSync(path.join(dir, f), "x\n");
    const globs = await GlobSet.compile(["config/{.env,*.json}", "config/{.hidden,*}/*.json"], dir);
    expect(globs.matches(path.join(dir, "config", ".env"))).toBe(true);
    expect(globs.matches(path.join(dir, "config", "a.json"))).toBe(true);
    expect(globs.matches(path.join(dir, "config", ".hidden", "b.json"))).toBe(true);
    expect(globs.matches(path.join(dir, "config", ".secret.json"))).toBe(false);
    // an escaped brace is a character of the name, not a choice
    const escaped = await GlobSet.compile(["config/\\{a,b}"], dir);
    expect(escaped.matches(path.join(dir, "config", "{a,b}"))).toBe(true);
    expect(escaped.matches(path.join(dir, "config", "a"))).toBe(false);
    // a glob whose choices would make too many globs is matched as written (here: no dot named, so none reached)
    const many = await GlobSet.compile([`config/${"{a,b,c,d}".repeat(5)}*.json`], dir);
    expect(many.matches(path.join(dir, "config", ".secret.json"))).toBe(false);
  });
});

describe("a glob that names one dot", () => {
  // picomatch's dot: false guards its own `*`, `?` and `**`, not an extended glob's choices nor a negated
  // class: a dot named somewhere in the glob must not let its wildcards reach other dot names
  it("grants no other dot name through an extended glob or a negated class", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "config", ".cache"), { recursive: true });
    mkdirSync(path.join(dir, "config", "x"), { recursive: true });
    for (const f of ["config/.env", "config/a.json", "config/.secret.json", "config/.cache/.keep", "config/x/.keep", "config/.npmrc"]) writeFileSync(path.join(dir, f), "x\n");
    const at = (g: string, f: string) => GlobSet.compile([g], dir).then((s) => s.matches(path.join(dir, f)));
    expect(await at("config/@(.env|*.json)", "config/.env")).toBe(true);
    expect(await at("config/@(.env|*.json)", "config/a.json")).toBe(true);
    expect(await at("config/@(.env|*.json)", "config/.secret.json")).toBe(false);
    expect(await at("config/!(.env)", "config/.npmrc")).toBe(false);
    expect(await at("config/[^s]*/.keep", "config/x/.keep")).toBe(true);
    expect(await at("config/[^s]*/.keep", "config/.cache/.keep")).toBe(false);
    // a glob judged whole (its choices would make too many globs) is held to the same rule
    const many = `config/{.env,*.json}${"{,a,b,c}".repeat(4)}`;
    expect(await at(many, "config/.env")).toBe(true);
    expect(await at(many, "config/.secret.json")).toBe(false);
  });
});

describe("a glob's {…} ranges", () => {
  it("count toward the 256 globs a glob may expand to: {1..999}{1..999} is judged whole, not a million globs", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "logs"));
    const globs = await GlobSet.compile(["logs/{1..999}{1..999}.log", "logs/{1..3}.txt"], dir);
    expect((globs as unknown as { globs: unknown[] }).globs.length).toBeLessThanOrEqual(4);
    expect(globs.matches(path.join(dir, "logs", "12345.log"))).toBe(true);
    expect(globs.matches(path.join(dir, "logs", "2.txt"))).toBe(true);
    expect(globs.matches(path.join(dir, "logs", "4.txt"))).toBe(false);
  });
});

describe("a glob's {…} range judged whole", () => {
  it("matches the numbers it spans, not a class of their digits", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "logs"));
    const globs = await GlobSet.compile(["logs/{1..999}.log", "logs/{2..10}{a,b,c,d,e,f,g,h,i,j,k}{a,b,c,d,e,f,g,h,i,j,k}.txt", "logs/{1..1000000..2}.csv"], dir);
    for (const f of ["1.log", "12.log", "999.log", "10ab.txt", "2kk.txt"]) expect(globs.matches(path.join(dir, "logs", f)), f).toBe(true);
    for (const f of ["1000.log", "0.log", "1ab.txt", "11ab.txt", "1.csv"]) expect(globs.matches(path.join(dir, "logs", f)), f).toBe(false);
  });
});

describe("a glob's empty {…} choice", () => {
  it("names nothing below the folder, as the whole glob did, rather than failing the call (notes/{a.md,})", async () => {
    const dir = realpathSync(fresh());
    mkdirSync(path.join(dir, "notes"));
    writeFileSync(path.join(dir, "notes", "a.md"), "x\n");
    const globs = await GlobSet.compile(["notes/{a.md,}", "notes/{,}"], dir);
    expect(globs.matches(path.join(dir, "notes", "a.md"))).toBe(true);
    expect(globs.matches(path.join(dir, "notes", "b.md"))).toBe(false);
    expect(globs.matches(path.join(dir, "notes"))).toBe(false);
  });
});
