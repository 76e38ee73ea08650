// vvm run --narrate: each binding, agent call and judge told on stderr as the program runs; stdout keeps
// only the exports; NO_COLOR is respected; the interpreter is told through an injected narrator.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runProgram } from "../../runtime/interpreter/index.ts";
import { noTrace, type Narrator } from "../../runtime/trace.ts";
import { toJSON, type Value } from "../../runtime/values.ts";
import { checkProgram } from "../../src/check.ts";
import { preview } from "../../src/commands/narration.ts";
import { runCli } from "../support/cli.ts";
import { FakeAgents } from "../support/fake-agents.ts";
import { useTempDir } from "../support/fixtures.ts";
import { programFile } from "../support/program.ts";

const dir = useTempDir("vvm-narrate-");
const PROGRAM = [
  'agent writer(model="sonnet", prompt="You write.")',
  "def note(n):",
  "  return @writer `Write note {n}.`(n)",
  "notes = pmap([1, 2], note)",
  "ok = ?`the notes are fine`(notes)",
  "bad = @writer `Fail.`()",
  "export notes",
  "export ok",
  "export bad",
].join("\n");
const SCRIPT = [
  "rules:",
  "  - kind: agent",
  '    match: "Fail."',
  "    error: { kind: rejected, status: 400 }",
  "  - kind: agent",
  '    reply: "a note\\u001b[2J"',
  "    usage: { input_tokens: 1200, output_tokens: 30, cache_read_tokens: 5 }",
  "  - kind: predicate",
  "    verdict: true",
].join("\n");

async function run(args: string[], env: Record<string, string> = {}) {
  await writeFile(path.join(dir, "main.vvm"), PROGRAM);
  await writeFile(path.join(dir, "s.yaml"), SCRIPT);
  return runCli(["run", "main.vvm", "--script", "s.yaml", "--allow-error-exports", ...args], { cwd: dir, env });
}

/** The narration lines, without the time. */
const narration = (stderr: string) =>
  stderr
    .split("\n")
    .filter((l) => l.startsWith("vvm ["))
    .map((l) => l.replace(/^vvm \[\d+\.\d\ds\] /, "").replace(/ \d+\.\d\ds(?= )/, " T"));

describe("--narrate", () => {
  it("tells each binding, call and judge in order on stderr; stdout is the same exports as without it", async () => {
    const plain = await run([]);
    const told = await run(["--narrate"]);
    expect(told.code).toBe(0);
    expect(told.stdout).toBe(plain.stdout);
    expect(narration(plain.stderr)).toEqual([]);
    const lines = narration(told.stderr);
    // the two pmap calls start and end in either order; everything after them in program order
    expect(lines.slice(0, 4).sort()).toEqual([
      // tokens of the call: input counts the cached prompt tokens too
      "← @writer #1 T 1,205 in / 30 out tok  main.vvm:3:10",
      "← @writer #2 T 1,205 in / 30 out tok  main.vvm:3:10",
      "→ @writer #1 (claude-sonnet-5-5)  main.vvm:3:10",
      "→ @writer #2 (claude-sonnet-5-5)  main.vvm:3:10",
    ]);
    expect(lines.slice(4)).toEqual([
      // a reply's control characters are escaped, never sent to the terminal
      'notes = ["a note\\u001b[2J","a note\\u001b[2J"] (2 items)  main.vvm:4:1',
      "? predicate (claude-haiku-5-5) → true T  main.vvm:5:6",
      "ok = true  main.vvm:5:1",
      "→ @writer #4 (claude-sonnet-5-5)  main.vvm:6:7",
      "← @writer #4 T 0 in / 0 out tok error(kind=rejected)  main.vvm:6:7",
      'bad = {"error":{"kind":"rejected","message":"scripted rejected (H…  main.vvm:6:1',
      // the exports, as the run ends
      'export notes = ["a note\\u001b[2J","a note\\u001b[2J"] (2 items)',
      "export ok = true",
      'export bad = {"error":{"kind":"rejected","message":"scripted rejected (H…',

    ]);
    expect(told.stderr).not.toContain("\x1b[2J");
  });

  // eslint-disable-next-line no-control-regex -- colour sequences are what this test looks for
  const SGR = /\x1b\[\d+m/g;
  it("is coloured only where colour is allowed: NO_COLOR wins over FORCE_COLOR", async () => {
    const coloured = await run(["--narrate"], { FORCE_COLOR: "1" });
    expect(coloured.stderr).toContain("\x1b[2mvvm [");
    const plain = await run(["--narrate"], { FORCE_COLOR: "1", NO_COLOR: "1" });
    expect(narration(plain.stderr).length).toBe(narration(coloured.stderr.replace(SGR, "")).length);
    expect(plain.stderr).not.toMatch(SGR);
  });
});

describe("--narrate with memory", () => {
  it("tells what each reply's patch did to the memory, never its text", async () => {
    const patch = (digest: string) => "done\n\n```vvm-memory\n" + JSON.stringify({ digest, retain: ["secret fact"] }) + "\n```\n";
    await writeFile(
      path.join(dir, "mem.vvm"),
      ['agent m(model="haiku", memory={ scope: "project", key: "notes" })', "a = @m `One.`()", 'b = @m `Two.`((), memory_mode="dry_run")', "c = @m `Three.`()", "export a"].join("\n"),
    );
    await writeFile(
      path.join(dir, "mem.yaml"),
      ["rules:", "  - kind: agent", '    match: "One."', `    reply: ${JSON.stringify(patch("## Notes\n- one\n"))}`, "  - kind: agent", '    match: "Two."', "    reply: plain", "  - kind: agent", '    match: "Three."', `    reply: ${JSON.stringify("bad\n\n```vvm-memory\n{not json\n```\n")}`].join("\n"),
    );
    const res = await runCli(["run", "mem.vvm", "--script", "mem.yaml", "--narrate"], { cwd: dir });
    expect(res.code).toBe(0);
    const lines = narration(res.stderr).filter((l) => l.includes(" memory "));
    expect(lines[0]).toBe("  @m #1 memory notes (continue): applied, seq 1");
    expect(lines[1]).toBe("  @m #2 memory notes (dry_run): none");
    expect(lines[2]).toMatch(/^ {2}@m #3 memory notes \(continue\): rejected, seq 2: /);
    expect(res.stderr).not.toContain("secret fact");
  });
});

describe("the interpreter's narrator", () => {
  it("is injected per run and told every binding: assignments (in functions too), for targets, except names", async () => {
    const told: [string, Value][] = [];
    const narrator: Narrator = { binding: (name, value) => told.push([name, value]), callStarted() {}, callFinished() {}, memory() {}, judged() {} };
    const source = [
      "def f(x):",
      "  y = x + 1",
      "  return y",
      "a = f(1)",
      "b = [a, a]",
      "for n in [5, 6]:",
      "  pass",
      "try:",
      '  raise "boom"',
      "except as e:",
      "  pass",
      "export b",
    ].join("\n");
    const checked = await checkProgram(programFile(source + "\n"));
    const outcome = await runProgram(checked, { agents: new FakeAgents({}), trace: noTrace, signal: new AbortController().signal, concurrency: 1, narrator });
    expect(outcome.kind).toBe("ok");
    expect(told.map(([n, v]) => [n, n === "e" ? "error" : toJSON(v)])).toEqual([["y", 2], ["a", 2], ["b", [2, 2]], ["n", 5], ["n", 6], ["e", "error"]]);
  });
});

describe("value previews", () => {
  it("quote strings, clip long values to one line, and give sizes", () => {
    expect(preview("hi")).toBe('"hi"');
    expect(preview("a\n  b")).toBe('"a b"');
    const long = preview("x".repeat(500));
    expect(long).toMatch(/^"x+… \(500 chars\)$/);
    expect(long.length).toBeLessThan(80);
    expect(preview([1, 2, 3])).toBe("[1,2,3] (3 items)");
    expect(preview(null)).toBe("()");
    // keys in the value's own order: an error's kind comes before its (possibly long) data
    expect(preview(new Map<string, Value>([["b", 1], ["a", true]]))).toBe('{"b":1,"a":true}');
    const err = new Map<string, Value>([["error", new Map<string, Value>([["kind", "timeout"], ["message", "no reply"], ["data", "x".repeat(300)]])]]);
    expect(preview(err)).toMatch(/^\{"error":\{"kind":"timeout","message":"no reply","data":"x+…$/);
  });
});
