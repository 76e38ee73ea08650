// Bad input never crashes the process: deep recursion through nested expressions and builtins, huge lists.
import { describe, expect, it } from "vitest";
import { closeSync, openSync } from "node:fs";
import { collect, runCli, spawnCli } from "../support/cli.ts";
import { programFile, writeProgram } from "../support/program.ts";
import { asRaise } from "../../runtime/interpreter/frame.ts";
import { add } from "../../runtime/interpreter/ops.ts";
import type { Value } from "../../runtime/values.ts";
import { errorOf } from "../support/errors.ts";

describe("writing the exports", () => {
  const big = () => programFile("xs = range(200000)\nexport xs\n");

  it("a reader that closes the pipe early (| head) ends the run quietly, exit 0", async () => {
    const child = spawnCli(["run", big()]);
    child.stdout!.once("data", () => child.stdout!.destroy());
    const r = await collect(child);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/EPIPE|Error|internal/);
  });

  it("stdout that cannot be written (a full disk) is said on stderr, exit 74", async () => {
    const fd = openSync("/dev/full", "w");
    try {
      const r = await collect(spawnCli(["run", big()], { stdoutFd: fd }));
      expect(r.code).toBe(74);
      expect(r.stderr).toContain("vvm: cannot write to stdout (ENOSPC)");
      expect(r.stderr).not.toMatch(/internal| {4}at /);
      // once, for a command that writes line by line too (it said so for each line vvm test printed)
      const dir = writeProgram({ "p.vvm": "x = 1\nexport x\n", "p.test.yaml": `program: p.vvm\nscript: []\ntests:\n${[1, 2, 3, 4, 5].map((n) => `  - { name: t${n}, expect: {} }\n`).join("")}` }).dir;
      const tested = await collect(spawnCli(["test", dir], { stdoutFd: fd }));
      expect([tested.code, tested.stderr]).toEqual([74, "vvm: cannot write to stdout (ENOSPC)\n"]);
    } finally {
      closeSync(fd);
    }
  });
});

describe("robustness", () => {
  it("a list longer than a value can hold is refused at '+'; V8's own length errors are said in the program's words", () => {
    const site = { path: "p.vvm", span: { line: 3, col: 7, endLine: 3, endCol: 12 } };
    const half: Value[] = [];
    half.length = 2 ** 26; // a holey list: its length without its memory
    expect(() => add(half, half, site)).toThrow("value too large: '+' would make a list of 134,217,728 items; a list holds at most 134,217,725 items");
    expect(errorOf(asRaise(new RangeError("Invalid array length"), site)?.value)?.message).toBe("value too large: a list holds at most 134,217,725 items");
    expect(errorOf(asRaise(new RangeError("Invalid string length"), site)?.value)?.message).toBe("value too large: a string holds at most 536,870,888 characters");
  });


  it("turns a JS stack overflow inside deeply nested expressions into a catchable thrown error", async () => {
    const file = programFile(`def step(n):
  return [[[[{ a: [[[1 + deep(n - 1)]]] }]]]]
def deep(n):
  if n == 0:
    return 0
  return map([n], step)[0][0][0][0][0].a[0][0][0]
try:
  deep(10000)
except as e:
  kind = e.error.kind
  msg = e.error.message
export kind
export msg
`);
    const r = await runCli(["run", file]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { kind: string; msg: string };
    expect(out.kind).toBe("thrown");
    expect(out.msg).toMatch(/^recursion (too deep|limit reached)/);
  });

  it("an uncaught recursion error exits 1 with the error on stderr, not a JS stack trace", async () => {
    const file = programFile(`def f(n):
  return f(n + 1)
x = f(0)
`);
    const r = await runCli(["run", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("recursion limit reached: more than 1000 nested calls (calling f)");
    expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it("runs a chain of 3,000 imports (each module started from the one importing it overflowed the stack)", async () => {
    const files: Record<string, string> = { "main.vvm": 'from "./m0.vvm" import v\nexport v\n', "m3000.vvm": "v = 1\nexport v\n" };
    for (let i = 0; i < 3000; i++) files[`m${i}.vvm`] = `from "./m${i + 1}.vvm" import v\nexport v\n`;
    const r = await runCli(["run", writeProgram(files).file("main.vvm")]);
    expect(r.stderr).not.toMatch(/recursion too deep|Maximum call stack/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ v: 1 });
  });

  it("a program whose values outgrow Node's heap raises out of memory where it is (a loop, calls, a long list made at once), catchable, never V8's fatal error", async () => {
    // a small heap, so each program reaches its end in about a second
    const env = { NODE_OPTIONS: "--max-old-space-size=200" };
    const programs = {
      loop: "xs = []\nwhile true:\n    xs = [xs, range(1000), range(1000)]\n",
      calls: "def pair(i):\n    return [range(500), range(500)]\n\nxs = map(range(1000000), pair)\n",
      concat: "xs = []\nfor i in range(30):\n    xs = xs + range(1000000)\n",
      range: "xs = []\nfor i in range(30):\n    xs = [xs, range(1000000)]\n",
    };
    const at = { loop: "2:7", calls: "4:1", concat: "3:10", range: "3:15" };
    for (const [name, source] of Object.entries(programs)) {
      const r = await collect(spawnCli(["run", "--provider", "sim", programFile(source)], { env }));
      expect([name, r.code]).toEqual([name, 1]);
      expect(r.stderr).toMatch(/uncaught error at .*main\.vvm:(\d+:\d+):[^]*out of memory: (the program's values take|this would add about) \d+ MB/);
      expect([name, /main\.vvm:(\d+:\d+):/.exec(r.stderr)?.[1]]).toEqual([name, at[name as keyof typeof at]]);
      expect(r.stderr).not.toMatch(/FATAL|heap limit| {4}at /);
    }
    // the error unwinds: what held the values is gone, and the program goes on
    const caught = "def grow():\n    xs = []\n    while true:\n        xs = [xs, range(1000)]\n\ntry:\n    grow()\nexcept as err:\n    seen = err.error.message\nafter = len(range(1000000))\nexport seen\nexport after\n";
    const r = await collect(spawnCli(["run", "--provider", "sim", programFile(caught)], { env }));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { seen: string; after: number };
    expect(out.seen).toMatch(/^out of memory: the program's values take \d+ MB, of the \d+ MB Node's heap may hold/);
    expect(out.after).toBe(1000000);
  });

  it("handles lists of a million items", async () => {
    const file = programFile(`def inc(x):
  return x + 1
def add(a, b):
  return a + b
xs = map(range(1000000), inc)
total = reduce(xs, add, init=0)
n = len(filter(xs, is_even))
def is_even(x):
  return x - (x - 0) == 0
export total
export n
`);
    const r = await runCli(["run", file]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ total: 500000500000, n: 1000000 });
  });

  it("reports values whose JSON is too long to print instead of crashing (here: nested 100,000 deep, indented)", async () => {
    const file = programFile(`x = []
for i in range(100000):
  x = [x]
try:
  same = x == [x]
except as e:
  compare = e.error.kind
export compare
export x
`);
    const r = await runCli(["run", file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("vvm: the exported values are too large to print as JSON: its JSON text would be longer than 268,435,456 characters: exit 1");
    expect(r.stderr).not.toContain("internal error");
    // (each run writes 256 MiB of JSON before the limit stops it: give a loaded machine time)
  }, 120_000);

  it("a value that shares its parts (2^30 paths) is refused as too large to export, and passes through a call's template and input", async () => {
    const doubled = (n: number) => `xs = [1]\nfor i in range(${n}):\n  xs = [xs, xs]\n`;
    const exported = await runCli(["run", programFile(doubled(30) + "export xs\n")]);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain("the exported values are too large to print as JSON");
    // the preview and the check whether the input holds the value visit each part once; the input itself is too large to send
    const called = await runCli(["run", programFile(`agent w(model="haiku", prompt="x")\n${doubled(40)}ys = [2]\nr = @w \`look at {ys}\`(xs)\nexport r\n`)]);
    expect(called.code).toBe(1);
    expect(called.stderr).toMatch(/uncaught error at .*:6:5:[\s\S]*value too large: its JSON text would be longer than/);
    expect(called.stderr).not.toMatch(/internal| {4}at /);
    // at the call or the judge whose input it is, not at the outermost statement around it (the if at 5:1)
    const judged = await runCli(["run", programFile(`${doubled(40)}ok = false\nif true:\n  ok = ?\`is it big\`(xs)\nexport ok\n`)]);
    expect(judged.stderr).toMatch(/uncaught error at .*:6:8:[\s\S]*value too large: its JSON text would be longer than/);
    // (each run writes 16 MiB of JSON before the value is measured whole: give a loaded machine time)
  }, 120_000);

  it("an uncaught error value of any size or depth is printed (cut) with its position, never a crash", async () => {
    const deep = await runCli(["run", programFile(`xs = []\nfor i in range(200000):\n  xs = [xs]\nraise {error: {kind: "k", message: "m", data: xs}}\n`)]);
    expect(deep.code).toBe(1);
    expect(deep.stderr).toMatch(/uncaught error at .*:4:1:\n\{\n {2}"error": \{\n {4}"kind": "k"/);
    expect(deep.stderr).toContain("… (cut: the error value's JSON is longer than 100,000 characters)");
    expect(deep.stderr).not.toMatch(/internal| {4}at /);
  });

  it("a string too large, made by a module-level statement, is raised at its '+'", async () => {
    const r = await runCli(["run", programFile(`s = "a"\nfor i in range(40):\n  s = s + s\nexport s\n`)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/uncaught error at .*:3:7:\n[\s\S]*"message": "value too large: '\+' would make a string of 536,870,912 characters; a string holds at most 536,870,888 characters"/);
  });

  it("a template too long for a string is raised at the template, with its traceback, also in a function that can suspend and in an export", async () => {
    const grow = `def grow():\n  s = "a"\n  for i in range(28):\n    s = s + s\n  return twice(s)\n`;
    const inFunction = await runCli(["run", programFile(`def twice(s):\n  for i in []:\n    pass\n  return \`{s}{s}\`\n${grow}r = grow()\nexport r\n`)]);
    expect(inFunction.code).toBe(1);
    expect(inFunction.stderr).toMatch(/uncaught error at .*:4:10:\n[\s\S]*value too large: a string holds at most/);
    expect(inFunction.stderr).toMatch(/in twice\(\), called at .*:9:10\n {2}in grow\(\), called at .*:10:5/);
    const exported = await runCli(["run", programFile(`s = "a"\nfor i in range(28):\n  s = s + s\nexport \`{s}{s}\`\n`)]);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toMatch(/uncaught error at .*:4:8:\n[\s\S]*value too large: a string holds at most/);
  });

  it("--narrate previews a deep value without changing the run's result", async () => {
    const file = programFile(`xs = []\nfor i in range(30000):\n  xs = [xs]\ny = 1\nexport y\n`);
    const r = await runCli(["run", file, "--narrate"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ y: 1 });
    expect(r.stderr).toMatch(/xs = \[\[\[\[/);
  });

  it("keeps an object's key order in exports and templates, integer-like keys included", async () => {
    const r = await runCli(["run", programFile(`o = {b: 1, "10": 2, "2": 3, a: 4}\nt = \`{o}\`\nexport o\nexport t\nexport 5\n`)]);
    expect(r.stdout).toBe('{\n  "o": {\n    "b": 1,\n    "10": 2,\n    "2": 3,\n    "a": 4\n  },\n  "t": "{\\"10\\":2,\\"2\\":3,\\"a\\":4,\\"b\\":1}",\n  "5": 5\n}\n');
  });

  it("keys an exported expression by its source text whatever the line ends (LF, CRLF, lone CR)", async () => {
    for (const nl of ["\n", "\r\n", "\r"]) {
      const file = programFile(["b = [1, 2]", "x = 0", "export len(b)", ""].join(nl));
      const r = await runCli(["run", file]);
      expect(JSON.parse(r.stdout)).toEqual({ "len(b)": 2 });
    }
  });
});
