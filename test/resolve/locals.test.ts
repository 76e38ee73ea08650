// Scope layouts (spec/language.md §6): each scope's names and frame slots, as the checker writes them once and the interpreter reads them.
import { afterEach, describe, expect, it } from "vitest";
import type { DefStmt, Stmt } from "../../grammar/ast.ts";
import { checkProgram } from "../../src/check.ts";
import { writeProgram, type TmpProgram } from "../support/program.ts";

let prog: TmpProgram | null = null;
afterEach(() => {
  prog?.cleanup();
  prog = null;
});

function defsByName(body: readonly Stmt[], out = new Map<string, DefStmt>()): Map<string, DefStmt> {
  for (const s of body) {
    if (s.kind === "Def") {
      out.set(s.name, s);
      defsByName(s.body, out);
    }
  }
  return out;
}

async function localsOf(source: string, extra: Record<string, string> = {}) {
  prog = writeProgram({ "main.vvm": source, ...extra });
  const result = await checkProgram(prog.file("main.vvm"));
  const mod = result.modules.get(result.entry)!;
  const defs = defsByName(mod.program.body);
  const locals = (name: string) => [...(mod.layout.functions.get(defs.get(name)!)?.slots.keys() ?? [])].sort();
  return { result, mod, locals };
}

describe("scope layouts", () => {
  it("hold parameters and every name bound anywhere in the body, and nothing from nested defs", async () => {
    const { locals, mod, result } = await localsOf(`g = 1
def f(p, q):
  x = 1
  for i in [1]:
    pass
  try:
    pass
  except as err:
    pass
  choose p by ?\`which\` as label:
    option "a":
      y = 2
    option "b":
      pass
  match q:
    case error(e):
      pass
    case _:
      pass
  with input p:
    z = 3
  def inner(r):
    w = r
    return w
  if true:
    v = 1
  elif false:
    u = 2
  else:
    t = 3
  while false:
    s = 4
  return [g, x, i, err, label, y, e, z, v, u, t, s, inner]
out = f(1, 2)
export out
`);
    expect(result.diagnostics).toEqual([]);
    expect(locals("f")).toEqual(["e", "err", "i", "inner", "label", "p", "q", "s", "t", "u", "v", "x", "y", "z"]);
    expect(locals("inner")).toEqual(["r", "w"]);
    expect([...mod.layout.module.slots.keys()].sort()).toEqual(["f", "g", "out"]);
  });

  it("include a name assigned after it is read (reading it first is a run-time unbound local)", async () => {
    const { locals } = await localsOf(`g = 1
def f():
  a = g
  g = 2
  return a
r = f()
export r
`);
    expect(locals("f")).toEqual(["a", "g"]);
  });

  it("never include it, even when a program assigns it (E060)", async () => {
    const { locals, result } = await localsOf(`def f(a):
  it = a
  return a
r = f(1)
export r
`);
    expect(result.diagnostics.map((d) => d.code)).toEqual(["E060"]);
    expect(locals("f")).toEqual(["a"]);
  });

  it("give module names for every module-level binding form, value imports included and agent imports not", async () => {
    const { mod } = await localsOf(
      `from "./lib.vvm" import helper as h
from "./lib.vvm" import @bot
agent local(model="haiku")
for item in [1]:
  pass
try:
  pass
except as problem:
  pass
match 1:
  case error(bad):
    pass
  case _:
    pass
choose 1 by ?\`pick\` as picked:
  option "x":
    inside = 1
def fn():
  return 1
x = [h, item, problem, bad, picked, inside, fn, @bot \`hi\`(())]
export x
`,
      { "lib.vvm": `agent bot(model="haiku")\ndef helper():\n  return 1\nexport helper\nexport @bot\n` },
    );
    expect([...mod.layout.module.slots.keys()].sort()).toEqual(["bad", "fn", "h", "inside", "item", "picked", "problem", "x"]);
  });

  it("are computed for modules with syntax errors elsewhere too (the parser keeps complete statements)", async () => {
    const { result, locals } = await localsOf(`def f(a):\n  b = a\n  return b\nx = 1 +\n`);
    expect(result.diagnostics.map((d) => d.code)).toEqual(["E001"]);
    expect(locals("f")).toEqual(["a", "b"]);
  });

  it("give parameters the first slots, then names in source order; say where a def's names can be called directly; list the agents and export keys", async () => {
    const { mod, result } = await localsOf(`agent bot(model="haiku")
def f(b, a):
  c = a
  def g():
    return c
  h = g
  return [b, h(), @bot \`hi\`(())]
def twice():
  return 1
twice = 2
r = f(1, 2)
export pack(r=r)
export [ r ,  twice ]
`);
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const f = mod.layout.functions.get(mod.program.body.find((s): s is DefStmt => s.kind === "Def" && s.name === "f")!)!;
    expect([...f.slots]).toEqual([["b", 0], ["a", 1], ["c", 2], ["g", 3], ["h", 4]]);
    expect(f.parent).toBe(mod.layout.module);
    expect([...f.defOnly.keys()]).toEqual(["g"]);
    expect([...mod.layout.module.defOnly.keys()]).toEqual(["f"]);
    expect([...mod.layout.agents]).toEqual(["bot"]);
    expect([...mod.exportKeys.values()]).toEqual(["pack(r=r)", "[ r , twice ]"]);
  });
});
