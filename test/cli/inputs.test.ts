// Program inputs through the real CLI, in-process: `vvm run --input FILE|- --arg name=value` against the
// program's `input` declarations, and the list `vvm check` prints (spec/inputs.md).
import { describe, expect, it } from "vitest";
import { closeSync, openSync } from "node:fs";
import { collect, runCli, spawnCli } from "../support/cli.ts";
import { MAX_INPUT_BYTES } from "../../src/commands/inputs.ts";
import { writeProgram } from "../support/program.ts";

const PROGRAM = [
  'input ticket: "The support ticket"',
  'input tone: "How the reply sounds" = "friendly"',
  "input limit = 80",
  "agent writer(model=\"haiku\", prompt=\"You answer support tickets.\")",
  "reply = @writer `Answer in a {tone} tone.`(ticket)",
  "export ticket",
  "export tone",
  "export limit",
  "",
].join("\n");

function prog(files: Record<string, string | Uint8Array> = {}) {
  return writeProgram({ "main.vvm": PROGRAM, ...files });
}

async function run(args: string[], opts: { stdin?: string | Uint8Array; files?: Record<string, string | Uint8Array>; source?: string } = {}) {
  const p = writeProgram({ "main.vvm": opts.source ?? PROGRAM, ...opts.files });
  const r = await runCli(["run", "main.vvm", "--provider", "sim", ...args], { cwd: p.dir, stdin: opts.stdin });
  p.cleanup();
  return r;
}

function exportsOf(r: { code: number; stdout: string; stderr: string }): Record<string, unknown> {
  expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** A usage error: exit 64, nothing on stdout, no call made (no summary line), and this message. */
function usage(r: { code: number; stdout: string; stderr: string }, message: string | RegExp): void {
  expect(r.code).toBe(64);
  expect(r.stdout).toBe("");
  expect(r.stderr).not.toMatch(/vvm: \d+ calls?/);
  if (typeof message === "string") expect(r.stderr).toContain(message);
  else expect(r.stderr).toMatch(message);
}

describe("vvm run --input", () => {
  it("reads a JSON file: its fields are the inputs, as ordinary values; defaults fill the rest", async () => {
    const ticket = { id: 7, body: "Export does nothing", tags: ["ui"], urgent: true, customer: null, score: 0.5 };
    const r = await run(["--input", "in.json"], { files: { "in.json": JSON.stringify({ ticket }) } });
    expect(exportsOf(r)).toEqual({ ticket, tone: "friendly", limit: 80 });
  });

  it("reads the object from stdin with -", async () => {
    const r = await run(["--input", "-"], { stdin: '{"ticket": "printer on fire", "limit": 5}' });
    expect(exportsOf(r)).toEqual({ ticket: "printer on fire", tone: "friendly", limit: 5 });
  });

  it("the values behave as VVM values: fields, arithmetic, len, unit", async () => {
    const source = [
      "input order",
      "total = order.amount + 1",
      "count = len(order.lines)",
      "no_note = order.note == ()",
      "first = order.lines[0].sku",
      "export total",
      "export count",
      "export no_note",
      "export first",
      "",
    ].join("\n");
    const order = { amount: 12.5, note: null, lines: [{ sku: "a-1" }, { sku: "b-2" }] };
    const r = await run(["--input", "order.json"], { source, files: { "order.json": JSON.stringify({ order }) } });
    expect(exportsOf(r)).toEqual({ total: 13.5, count: 2, no_note: true, first: "a-1" });
  });

  it.each([
    ["not JSON, with the line and column", '{\n  "ticket": "x",\n}', "vvm: --input in.json:3:1: expected a field name after ',', found '}' (JSON allows no trailing comma)"],
    ["empty", "", "vvm: --input in.json:1:1: the text is empty: expected a JSON value"],
    ["not an object", '["x"]', "vvm: --input in.json: expected a JSON object whose fields are the program's inputs, found a list (the program's inputs: ticket, tone, limit)"],
    ["a field the program does not declare", '{"ticket": "x", "tnoe": "y"}', "vvm: --input in.json: field 'tnoe' is not an input of the program (the program's inputs: ticket, tone, limit)"],
    // JSON keeps a repeated field's last value: an input given twice would silently lose its first value
    ["an input given twice", '{"ticket": "x",\n "ticket": "y"}', 'vvm: --input in.json:2:2: the field "ticket" is given twice in this object'],
    ["a field of an input given twice", '{"ticket": {"id": 1, "id": 2}}', 'vvm: --input in.json:1:22: the field "id" is given twice in this object'],
    // a short word is quoted (a typo shows); a long one is more likely a token from a file given by mistake
    ["a word", "True", "vvm: --input in.json:1:1: expected a JSON value, found 'True' (JSON writes true)"],
    ["a credentials file", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n", "vvm: --input in.json:1:1: expected a JSON value, found a word of 40 or more characters\n"],
    ["a key file", "token = abcdefghijklmnopqrstuvwxyz01\n", "vvm: --input in.json:1:1: expected a JSON value, found 'token'\n"],
    ["a key file with the key first", "{\"t\": zyxwvutsrqponmlkjihgfedcba0123\n", "vvm: --input in.json:1:7: expected a JSON value, found a word of 30 characters\n"],
  ])("a file that is %s is a usage error", async (_what, content, message) => {
    usage(await run(["--input", "in.json"], { files: { "in.json": content } }), message);
  });

  it("a missing file, a directory and bytes that are not UTF-8 are usage errors", async () => {
    usage(await run(["--input", "nope.json"]), "vvm: --input nope.json: no such file\n");
    // upstream's way to give one input: --arg is ours
    usage(await run(["--input", "ticket=AI"]), "vvm: --input ticket=AI: no such file (to give one input, use --arg ticket=AI)\n");
    usage(await run(["--input", "dir"], { files: { "dir/x": "" } }), "vvm: --input dir: a directory, not a file");
    // at the first bad byte, as a JSON problem is: line 2, after two spaces and `"x": "caf` (é in Latin-1)
    const latin1 = new Uint8Array([...Buffer.from('{\n  "x": "caf'), 0xe9, ...Buffer.from('"\n}\n')]);
    usage(await run(["--input", "in.json"], { files: { "in.json": latin1 } }), "vvm: --input in.json:2:12: not UTF-8 text: byte 0xe9 (a JSON file must be UTF-8)\n");
  });

  it("a second --input is a usage error rather than a silent replacement", async () => {
    usage(await run(["--input", "a.json", "--input", "b.json"], { files: { "a.json": "{}", "b.json": "{}" } }), "argument 'b.json' is invalid. --input is already a.json: give one file");
  });

  it("reads standard input only up to the cap: a pipe that never ends is refused, not read into memory", async () => {
    usage(await run(["--input", "-"], { stdin: new Uint8Array(MAX_INPUT_BYTES + 1).fill(0x20) }), "vvm: --input <stdin>: larger than 64 MiB");
    const p = prog();
    const zero = openSync("/dev/zero", "r");
    try {
      const r = await collect(spawnCli(["run", "main.vvm", "--provider", "sim", "--input", "-"], { cwd: p.dir, stdinFd: zero }));
      usage(r, /\nvvm: --input <stdin>: larger than 64 MiB\n$/);
    } finally {
      closeSync(zero);
      p.cleanup();
    }
  });

  it("standard input that is a directory (< folder) is said to be one, not read as empty", async () => {
    const p = prog();
    const dir = openSync(p.dir, "r");
    try {
      const r = await collect(spawnCli(["run", "main.vvm", "--provider", "sim", "--input", "-"], { cwd: p.dir, stdinFd: dir }));
      usage(r, /\nvvm: --input <stdin>: a directory, not a file\n$/);
    } finally {
      closeSync(dir);
      p.cleanup();
    }
  });

  it("malformed stdin names <stdin>", async () => {
    usage(await run(["--input", "-"], { stdin: '{"ticket": tru}' }), "vvm: --input <stdin>:1:12: expected a JSON value, found 'tru'");
    usage(await run(["--input", "-"]), "vvm: --input <stdin>:1:1: the text is empty: expected a JSON value");
  });
});

describe("vvm run --arg", () => {
  it("parses the value as JSON when it is JSON, else keeps the text", async () => {
    const source = ["input a", "input b", "input c", "input d", "input e", "input f", "input g", "export pack(a, b, c, d, e, f, g)", ""].join("\n");
    const r = await run(["--arg", "a=3", "--arg", "b=hello world", "--arg", 'c="3"', "--arg", "d=true", "--arg", 'e={"k": [1, null]}', "--arg", "f=", "--arg", "g=null"], { source });
    expect(exportsOf(r)).toEqual({ a: 3, b: "hello world", c: "3", d: true, e: { k: [1, null] }, f: "", g: null });
  });

  it("JSON the runtime refuses is a usage error, as in an --input file, never quietly text", async () => {
    const source = ["input a", "export a", ""].join("\n");
    usage(await run(["--arg", "a=1e400"], { source }), "vvm: --arg a: the number 1e400 is too large");
    // an id past 2^53 would change silently; as a JSON string it is kept as written
    usage(await run(["--arg", "a=12345678901234567890"], { source }), "vvm: --arg a: the integer 12345678901234567890 cannot be held exactly");
    expect(JSON.parse((await run(["--arg", 'a="12345678901234567890"'], { source })).stdout)).toMatchObject({ a: "12345678901234567890" });
    const deep = "[".repeat(1500) + "]".repeat(1500);
    const r = await run(["--arg", `a=${deep}`], { source });
    expect(r.code).toBe(64);
    expect(r.stdout).toBe("");
  });

  it("nesting is counted from the outside of what is read: 1,000 levels in an --arg, 999 in a field of an --input file, whose object is the first", async () => {
    const source = ["input a", "n = len(a)", "export n", ""].join("\n");
    const nest = (n: number) => "[".repeat(n) + "]".repeat(n);
    expect(exportsOf(await run(["--arg", `a=${nest(1000)}`], { source }))).toEqual({ n: 1 });
    usage(await run(["--arg", `a=${nest(1001)}`], { source }), "vvm: --arg a: objects and lists nested deeper than 1000 levels are not supported");
    expect(exportsOf(await run(["--input", "in.json"], { source, files: { "in.json": `{"a": ${nest(999)}}` } }))).toEqual({ n: 1 });
    usage(await run(["--input", "in.json"], { source, files: { "in.json": `{"a": ${nest(1000)}}` } }), "vvm: --input in.json:1:1006: objects and lists nested deeper than 1000 levels are not supported");
  });

  it("text that starts like JSON but is not is still the text, with a warning saying where it stopped being JSON; quoted as a JSON string it has none", async () => {
    const source = ["input a", "export a", ""].join("\n");
    const typo = await run(["--arg", 'a={"k": 1'], { source });
    expect(exportsOf(typo)).toEqual({ a: '{"k": 1' });
    expect(typo.stderr).toContain("vvm: warning: --arg a: starts like JSON but is not (at 1:8: expected ',' or '}' after the field \"k\"");
    expect(typo.stderr).toContain("so it is passed as text; if text is meant, quote it as a JSON string to say so\n");
    const wip = await run(["--arg", "a= [WIP] fix login"], { source });
    expect([exportsOf(wip), wip.stderr]).toEqual([{ a: " [WIP] fix login" }, expect.stringContaining("vvm: warning: --arg a: starts like JSON but is not (at 1:3: ")]);
    for (const quiet of ['a="[WIP] fix login"', "a=fix [WIP]", "a=plain"]) expect((await run(["--arg", quiet], { source })).stderr).not.toContain("warning");
  });

  it("an --arg wins over the --input file's field", async () => {
    const r = await run(["--input", "in.json", "--arg", "tone=curt"], { files: { "in.json": '{"ticket": "t", "tone": "warm"}' } });
    expect(exportsOf(r)).toMatchObject({ ticket: "t", tone: "curt" });
  });

  it("a name the program does not declare is a usage error that lists its inputs", async () => {
    usage(await run(["--arg", "ticket=x", "--arg", "tnoe=y"]), "vvm: --arg tnoe: the program has no input 'tnoe' (the program's inputs: ticket, tone, limit)");
    usage(await run(["--arg", "x=1"], { source: "y = 1\nexport y\n" }), `vvm: --arg x: the program has no input 'x' (the program declares no inputs (declare one with input name: "description"))`);
  });

  it("the same --arg twice is a usage error", async () => {
    usage(await run(["--arg", "ticket=a", "--arg", "ticket=b"]), "vvm: --arg ticket is given twice");
    // and a field given twice in an --arg's JSON is refused too, never read as text or as its last value
    usage(await run(["--arg", 'ticket={"id": 1, "id": 2}']), 'vvm: --arg ticket: the field "id" is given twice in this object');
  });

  it.each([
    ["ticket", "(no '=' found)"],
    ["=x", "(no name before '=')"],
    ["1x=2", "('1x' cannot be an input's name: ASCII letters, digits and _, not starting with a digit)"],
    ["a-b=2", "('a-b' cannot be an input's name"],
    ["tïcket=2", "('tïcket' cannot be an input's name"],
  ])("--arg %s is not name=value: usage error from the command line, saying which part is wrong", async (arg, why) => {
    usage(await run(["--arg", arg]), /option '--arg <name=value>' argument .* is invalid\. expected name=value with an input's name/);
    usage(await run(["--arg", arg]), why);
  });
});

describe("missing inputs", () => {
  it("a required input left out is exit 64 before any call, naming it and its description", async () => {
    usage(await run([]), "vvm: missing input 'ticket' (The support ticket): pass --arg ticket=VALUE or a field in an --input JSON file (vvm check lists the program's inputs)");
  });

  it("comes before the provider is chosen: no key needed to learn an input is missing", async () => {
    const p = prog();
    const r = await runCli(["run", "main.vvm", "--provider", "anthropic"], { cwd: p.dir });
    usage(r, "missing input 'ticket'");
    expect(r.stderr).not.toContain("ANTHROPIC_API_KEY");
  });

  it("prints a usage error as one line with control characters escaped, from the program or the input file", async () => {
    const source = 'input w: "multi\\nline\\u001b[31m"\nexport w\n';
    let r = await run([], { source });
    usage(r, "vvm: missing input 'w' (multi\\u000aline\\u001b[31m): pass --arg w=VALUE");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    r = await run(["--input", "in.json"], { source, files: { "in.json": '{"a\\u001b[31mred\\nsecond line": 1}' } });
    usage(r, "vvm: --input in.json: field 'a\\u001b[31mred\\u000asecond line' is not an input of the program");
    // the command line's own mistakes too (commander's messages quote the argument)
    r = await run(["--arg", "t\u001b[2J\n=1"], { source });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("argument 't\\u001b[2J\\u000a=1' is invalid. expected name=value");
    // a control character where a JSON value belongs is named by its code point, C1 ones too
    usage(await run(["--input", "in.json"], { source, files: { "in.json": '{"w": \u009b1}' } }), "vvm: --input in.json:1:7: expected a JSON value, found U+009B");
  });

  it("lists every missing input", async () => {
    const source = 'input a: "first"\ninput b\ninput c = 1\nexport pack(a, b, c)\n';
    usage(await run([], { source }), "vvm: missing inputs 'a' (first), 'b': pass --arg a=VALUE for each");
  });

  it("a program run without vvm (runProgram) and no inputs raises thrown at the declaration", async () => {
    const { checkProgram } = await import("../../src/check.ts");
    const { runProgram } = await import("../../runtime/interpreter/index.ts");
    const { noTrace } = await import("../../runtime/trace.ts");
    const p = prog();
    const outcome = await runProgram(await checkProgram(p.file("main.vvm")), {
      agents: { call: async () => "", judge: async () => false, choose: async (r) => r.labels[0]! },
      trace: noTrace,
      signal: new AbortController().signal,
      concurrency: 1,
    });
    expect(outcome.kind).toBe("raised");
    expect(outcome.kind === "raised" && outcome.error).toEqual(
      new Map([["error", new Map([["kind", "thrown"], ["message", "input 'ticket' was not given (vvm run --arg ticket=VALUE)"]])]]),
    );
    p.cleanup();
  });
});

describe("vvm check lists the inputs", () => {
  it("on stdout, in order, with required or the default's source text, and the description", async () => {
    const p = writeProgram({
      "main.vvm": 'input ticket: "The support ticket"\ninput tone: "How the reply sounds" = "friendly"\ninput limits = { words: 120,\n  lists: [] }\ninput flag\nexport pack(ticket, tone, limits, flag)\n',
    });
    const r = await runCli(["check", "main.vvm"], { cwd: p.dir });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(
      [
        "inputs of main.vvm (vvm run main.vvm --arg name=VALUE, or --input FILE.json with these fields):",
        '  ticket  required                           The support ticket',
        '  tone    default "friendly"                 How the reply sounds',
        "  limits  default { words: 120, lists: [] }",
        "  flag    required",
        "",
      ].join("\n"),
    );
    p.cleanup();
  });

  it("nothing on stdout for a program without inputs, or one with errors", async () => {
    const p = writeProgram({ "a.vvm": "x = 1\nexport x\n", "b.vvm": 'input t: "x"\nreturn 1\n' });
    expect(await runCli(["check", "a.vvm"], { cwd: p.dir })).toEqual({ code: 0, stdout: "", stderr: "" });
    const bad = await runCli(["check", "b.vvm"], { cwd: p.dir });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe("");
    p.cleanup();
  });

  it("an imported module's input is E023, and vvm run refuses the program before anything runs", async () => {
    const p = writeProgram({ "main.vvm": 'from "./lib.vvm" import f\nx = f()\nexport x\n', "lib.vvm": 'input style = "plain"\ndef f():\n  return style\nexport f\n' });
    const r = await runCli(["run", "main.vvm", "--provider", "sim"], { cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("lib.vvm:1:7: E023 input 'style' is declared in a module that main.vvm imports");
    p.cleanup();
  });
});

describe("examples/support-reply.vvm", () => {
  it("takes its ticket from examples/ticket.json and reads the scripted JSON answer as data", async () => {
    const r = await runCli(["run", "examples/support-reply.vvm", "--input", "examples/ticket.json", "--script", "examples/support-reply.yaml"]);
    expect(exportsOf(r)).toEqual({ category: "bug", urgent: true, reply: "Sorry about that, Ada: a fix for the export button ships today." });
  });

  it("offline, the simulator's answer is not JSON and the program says why", async () => {
    const r = await runCli(["run", "examples/support-reply.vvm", "--provider", "sim", "--arg", "ticket=The export button does nothing"]);
    expect(exportsOf(r)).toEqual({ category: "unknown", urgent: false, reply: "No triage: json(): expected a JSON value, found 'sim' (line 1, column 2)" });
  });
});
