// Resolver rules beyond the one-file-per-code conformance cases: the edges of W030, W032, W040, E040, E070, E081.
import { afterEach, describe, expect, it } from "vitest";
import { checkProgram } from "../../src/check.ts";
import { STDLIB_NAMES } from "../../stdlib/names.ts";
import { writeProgram, type TmpProgram } from "../support/program.ts";
import { codesAt } from "./tmp-program.ts";

let prog: TmpProgram | null = null;
afterEach(() => {
  prog?.cleanup();
  prog = null;
});

async function check(source: string, extra: Record<string, string> = {}): Promise<string[]> {
  prog = writeProgram({ "main.vvm": source, ...extra });
  const result = await checkProgram(prog.file("main.vvm"));
  return codesAt(result.diagnostics, prog.file("main.vvm"));
}

describe("W032 unknown name", () => {
  it("hints VVM's spelling of a Python word, and only of those (not of names an object inherits)", async () => {
    prog = writeProgram({ "main.vvm": "a = True\nb = __proto__\nc = constructor\nd = toString\nexport pack(a, b, c, d)\n" });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.filter((d) => d.code === "W032").map((d) => /\(VVM writes [^)]*\)/.exec(d.message)?.[0] ?? null)).toEqual([
      "(VVM writes true)",
      null,
      null,
      null,
    ]);
  });
});

describe("W030 unused variable", () => {
  it("counts reads in nested functions, in placeholders, in @name and in constrain", async () => {
    expect(
      await check(`def outer(p):
  seen_by_closure = p
  in_template = 1
  agent_value = base.with(model="haiku")
  constrained = "x"
  constrain constrained():
    require ?\`short\`
  def inner():
    return seen_by_closure
  return [inner(), @agent_value \`{in_template}\`(())]
agent base(model="haiku")
r = outer(1)
export r
`),
    ).toEqual([]);
  });

  it("counts a read in the variable's own update (x = x + 1) as a read", async () => {
    expect(await check(`n = 0\nfor i in [1, 2]:\n  n = n + 1\n`)).toEqual([]);
  });

  it("reports a local shadowing a module name once, in the function", async () => {
    expect(await check(`x = 1\ndef f():\n  x = 2\n  return 1\nr = f() + x\nexport r\n`)).toEqual(["W030 3:3"]);
  });
});

describe("W040 pmap over a shared memory key", () => {
  const lib = {
    "lib.vvm": `agent keeper(model="haiku", memory={ scope: "user", key: "team" })\nexport @keeper\n`,
  };

  it("follows agent imports to the declaration's memory", async () => {
    expect(
      await check(
        `from "./lib.vvm" import @keeper as k
def note(item):
  return @k \`note {item}\`(item)
r = pmap([1, 2], note)
export r
`,
        lib,
      ),
    ).toEqual(["W040 3:10"]);
  });

  it("checks inline agents, keyword f=, and keys derived from the item through a loop", async () => {
    expect(
      await check(`def inline(item):
  return @{model="haiku", memory={ scope: "project", key: "one" }} \`go\`(item)
def looped(item):
  for part in item:
    key = "k-" + part
  return @{model="haiku", memory={ scope: "project", key: key }} \`go\`(item)
a = pmap([1], f=inline)
b = pmap([[1]], looped)
export pack(a, b)
`),
    ).toEqual(["W040 2:10"]);
  });

  it("stays quiet when pmap is a user function, the mapped name is reassigned, or the agent is a variable", async () => {
    expect(
      await check(`agent shared(model="haiku", memory={ scope: "project", key: "k" })
def work(item):
  return @shared \`go\`(item)
def uses_variable(item):
  helper = item
  return @helper \`go\`(item)
other = work
other = 1
a = pmap([1], other)
b = pmap([1], uses_variable)
def run():
  def pmap(items, f):
    return items
  return pmap([1], work)
c = run()
export pack(a, b, c)
`),
    ).toEqual([]);
  });

  it("warns once per call even when several pmaps map the same function", async () => {
    expect(
      await check(`agent shared(model="haiku", memory={ scope: "project", key: "k" })
def work(item):
  return @shared \`go\`(item)
a = pmap([1], work)
b = pmap([2], work)
export pack(a, b)
`),
    ).toEqual(["W040 3:10"]);
  });

  it("judges a function's calls once however many pmaps map it", async () => {
    // each pmap judged every call of the function again: 2,000 pmaps of a function making 2,000 calls, a 66 KB
    // program, took some 15 s
    const n = 2_000;
    const program = `agent shared(model="haiku", memory={ scope: "project", key: "k" })
def work(item):
${"  y = @shared `go`(item)\n".repeat(n)}  return y
${"r = pmap([1], work)\n".repeat(n)}export r
`;
    // (its speed at this size and half of it: bench/check-scaling.bench.ts)
    const found = await check(program);
    expect(found).toHaveLength(n);
    expect(found.every((c, i) => c === `W040 ${i + 3}:7`)).toBe(true);
  });

  it("follows a key derived through a long chain written bottom-up", async () => {
    // k0 = k1, k1 = k2, … k{n} = item inside a loop: each link is found from the one below it. The fixed point
    // re-scanned the whole body once per link, so 20,000 links took some 20 s.
    const n = 20_000;
    const chain = Array.from({ length: n }, (_, i) => `    k${i} = k${i + 1}
`).join("");
    const program = (key: string) => `agent shared(model="haiku", memory={ scope: "project", key: "k" })
def work(item):
  while true:
${chain}    k${n} = item
  return @shared.with(memory={ scope: "project", key: ${key} }) \`go\`(item)
r = pmap([1], work)
export r
`;
    // (its speed at this size and half of it: bench/check-scaling.bench.ts)
    expect(await check(program("k0"))).toEqual([]);
    expect(await check(program('"fixed"'))).toEqual(["W030 4:5", `W040 ${n + 5}:10`]); // k0 is then never read
  });
});

describe("scoping rules", () => {
  it("E070 is textual: a binding later in a loop body does not count", async () => {
    expect(await check(`agent w(model="haiku")\nfor i in [1]:\n  constrain d():\n    require ?\`ok\`\n  d = @w \`go\`(())\nexport d\n`)).toEqual(["E070 3:13"]);
  });

  it("E081 allows break in try/finally inside a loop", async () => {
    expect(await check(`while true:\n  try:\n    break\n  finally:\n    pass\n`)).toEqual([]);
  });

  it("E051 accepts every standard-library name and member paths on parameters", async () => {
    const names = STDLIB_NAMES.map((n) => `{${n}}`).join(" ");
    expect(await check(`agent w(model="haiku")\ndef f(req):\n  return @w \`${names} {req.a.b}\`(())\nr = f(1)\nexport r\n`)).toEqual([]);
  });

  it("E040 accepts an agent passed as a parameter or bound by a loop", async () => {
    expect(
      await check(`agent a(model="haiku")
agent b(model="haiku")
out = []
for reviewer in [a, b]:
  out = out + [@reviewer \`go\`(())]
export out
`),
    ).toEqual([]);
  });

  it("reports every error, not just the first, sorted by position", async () => {
    expect(await check(`break\ncontinue\nreturn\nx = @nope \`{missing}\`(())\nit = 1\n`)).toEqual([
      "E081 1:1",
      "E081 2:1",
      "E080 3:1",
      "W030 4:1",
      "E040 4:6",
      "E051 4:12",
      "E060 5:1",
    ]);
  });
});

describe("W021 memory key", () => {
  it("says empty of an empty key and blank of one of only whitespace", async () => {
    prog = writeProgram({ "main.vvm": 'agent a(model="haiku", prompt="p", memory={ scope: "project", key: "" })\nagent b(model="haiku", prompt="p", memory={ scope: "project", key: "  " })\nexport pack(a, b)\n' });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.filter((d) => d.code === "W021").map((d) => d.message)).toEqual(["memory key is empty", "memory key is blank (only whitespace)"]);
  });
});

describe("W021 perm(...)", () => {
  it("says the run stops while configuring agents only of a declaration; at a call site, the statement raises when it runs", async () => {
    prog = writeProgram({ "main.vvm": 'agent a(model="haiku", permissions=perm(read="docs"))\nr = @a.with(permissions=perm(read="src")) `Go.`(())\nexport r\n' });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.filter((d) => d.code === "W021").map((d) => d.message)).toEqual([
      "perm(read=...) needs a list of glob strings, got a string (the run would stop here, while configuring agents)",
      "perm(read=...) needs a list of glob strings, got a string (raises thrown whenever this runs)",
    ]);
  });
});

describe("W020 unknown agent configuration key", () => {
  it("points a permission written as a key of its own into permissions=perm(...), in a declaration and in .with(...)", async () => {
    prog = writeProgram({ "main.vvm": 'agent ops(model="haiku", bash="allow", temperature=0)\nr = @ops.with(read=["docs/**"]) `Go.`(())\nexport r\n' });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.filter((d) => d.code === "W020").map((d) => d.message.split("); ")[1] ?? null)).toEqual([
      "'bash' is a permission and grants nothing here: write permissions=perm(bash=...)",
      null,
      "'read' is a permission and grants nothing here: write permissions=perm(read=...)",
    ]);
  });
});

describe("W020 on the keys this runtime reads", () => {
  it("says max_turns and max_tokens are not portable, not that they are unknown", async () => {
    prog = writeProgram({ "main.vvm": 'agent ops(model="haiku", max_turns=4, max_tokens=100)\nr = @ops `Go.`(())\nexport r\n' });
    const result = await checkProgram(prog.file("main.vvm"));
    const messages = result.diagnostics.filter((d) => d.code === "W020").map((d) => d.message);
    expect(messages).toHaveLength(2);
    for (const m of messages) expect(m).toMatch(/^agent configuration key 'max_t\w+' is not portable: this runtime reads it/);
  });
});
