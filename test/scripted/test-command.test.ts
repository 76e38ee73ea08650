// `vvm test` through the real CLI: every expectation kind passing and failing, strict scripts inside tests,
// unused rules, memory fixtures, snapshots (--update), malformed test files, exit codes, and the project's
// own examples.
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { ROOT, runCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";
import { snapshotFile } from "../../src/commands/test-snapshot.ts";
import { useStandin } from "../support/fixtures.ts";

const standin = useStandin();

const MAIN = `input topic: "what to note" = "deploys"
agent notes(model="haiku", prompt="You keep notes.", memory={ scope: "project", key: "team:notes" })
agent helper(model="haiku", prompt="You help.")
picky = helper.with(prompt="You are picky.")
summary = @notes \`Note what happened with {topic}.\`(())
check = @picky \`Check the summary.\`(summary)
ok = ?\`the summary is fine\`(summary)
export summary
export check
export ok
`;

const NOTES_REPLY = `
    reply: |
      Noted.
      \`\`\`vvm-memory
      {"digest": "## Deploys\\n- api 4.2 shipped\\n", "retain": ["api 4.2 shipped on Monday"]}
      \`\`\``;

const RULES = `
  - agent: notes
    match: "with deploys"${NOTES_REPLY}
  - { agent: helper, match: Check, reply: "Looks fine." }
  - { kind: predicate, verdict: true }
`;

/** [test name, its extra YAML (indented for a test's fields), the failure expected (null: it passes)] */
const MAIN_CASES: [string, string, string | null][] = [
  ["exports exact", `expect: { exports: { summary: Noted., check: Looks fine., ok: true } }`, null],
  ["exports exact, a value differs", `expect: { exports: { summary: Noted., check: Looks bad., ok: true } }`, `exports.check: expected "Looks bad.", got "Looks fine."`],
  ["exports exact, an export not expected", `expect: { exports: { summary: Noted., check: Looks fine. } }`, "exports.ok: not expected (got true)"],
  ["exports subset", `expect: { exports_subset: { ok: true } }`, null],
  ["exports subset differs", `expect: { exports_subset: { ok: false } }`, "exports_subset.ok: expected false, got true"],
  ["exports subset, a missing export", `expect: { exports_subset: { verdict: true } }`, "exports_subset.verdict: missing (expected true)"],
  ["exports pattern", `expect: { exports_match: { summary: "^Noted" } }`, null],
  ["exports pattern differs", `expect: { exports_match: { summary: "/^noted$/" } }`, `exports_match.summary: /^noted$/ does not match "Noted."`],
  ["calls per agent", `expect: { calls: { notes: 1, picky: 1 } }`, null],
  ["calls per agent differ", `expect: { calls: { helper: 1 } }`, "calls.helper: expected 1, got 0 (calls made: notes 1, picky 1)"],
  ["judges", `expect: { judges: 1 }`, null],
  ["judges differ", `expect: { judges: 2 }`, "judges: expected 2, got 1"],
  [
    "memory",
    `expect: { memory: [{ key: "team:notes", digest_contains: [api 4.2, Deploys], digest_equals: "## Deploys\\n- api 4.2 shipped", ledger: [patch], facts: [Monday], fact_count: 1 }] }`,
    null,
  ],
  ["memory digest_contains differs", `expect: { memory: [{ key: "team:notes", digest_contains: api 5 }] }`, `memory project:"team:notes": digest_contains: "api 5" is not in the digest "## Deploys\\n- api 4.2 shipped\\n"`],
  ["memory digest_equals differs", `expect: { memory: [{ key: "team:notes", digest_equals: "## Deploys" }] }`, `memory project:"team:notes": digest_equals: expected "## Deploys", got`],
  ["memory ledger differs", `expect: { memory: [{ key: "team:notes", ledger: [patch, patch] }] }`, `memory project:"team:notes": ledger: expected [patch, patch], got [patch]`],
  ["memory facts differ", `expect: { memory: [{ key: "team:notes", facts: [Tuesday] }] }`, `memory project:"team:notes": facts: no retained fact contains "Tuesday" (1 retained: "api 4.2 shipped on Monday")`],
  ["memory fact_count differs", `expect: { memory: [{ key: "team:notes", fact_count: 2 }] }`, `memory project:"team:notes": fact_count: expected 2, got 1`],
  ["memory missing", `expect: { memory: [{ key: "team:other" }] }`, `memory project:"team:other": the run left no such memory`],
  ["memory in user scope missing", `expect: { memory: [{ key: "team:notes", scope: user }] }`, `memory user:"team:notes": the run left no such memory`],
  [
    "inputs reach the program",
    `inputs: { topic: outages }
    script:
      - { agent: notes, match: "with outages", reply: "Noted outages." }
      - { agent: picky, reply: "Fine." }
      - { kind: judge, verdict: false }
    expect: { exports: { summary: Noted outages., check: Fine., ok: false } }`,
    null,
  ],
  [
    "a call no rule answers fails the test, naming it",
    `script:
      - { agent: notes, reply: "Noted." }
      - { kind: judge, verdict: true }
    expect: {}`,
    `no script rule answered agent call 'picky' at main.vvm:6:9: "Check the summary."`,
  ],
  [
    "a memory fixture is copied in before the run",
    `memory: fixture
    expect: { memory: [{ key: "team:notes", ledger: [external_edit, patch] }] }`,
    null,
  ],
];

const ERRORS = `input explode: "whether to raise" = false
agent a(model="haiku")
r = @a \`fails\`(())
if explode:
  raise "boom: the run was asked to fail"
export r
`;

const ERROR_CASES: [string, string, string | null][] = [
  ["error_exports", `expect: { error_exports: { r: timeout } }`, null],
  ["an error export nobody expects", `expect: {}`, `export r is an error value (timeout): "no reply`],
  ["error_exports, another kind", `expect: { error_exports: { r: rejected } }`, "error_exports.r: expected kind rejected, got timeout"],
  ["exports_subset may give an error value", `expect: { exports_subset: { r: { error: { kind: timeout } } } }`, null],
  ["raises", `inputs: { explode: true }\n    expect: { raises: thrown }`, null],
  ["raises with a message", `inputs: { explode: true }\n    expect: { raises: { kind: thrown, message: asked to fail } }`, null],
  ["raises, another kind", `inputs: { explode: true }\n    expect: { raises: timeout }`, "raises: expected kind timeout, got thrown (boom: the run was asked to fail)"],
  ["raises, another message", `inputs: { explode: true }\n    expect: { raises: { kind: thrown, message: kaboom } }`, `raises.message: expected it to contain "kaboom", got "boom: the run was asked to fail"`],
  ["raises, but the program finished", `expect: { raises: thrown, error_exports: { r: timeout } }`, "raises: expected an uncaught thrown error, but the program finished"],
  ["an uncaught error nobody expects", `inputs: { explode: true }\n    expect: {}`, "uncaught error (thrown): boom: the run was asked to fail"],
];

function testFile(program: string, script: string, cases: [string, string, string | null][]): string {
  return `program: ${program}\nscript:${script}\ntests:\n${cases.map(([name, body]) => `  - name: ${name}\n    ${body}\n`).join("")}`;
}

function project(extra: Record<string, string> = {}) {
  return writeProgram({
    "main.vvm": MAIN,
    "main.test.yaml": testFile("main.vvm", RULES, MAIN_CASES),
    "errors.vvm": ERRORS,
    "errors.test.yaml": testFile("errors.vvm", `\n  - { kind: agent, agent: a, error: { kind: timeout, message: "no reply in time" } }\n`, ERROR_CASES),
    // a hand-written digest, as a person would seed a memory
    "fixture/k-team_3anotes/digest.md": "## Deploys\n- nothing yet\n",
    ...extra,
  });
}

function lineOf(stdout: string, file: string, name: string): string {
  const line = stdout.split("\n").find((l) => l.startsWith("PASS") || l.startsWith("FAIL") ? l.includes(`${file}: ${name}`) || new RegExp(`${file}:\\d+: ${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `).test(l) : false);
  if (line === undefined) throw new Error(`no line for ${name} in:\n${stdout}`);
  return line;
}

describe("vvm test", () => {
  it("checks every kind of expectation, passing and failing, with the first difference named", async () => {
    const p = project();
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stderr).toBe("");
    for (const [file, cases] of [["main.test.yaml", MAIN_CASES], ["errors.test.yaml", ERROR_CASES]] as const) {
      for (const [name, , failure] of cases) {
        const line = lineOf(r.stdout, file, name);
        if (failure === null) expect(line, line).toBe(`PASS  ${file}: ${name}`);
        else expect(line, line).toMatch(new RegExp(`^FAIL  ${file}:\\d+: `));
        if (failure !== null) expect(line).toContain(`${name}: ${failure}`);
      }
    }
    const failing = [...MAIN_CASES, ...ERROR_CASES].filter((c) => c[2] !== null).length;
    const passing = MAIN_CASES.length + ERROR_CASES.length - failing;
    expect(r.stdout.endsWith(`\n${passing} passed, ${failing} failed\n`)).toBe(true);
    expect(r.code).toBe(1);
    // the failing line names the test's own line in its file
    expect(lineOf(r.stdout, "main.test.yaml", "judges differ")).toMatch(/^FAIL {2}main\.test\.yaml:(\d+): /);
    const n = Number(/^FAIL {2}main\.test\.yaml:(\d+): judges differ/m.exec(r.stdout)![1]);
    expect(readFileSync(p.file("main.test.yaml"), "utf8").split("\n")[n - 1]).toContain("- name: judges differ");
    // the program's own directory is never written: each test ran in a copy
    expect(() => readFileSync(p.file(".vvm/memory/k-team_3anotes/ledger.jsonl"))).toThrow();
  });

  it("all passing: exit 0; a rule that answered nothing is listed under its test without failing it", async () => {
    const p = writeProgram({
      "main.vvm": MAIN,
      "main.test.yaml": testFile("main.vvm", `${RULES}  - { agent: nobody, reply: "never asked" }\n`, [MAIN_CASES[0]!, MAIN_CASES[3]!]),
    });
    const r = await runCli(["test", "main.test.yaml"], { cwd: p.dir });
    expect(r.stdout).toBe(
      [
        "PASS  main.test.yaml: exports exact",
        "        unused rule 4 (line 12): kind agent, agent nobody",
        "PASS  main.test.yaml: exports subset",
        "        unused rule 4 (line 12): kind agent, agent nobody",
        "2 passed, 0 failed",
        "",
      ].join("\n"),
    );
    expect(r.code).toBe(0);
  });

  it("--update writes snapshots of exports and memory; later runs compare with them; a failing test keeps its old one", async () => {
    const cases: [string, string, string | null][] = [
      ["snapshotted", "expect: {}", null],
      ["fails", "expect: { judges: 5 }", "judges"],
    ];
    const p = writeProgram({ "main.vvm": MAIN, "main.test.yaml": testFile("main.vvm", RULES, cases) });
    const first = await runCli(["test", "--update"], { cwd: p.dir });
    expect(first.stdout).toContain("wrote main.test.snap.yaml (1 snapshot)\n");
    expect(first.code).toBe(1);
    const snap = parse(readFileSync(p.file("main.test.snap.yaml"), "utf8")) as { tests: Record<string, unknown> };
    expect(snap.tests).toEqual({
      snapshotted: {
        exports: { summary: "Noted.", check: "Looks fine.", ok: true },
        memory: { "project:team:notes": { digest: "## Deploys\n- api 4.2 shipped\n", ledger: ["patch"], facts: ["api 4.2 shipped on Monday"] } },
      },
    });

    const again = await runCli(["test"], { cwd: p.dir });
    expect(lineOf(again.stdout, "main.test.yaml", "snapshotted")).toBe("PASS  main.test.yaml: snapshotted");

    // the program's behaviour changes: the snapshot says where
    writeFileSync(p.file("main.test.yaml"), testFile("main.vvm", RULES.replace("Looks fine.", "Looks great."), cases));
    const changed = await runCli(["test"], { cwd: p.dir });
    expect(lineOf(changed.stdout, "main.test.yaml", "snapshotted")).toContain(`snapshotted: snapshot.exports.check: expected "Looks fine.", got "Looks great."`);
    expect(changed.code).toBe(1);

    // --update accepts it; the failing test still has no snapshot, and a snapshot is kept when its test fails
    await runCli(["test", "--update"], { cwd: p.dir });
    expect((parse(readFileSync(p.file("main.test.snap.yaml"), "utf8")) as { tests: { snapshotted: { exports: { check: string } } } }).tests.snapshotted.exports.check).toBe("Looks great.");
    writeFileSync(p.file("main.test.yaml"), testFile("main.vvm", RULES, [["snapshotted", "expect: { judges: 9 }", null]]));
    await runCli(["test", "--update"], { cwd: p.dir });
    expect((parse(readFileSync(p.file("main.test.snap.yaml"), "utf8")) as { tests: { snapshotted: { exports: { check: string } } } }).tests.snapshotted.exports.check).toBe("Looks great.");
  });

  describe("a malformed test file is one precise line, never a stack trace, and the other files still run", () => {
    const bad: [string, string, string][] = [
      ["YAML syntax", "tests: [\n", "bad.test.yaml:2:1: not valid YAML:"],
      ["unknown field", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { export: {} }\n", 'bad.test.yaml:5:15: test "x": expect: unknown field "export" (expected one of: exports,'],
      ["no tests", "program: main.vvm\n", 'bad.test.yaml:1:1: the test file: missing "tests", a list of tests'],
      ["an empty list of tests", "program: main.vvm\nscript: []\ntests: []\n", "bad.test.yaml:3:8: tests: the list is empty: a test file holds at least one test"],
      ["tests that are not a list", "program: main.vvm\nscript: []\ntests: { name: x }\n", "bad.test.yaml:3:8: tests: expected a list of tests such as"],
      ["a bad rule, at its place in the test file", "program: main.vvm\ntests:\n  - name: x\n    script:\n      - { reply: x, verdict: true }\n    expect: {}\n", "bad.test.yaml:5:9: rule 1: give exactly one answer"],
      ["no script", "program: main.vvm\ntests:\n  - name: x\n    expect: {}\n", 'bad.test.yaml:3:5: test "x": no script: give the rules'],
      ["a count that is not one", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { calls: { a: -1 } }\n", 'bad.test.yaml:5:27: test "x": expect.calls.a: expected a whole number of at least 0'],
      ["a null name", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { calls: { ~: 1 } }\n", 'bad.test.yaml:5:24: test "x": expect.calls: expected a name'],
      ["a bad pattern", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { exports_match: { a: '(' } }\n", 'test "x": expect.exports_match.a: not a valid regular expression'],
      ["an unknown ledger kind", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { memory: [{ key: k, ledger: [pach] }] }\n", 'bad.test.yaml:5:43: test "x": expect.memory[0].ledger[0]: unknown entry kind "pach"'],
      ["an empty memory key", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { memory: [{ key: '' }] }\n", 'bad.test.yaml:5:31: test "x": expect.memory[0].key: must be a non-empty string, got ""'],
      ["a blank memory key", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { memory: [{ key: '  ', scope: user }] }\n", 'bad.test.yaml:5:31: test "x": expect.memory[0].key: is blank (only whitespace)'],
      ["an input a number cannot hold exactly", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    inputs: { topic: 12345678901234567890 }\n    expect: {}\n", 'bad.test.yaml:5:22: test "x": inputs: the integer 12345678901234567890 cannot be held exactly'],
      ["an expected export JSON cannot hold", "program: main.vvm\nscript: []\ntests:\n  - name: x\n    expect: { exports_subset: { ok: [1, .inf] } }\n", 'bad.test.yaml:5:41: test "x": expect.exports_subset: .inf is not a number JSON can hold'],
      ["two tests with one name", "program: main.vvm\nscript: []\ntests:\n  - { name: x, expect: {} }\n  - { name: x, expect: {} }\n", 'bad.test.yaml:5:5: tests[1]: a second test named "x"'],
      ["a missing program", "program: nothere.vvm\nscript: []\ntests:\n  - { name: x, expect: {} }\n", "bad.test.yaml:1:10: program nothere.vvm: no such file"],
      ["a folder for a program, named as written", "program: /etc\nscript: []\ntests:\n  - { name: x, expect: {} }\n", "bad.test.yaml:1:10: program /etc: a folder, not a program file"],
      ["a program that is not a .vvm file", "program: bad.test.yaml\nscript: []\ntests:\n  - { name: x, expect: {} }\n", "bad.test.yaml:1:10: program bad.test.yaml: not a .vvm file"],
    ];
    it.each(bad)("%s", async (_what, text, message) => {
      const p = writeProgram({ "main.vvm": MAIN, "bad.test.yaml": text, "main.test.yaml": testFile("main.vvm", RULES, [MAIN_CASES[3]!]) });
      const r = await runCli(["test"], { cwd: p.dir });
      const line = r.stdout.split("\n").find((l) => l.startsWith("ERROR"));
      expect(line).toBe(`ERROR ${line!.slice(6)}`);
      expect(line!.slice(6)).toContain(message);
      expect(r.stdout).toContain("PASS  main.test.yaml: exports subset\n");
      expect(r.stdout.endsWith("1 passed, 1 failed\n")).toBe(true);
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(1);
    });
  });

  it("a program that is a link to a file not named .vvm is not run, so none of that file's lines is shown", async () => {
    const p = writeProgram({ creds: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n", "repo/main.test.yaml": "script: []\ntests: [{ name: x, expect: {} }]\n" });
    symlinkSync(path.join(p.dir, "creds"), path.join(p.dir, "repo", "main.vvm"));
    const r = await runCli(["test"], { cwd: path.join(p.dir, "repo") });
    expect(r.stdout).toBe(`ERROR main.test.yaml: program main.vvm: not a .vvm file (it leads to ${realpathSync(path.join(p.dir, "creds"))})\n0 passed, 1 failed\n`);
  });

  it("a program that imports a module from outside its folder fails its test naming that module, not a path in the test's copy", async () => {
    const p = writeProgram({
      "lib.vvm": "x = 1\nexport x\n",
      "app/main.vvm": 'from "../lib.vvm" import x\nexport x\n',
      "app/main.test.yaml": "script: []\ntests: [{ name: x, expect: {} }]\n",
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toBe(
      "FAIL  app/main.test.yaml:2: x: app/main.vvm imports the module lib.vvm, which lies outside the program's folder app: a test runs a copy of that folder alone, so it cannot run this program\n0 passed, 1 failed\n",
    );
  });

  it("so does a program that imports a ./ or ../ skill from outside its folder: the test's copy would lack it", async () => {
    const p = writeProgram({
      "skills/tone/SKILL.md": "---\nname: tone\ndescription: Friendly.\n---\nBe friendly.\n",
      "app/lib/team.vvm": 'import "tone" from "../../skills/tone"\nagent w(model="haiku", prompt="p", skills=["tone"])\nexport @w\n',
      "app/main.vvm": 'from "./lib/team.vvm" import @w\nr = @w `Hi`(())\nexport r\n',
      "app/main.test.yaml": "script: [{ reply: hi }]\ntests: [{ name: x, expect: { exports: { r: hi } } }]\n",
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toBe(
      "FAIL  app/main.test.yaml:2: x: app/main.vvm imports the skill 'tone' from skills/tone, which lies outside the program's folder app: a test runs a copy of that folder alone, so it cannot run this program\n0 passed, 1 failed\n",
    );
  });

  it("a test file that is not UTF-8 is refused rather than read with replacement characters; a program named instead of its tests says so", async () => {
    const p = writeProgram({ "main.vvm": MAIN, "bad.test.yaml": Buffer.from('program: main.vvm\nscript: [{ reply: "caf\xe9" }]\ntests: []\n', "latin1") });
    const r = await runCli(["test", "bad.test.yaml"], { cwd: p.dir });
    expect(r.stdout).toBe("ERROR bad.test.yaml: not UTF-8 text\n0 passed, 1 failed\n");
    const named = await runCli(["test", "main.vvm"], { cwd: p.dir });
    expect(named.code).toBe(64);
    expect(named.stderr).toBe("vvm: main.vvm: a program, not a test file; its tests would be in main.test.yaml (spec/testing.md)\n");
  });

  it("a script file that is missing or malformed fails its tests, naming the file as the user wrote it", async () => {
    const p = writeProgram({
      "main.vvm": MAIN,
      "main.test.yaml": `program: main.vvm\ntests:\n  - { name: bad rules, script: rules.yaml, expect: {} }\n  - { name: no rules, script: none.yaml, expect: {} }\n`,
      "rules.yaml": "- { reply: x }\n- { reply: y, verdict: true }\n",
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(lineOf(r.stdout, "main.test.yaml", "bad rules")).toMatch(/: bad rules: rules\.yaml:2:3: rule 2: give exactly one answer/);
    expect(lineOf(r.stdout, "main.test.yaml", "no rules")).toMatch(/: no rules: script none\.yaml: no such file$/);
    expect(r.code).toBe(1);
  });

  it("a malformed snapshot file is an ERROR line at its place", async () => {
    const p = writeProgram({ "main.vvm": MAIN, "main.test.yaml": testFile("main.vvm", RULES, [MAIN_CASES[3]!]), "main.test.snap.yaml": "tests:\n  x: [\n" });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toMatch(/^ERROR main\.test\.snap\.yaml:3:1: not valid YAML: .* \(run vvm test --update to write it again\)\n0 passed, 1 failed\n$/);
    expect(r.code).toBe(1);
    writeFileSync(p.file("main.test.snap.yaml"), "tests:\n  exports subset: 3\n");
    const shape = await runCli(["test"], { cwd: p.dir });
    expect(shape.stdout).toContain('ERROR main.test.snap.yaml: test "exports subset": expected { exports, memory } (run vvm test --update to write it again)\n');
  });

  it("expectations read only what was exported (not constructor or toString), YAML aliases and unknown tags are refused, __proto__ is a test name like any", async () => {
    const prog = 'agent a(model="haiku", prompt="p")\nr = @a `Say hi.`(())\ntoString = "surprise"\nexport r\nexport toString\n';
    const rules = '\n  - { kind: agent, agent: a, reply: "hi" }\n';
    const p = writeProgram({
      "m.vvm": prog,
      "m.test.yaml": testFile("m.vvm", rules, [
        ["inherited", "expect: { exports_subset: { constructor: 1 } }", null],
        ["exactly r", "expect: { exports: { r: hi } }", null],
        ["__proto__", "expect: { exports_subset: { r: hi } }", null],
      ]),
      "alias.test.yaml": `program: m.vvm\nscript:${rules}tests:\n  - name: a\n    expect: { exports_subset: { r: &x hi, toString: *x } }\n`,
      "tag.test.yaml": `program: m.vvm\nscript:\n  - { kind: agent, agent: a, reply: !custom hi }\ntests:\n  - name: t\n    expect: {}\n`,
    });
    const r = await runCli(["test", "m.test.yaml"], { cwd: p.dir });
    expect(r.stdout).toContain("inherited: exports_subset.constructor: missing (expected 1)");
    expect(r.stdout).toContain('exactly r: exports.toString: not expected (got "surprise")');
    expect(r.stderr).not.toMatch(/\n\s+at .+:\d+/);
    const aliased = await runCli(["test", "alias.test.yaml"], { cwd: p.dir });
    expect(aliased.stdout).toMatch(/^ERROR alias\.test\.yaml:6:\d+: not valid YAML: an alias \(\*x\) is not supported here: write the value out\n/);
    const tagged = await runCli(["test", "tag.test.yaml"], { cwd: p.dir });
    expect(tagged.stdout).toMatch(/^ERROR tag\.test\.yaml:3:\d+: not valid YAML: Unresolved tag: !custom\n/);
    // a snapshot for the test named __proto__ is written and read back
    await runCli(["test", "m.test.yaml", "--update"], { cwd: p.dir });
    expect(readFileSync(p.file("m.test.snap.yaml"), "utf8")).toMatch(/^ {2}__proto__:$/m);
    expect((await runCli(["test", "m.test.yaml"], { cwd: p.dir })).stdout).toMatch(/^PASS .*__proto__/m);
  });

  it("a run whose exports cannot be printed fails its test; an uncaught error too deep to copy is read for its kind", async () => {
    const p = writeProgram({
      "big.vvm": "xs = [1]\nfor i in range(30):\n  xs = [xs, xs]\nexport xs\n",
      "deep.vvm": 'xs = []\nfor i in range(200000):\n  xs = [xs]\nraise {error: {kind: "k", message: "m", data: xs}}\n',
      "big.test.yaml": "program: big.vvm\nscript: []\ntests:\n  - name: anything\n    expect: {}\n",
      "deep.test.yaml": "program: deep.vvm\nscript: []\ntests:\n  - name: raises\n    expect: { raises: { kind: k } }\n",
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toContain("FAIL  big.test.yaml:4: anything: the program ran but vvm run printed no exports (exit 1): the exported values are too large to print as JSON");
    expect(r.stdout).toMatch(/^PASS {2}deep\.test\.yaml: raises$/m);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/internal|\n\s+at .+:\d+/);
    // (the first run writes 256 MiB of JSON before the limit stops it: give a loaded machine time)
  }, 120_000);

  it("never reaches a model: with an API key in the environment, the script still answers and nothing is sent", async () => {
    const p = writeProgram({
      "main.vvm": MAIN,
      "main.test.yaml": testFile("main.vvm", `\n  - { agent: notes, reply: "Noted." }\n  - { kind: judge, verdict: true }\n`, [MAIN_CASES[3]!]),
    });
    const r = await runCli(["test"], { cwd: p.dir, env: standin.env() });
    expect(lineOf(r.stdout, "main.test.yaml", "exports subset")).toContain(`no script rule answered agent call 'picky'`);
    expect(standin.requests).toHaveLength(0);
  });

  it("user-scope memory lives in the test's own HOME, seeded by user_memory", async () => {
    const prog = `agent prefs(model="haiku", memory={ scope: "user", key: "prefs" })\nr = @prefs \`Remember.\`(())\nexport r\n`;
    const rule = `\n  - agent: prefs${NOTES_REPLY}\n`;
    const p = writeProgram({
      "main.vvm": prog,
      "main.test.yaml": testFile("main.vvm", rule, [
        ["fresh", `expect: { memory: [{ key: prefs, scope: user, ledger: [patch], facts: [Monday] }] }`, null],
        ["seeded", `user_memory: home-fixture\n    expect: { memory: [{ key: prefs, scope: user, ledger: [external_edit, patch] }] }`, null],
        ["not a folder", `user_memory: main.vvm\n    expect: {}`, null],
      ]),
      "home-fixture/k-prefs/digest.md": "- short answers\n",
    });
    // the caller's HOME (testEnv's, which cannot exist) is never used: a write there would fail the call
    const r = await runCli(["test"], { cwd: p.dir });
    expect(lineOf(r.stdout, "main.test.yaml", "fresh")).toBe("PASS  main.test.yaml: fresh");
    expect(lineOf(r.stdout, "main.test.yaml", "seeded")).toBe("PASS  main.test.yaml: seeded");
    expect(lineOf(r.stdout, "main.test.yaml", "not a folder")).toMatch(/not a folder: user_memory: .*main\.vvm is not a folder \(give a folder laid out as \.vvm\/memory\)$/);
  });

  it("a memory is kept only inside the test's folder: a path binding that leads elsewhere, literal or computed, is refused when the call opens it", async () => {
    const real = writeProgram({ "k-team/digest.md": "## Real\n" });
    const prog = (memory: string) => `agent a(model="haiku", prompt="p", memory=${memory})\nr = @a \`Note.\`(())\nexport r\n`;
    const p = writeProgram({
      "inside.vvm": prog(`{scope: "path", key: "team", path: "shared/mem"}`),
      "absolute.vvm": prog(`{scope: "path", key: "team", path: ${JSON.stringify(real.dir)}}`),
      "computed.vvm": `agent a(model="haiku", prompt="p")\nwhere = "${real.dir}"\nr = @a.with(memory={scope: "path", key: "team", path: where}) \`Note.\`(())\nexport r\n`,
      ...Object.fromEntries(["inside", "absolute", "computed"].map((n) => [`${n}.test.yaml`, `script:\n  - agent: a${NOTES_REPLY}\ntests: [{ name: t, expect: {} }]\n`])),
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toContain("PASS  inside.test.yaml: t\n");
    for (const name of ["absolute", "computed"]) {
      expect(r.stdout).toContain(`FAIL  ${name}.test.yaml:8: t: export r is an error value (rejected): "memory path:\\"team\\": ${real.dir}/k-team is outside `);
    }
    // nothing was written on the real disk: not the real memory, not the program's folder
    expect(readFileSync(real.file("k-team/digest.md"), "utf8")).toBe("## Real\n");
    expect(() => readFileSync(real.file("k-team/ledger.jsonl"))).toThrow();
    expect(() => readFileSync(p.file("shared/mem/k-team/digest.md"))).toThrow();
  });

  it("a program in a subfolder is named by its own path in messages, not its copy's", async () => {
    const p = writeProgram({
      "sub/bad.vvm": "x = = 1\nexport x\n",
      "sub/ok.vvm": 'agent a(model="haiku")\nr = @a `hi`(())\nexport r\n',
      "bad.test.yaml": "program: sub/bad.vvm\nscript: []\ntests: [{ name: a, expect: {} }]\n",
      "ok.test.yaml": "program: sub/ok.vvm\nscript: []\ntests: [{ name: a, expect: {} }]\n",
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toContain("FAIL  bad.test.yaml:3: a: the program did not run (vvm run exit 2): sub/bad.vvm:1:5: E001 ");
    expect(r.stdout).toContain(`FAIL  ok.test.yaml:3: a: no script rule answered agent call 'a' at sub/ok.vvm:2:5: "hi"`);
  });

  it("a test's input_file or memory fixture that cannot be used is named as the test file names it, not by its whole path", async () => {
    const p = writeProgram({
      "sub/main.vvm": "input topic\nexport topic\n",
      "sub/latin1.json": new Uint8Array([0x7b, 0x22, 0x74, 0x6f, 0x70, 0x69, 0x63, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]),
      "sub/main.test.yaml": [
        "script: []",
        "tests:",
        "  - { name: not UTF-8, input_file: latin1.json, expect: {} }",
        "  - { name: missing, input_file: nothere.json, expect: {} }",
        "  - { name: no fixture, inputs: { topic: x }, memory: nomem, expect: {} }",
        "",
      ].join("\n"),
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toBe(
      [
        "FAIL  sub/main.test.yaml:3: not UTF-8: the program did not run (vvm run exit 64): input_file sub/latin1.json:1:11: not UTF-8 text: byte 0xe9 (a JSON file must be UTF-8)",
        "FAIL  sub/main.test.yaml:4: missing: the program did not run (vvm run exit 64): input_file sub/nothere.json: no such file",
        "FAIL  sub/main.test.yaml:5: no fixture: memory: sub/nomem is not a folder (give a folder laid out as .vvm/memory)",
        "0 passed, 3 failed",
        "",
      ].join("\n"),
    );
  });

  it("a test's inputs that do not fit the program are told in the test file's words (inputs:, input_file), not vvm run's flags", async () => {
    const p = writeProgram({
      "main.vvm": 'input topic: "The topic"\ninput tone = "plain"\nexport topic\n',
      "in.json": '{"tnoe": "dry"}',
      "main.test.yaml": [
        "script: []",
        "tests:",
        "  - { name: typo, inputs: { topic: x, tnoe: dry }, expect: {} }",
        "  - { name: left out, inputs: { tone: dry }, expect: {} }",
        "  - { name: file, input_file: in.json, expect: {} }",
        "",
      ].join("\n"),
    });
    const r = await runCli(["test"], { cwd: p.dir });
    expect(r.stdout).toBe(
      [
        "FAIL  main.test.yaml:3: typo: the program did not run (vvm run exit 64): inputs: tnoe: the program has no input 'tnoe' (the program's inputs: topic, tone)",
        "FAIL  main.test.yaml:4: left out: the program did not run (vvm run exit 64): missing input 'topic' (The topic): give it under the test's inputs: (topic: VALUE) or as a field of its input_file (vvm check lists the program's inputs)",
        "FAIL  main.test.yaml:5: file: the program did not run (vvm run exit 64): input_file in.json: field 'tnoe' is not an input of the program (the program's inputs: topic, tone)",
        "0 passed, 3 failed",
        "",
      ].join("\n"),
    );
  });

  it("a test names no file outside its test file's folder, directly or through a link: a cloned repository's tests cannot read the user's files into exports or snapshots", async () => {
    const p = writeProgram({
      "home/auth.json": '{"auths": "SECRET-TOKEN"}\n',
      "home/s.yaml": '- { reply: "SECRET-REPLY" }\n',
      "repo/main.vvm": 'input auths = "none"\nexport auths\n',
      "repo/main.test.yaml": [
        "script: []",
        "tests:",
        "  - { name: up, input_file: ../home/auth.json, expect: {} }",
        "  - { name: link, input_file: in.json, expect: {} }",
        "  - { name: memory, user_memory: ../home/mem, expect: {} }",
        "  - { name: script, script: ../home/s.yaml, expect: {} }",
        "  - { name: inside, inputs: { auths: x }, expect: { exports: { auths: x } } }",
        "",
      ].join("\n"),
    });
    mkdirSync(path.join(p.dir, "home", "mem"));
    symlinkSync(path.join(p.dir, "home", "auth.json"), path.join(p.dir, "repo", "in.json"));
    const r = await runCli(["test", "--update", "repo"], { cwd: p.dir });
    const rule = "a test names only files in its test file's folder, as it comes with them";
    expect(r.stdout).toBe(
      [
        `FAIL  repo/main.test.yaml:3: up: input_file home/auth.json lies outside the test file's folder: ${rule}`,
        `FAIL  repo/main.test.yaml:4: link: input_file repo/in.json leads through a symbolic link out of the test file's folder (to home/auth.json): ${rule}`,
        `FAIL  repo/main.test.yaml:5: memory: user_memory home/mem lies outside the test file's folder: ${rule}`,
        `FAIL  repo/main.test.yaml:6: script: script home/s.yaml lies outside the test file's folder: ${rule}`,
        "PASS  repo/main.test.yaml: inside",
        "wrote repo/main.test.snap.yaml (1 snapshot)",
        "1 passed, 4 failed",
        "",
      ].join("\n"),
    );
    expect(readFileSync(path.join(p.dir, "repo", "main.test.snap.yaml"), "utf8")).not.toContain("SECRET");
  });

  it("a program that is a link is run in a copy of its real folder, never in place: a scripted write stays in the copy", async () => {
    const p = writeProgram({
      "home/notes/scribe.vvm": 'agent scribe(model="haiku", prompt="p", permissions=perm(write=["log/**"]))\nr = @scribe `Add an entry`(())\nexport r\n',
      "a/b/repo/main.test.yaml": [
        "script:",
        '  - { turn: 1, tool_use: [{ name: write_file, input: { path: log/pwned.txt, content: "x" } }] }',
        "  - { turn: 2, reply: done }",
        "tests: [{ name: t, expect: { exports: { r: done } } }]",
        "",
      ].join("\n"),
    });
    symlinkSync(path.join(p.dir, "home", "notes", "scribe.vvm"), path.join(p.dir, "a", "b", "repo", "main.vvm"));
    // the copy (TMPDIR/vvm-test-…/project) as deep as the test's folder: the link's real file, taken relative to
    // the link's folder and joined to the copy, named the real file again
    mkdirSync(path.join(p.dir, "t"));
    const tmpdir = vi.spyOn(os, "tmpdir").mockReturnValue(path.join(p.dir, "t"));
    const r = await runCli(["test"], { cwd: path.join(p.dir, "a", "b", "repo") }).finally(() => tmpdir.mockRestore());
    expect(r.stdout).toBe("PASS  main.test.yaml: t\n1 passed, 0 failed\n");
    expect(existsSync(path.join(p.dir, "home", "notes", "log"))).toBe(false);
  });

  it("runs no command a test's script asks the bash tool for unless given --allow-bash (a repository's tests choose them)", async () => {
    const p = writeProgram({});
    const mark = path.join(p.dir, "ran");
    writeFileSync(path.join(p.dir, "main.vvm"), 'agent ops(model="haiku", prompt="p", permissions=perm(bash="allow"))\nr = @ops `Tidy up`(())\nexport r\n');
    writeFileSync(
      path.join(p.dir, "main.test.yaml"),
      ["script:", `  - { turn: 1, tool_use: [{ name: bash, input: { command: ${JSON.stringify(`touch ${mark}`)} } }] }`, "  - { turn: 2, reply: done }", "tests: [{ name: t, expect: { exports: { r: done } } }]", ""].join("\n"),
    );
    const refused = await runCli(["test"], { cwd: p.dir });
    expect(refused.stdout).toBe("PASS  main.test.yaml: t\n1 passed, 0 failed\n");
    expect(existsSync(mark)).toBe(false);
    const allowed = await runCli(["test", "--allow-bash"], { cwd: p.dir });
    expect(allowed.stdout).toBe("PASS  main.test.yaml: t\n1 passed, 0 failed\n");
    expect(existsSync(mark)).toBe(true);
  });

  it("Ctrl-C ends vvm test with exit 130, the test under way unfinished and no later test run", async () => {
    const p = writeProgram({
      "main.vvm": 'agent a(model="haiku")\nx = @a `slow`(1)\nexport x\n',
      "main.test.yaml": "script:\n  - { match: slow, delay: 30s, reply: late }\ntests:\n  - { name: first, expect: {} }\n  - { name: second, expect: {} }\n",
    });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 1000);
    const r = await runCli(["test"], { cwd: p.dir, signal: stop.signal });
    expect(r.code).toBe(130);
    expect(r.stdout).not.toContain("second");
    expect(r.stdout).not.toMatch(/^PASS/m);
  }, 20_000);

  it("exit 64 for a path that does not exist or a folder without test files", async () => {
    const p = writeProgram({ "main.vvm": MAIN });
    const missing = await runCli(["test", "nothere"], { cwd: p.dir });
    expect([missing.code, missing.stderr]).toEqual([64, "vvm: nothere: no such file or folder\n"]);
    // a name a shell pattern picked up from a cloned repository reaches the terminal escaped
    const hostile = await runCli(["test", "x\u001b[2Jy.test.yaml"], { cwd: p.dir });
    expect([hostile.code, hostile.stderr]).toEqual([64, "vvm: x\\u001b[2Jy.test.yaml: no such file or folder\n"]);
    const none = await runCli(["test"], { cwd: p.dir });
    expect([none.code, none.stderr]).toEqual([64, "vvm: .: no test files (*.test.yaml, *.test.yml) in this folder or below it\n"]);
    // an empty path (an unset shell variable) is not the working directory
    const empty = await runCli(["test", ""], { cwd: p.dir });
    expect([empty.code, empty.stderr, empty.stdout]).toEqual([64, "vvm: an empty path: name a test file or folder, or none for the current directory\n", ""]);
  });

  it("a test file named on the command line must end in .test.yaml or .test.yml: --update never writes over it", async () => {
    const tests = "program: main.vvm\nscript: []\ntests: [{ name: a, expect: {} }]\n";
    const p = writeProgram({ "main.vvm": MAIN, "mytests.yaml": tests });
    for (const args of [["test", "mytests.yaml"], ["test", "--update", "mytests.yaml"]]) {
      const r = await runCli(args, { cwd: p.dir });
      expect([r.code, r.stdout, r.stderr]).toEqual([64, "", "vvm: mytests.yaml: not a test file: a test file's name ends in .test.yaml or .test.yml (spec/testing.md)\n"]);
    }
    expect(readFileSync(p.file("mytests.yaml"), "utf8")).toBe(tests);
    expect(() => snapshotFile(p.file("mytests.yaml"))).toThrow();
  });

  it("NAME.test.yml and NAME.test.yaml keep a snapshot each (NAME.test.snap.yml, NAME.test.snap.yaml)", async () => {
    const prog = 'agent a(model="haiku", prompt="p")\nr = @a `Say hi.`(())\nexport r\n';
    const tests = (reply: string) => `program: m.vvm\nscript: [{ reply: ${reply} }]\ntests: [{ name: a, expect: {} }]\n`;
    const p = writeProgram({ "m.vvm": prog, "m.test.yaml": tests("from-yaml"), "m.test.yml": tests("from-yml") });
    const first = await runCli(["test", "--update"], { cwd: p.dir });
    expect(first.stdout).toContain("wrote m.test.snap.yaml (1 snapshot)\n");
    expect(first.stdout).toContain("wrote m.test.snap.yml (1 snapshot)\n");
    expect(readFileSync(p.file("m.test.snap.yaml"), "utf8")).toContain("r: from-yaml");
    expect(readFileSync(p.file("m.test.snap.yml"), "utf8")).toContain("r: from-yml");
    const again = await runCli(["test"], { cwd: p.dir });
    expect([again.code, again.stdout.endsWith("2 passed, 0 failed\n")]).toEqual([0, true]);
  });

  it("the project's examples carry tests, and they pass", async () => {
    const r = await runCli(["test", "examples"], { cwd: ROOT });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\n\d+ passed, 0 failed\n$/);
    for (const f of ["support-reply", "calls-judges", "calls-retry", "release-notes", "shift-handoff", "tenant-memory", "replicate-merge"]) {
      expect(r.stdout).toContain(`PASS  ${path.join("examples", `${f}.test.yaml`)}: `);
    }
    expect(r.stdout).not.toContain("FAIL");
  });
});
