import { describe, expect, it } from "vitest";
import { parse } from "../../grammar/index.ts";
import { at, brief, firstStmt, ok, shape } from "./helpers.ts";

describe("statements", () => {
  it("agent declaration with options over several lines and a trailing comma", () => {
    const s = firstStmt('agent w(\n  model="haiku",\n  skills=["a"],\n)\n');
    expect(shape(s)).toEqual({
      kind: "AgentDecl",
      name: "w",
      kwargs: [
        { name: "model", value: { kind: "String", value: "haiku" } },
        { name: "skills", value: { kind: "List", items: [{ kind: "String", value: "a" }] } },
      ],
    });
    expect(at(s.span)).toBe("1:1-4:2");
    expect(s.kind === "AgentDecl" && at(s.nameSpan)).toBe("1:7-1:8");
  });

  it("def with parameters, nested def and return", () => {
    const s = firstStmt("def f(a, b):\n  def g(x):\n    return x\n  return g(a)\n");
    expect(shape(s)).toEqual({
      kind: "Def",
      name: "f",
      params: [{ name: "a" }, { name: "b" }],
      body: [
        { kind: "Def", name: "g", params: [{ name: "x" }], body: [{ kind: "Return", value: { kind: "Name", name: "x" } }] },
        {
          kind: "Return",
          value: { kind: "Call", callee: { kind: "Name", name: "g" }, args: [{ kind: "Name", name: "a" }], kwargs: [] },
        },
      ],
    });
    expect(at(s.span)).toBe("1:1-4:14");
    expect(s.kind === "Def" && s.params.map((p) => at(p.span))).toEqual(["1:7-1:8", "1:10-1:11"]);
  });

  it("skill import, module imports with aliases and agents, exports", () => {
    const p = ok(
      'import "web" from "github:o/r"\nfrom "./l.vvm" import f\nfrom "./l.vvm" import f as g\nfrom "./l.vvm" import @a as b\nexport f\nexport @a\nexport pack(a=f)\n',
    );
    expect(shape(p.body)).toEqual([
      { kind: "SkillImport", skill: { kind: "String", value: "web" }, source: { kind: "String", value: "github:o/r" } },
      { kind: "FromImport", path: { kind: "String", value: "./l.vvm" }, name: "f", isAgent: false, alias: null },
      { kind: "FromImport", path: { kind: "String", value: "./l.vvm" }, name: "f", isAgent: false, alias: "g" },
      { kind: "FromImport", path: { kind: "String", value: "./l.vvm" }, name: "a", isAgent: true, alias: "b" },
      { kind: "Export", target: { kind: "name", name: "f" } },
      { kind: "Export", target: { kind: "agent", name: "a" } },
      {
        kind: "Export",
        target: {
          kind: "expr",
          expr: {
            kind: "Call",
            callee: { kind: "Name", name: "pack" },
            args: [],
            kwargs: [{ name: "a", value: { kind: "Name", name: "f" } }],
          },
        },
      },
    ]);
    const alias = p.body[3]!;
    expect(alias.kind === "FromImport" && [at(alias.nameSpan), at(alias.aliasSpan!), at(alias.span)]).toEqual([
      "4:24-4:25",
      "4:29-4:30",
      "4:1-4:30",
    ]);
  });

  it("export of an agent call is an expression, not `export @name`", () => {
    const s = firstStmt("export @a `t`(x)\n");
    expect(s.kind === "Export" && s.target.kind).toBe("expr");
  });

  it("if / elif / else with spans per branch", () => {
    const s = firstStmt("if a:\n  x = 1\nelif b:\n  x = 2\nelse:\n  x = 3\n");
    expect(s.kind).toBe("If");
    if (s.kind !== "If") return;
    expect(s.branches.map((b) => at(b.span))).toEqual(["1:1-2:8", "3:1-4:8"]);
    expect(shape(s.orelse)).toEqual([{ kind: "Assign", target: "x", value: { kind: "Number", value: 3 } }]);
    expect(at(s.span)).toBe("1:1-6:8");
  });

  it("while, for, break, continue, pass", () => {
    const p = ok("while x < 3:\n  x = x + 1\n  continue\nfor i in range(3):\n  break\npass\n");
    expect(shape(p.body)).toEqual([
      {
        kind: "While",
        cond: { kind: "Binary", op: "<", left: { kind: "Name", name: "x" }, right: { kind: "Number", value: 3 } },
        body: [
          {
            kind: "Assign",
            target: "x",
            value: { kind: "Binary", op: "+", left: { kind: "Name", name: "x" }, right: { kind: "Number", value: 1 } },
          },
          { kind: "Continue" },
        ],
      },
      {
        kind: "For",
        target: "i",
        iter: { kind: "Call", callee: { kind: "Name", name: "range" }, args: [{ kind: "Number", value: 3 }], kwargs: [] },
        body: [{ kind: "Break" }],
      },
      { kind: "Pass" },
    ]);
    const f = p.body[1]!;
    expect(f.kind === "For" && at(f.targetSpan)).toBe("4:5-4:6");
  });

  it("match with every pattern kind", () => {
    const s = firstStmt(
      'match v:\n  case error(kind="timeout"):\n    pass\n  case error(e):\n    pass\n  case error(_):\n    pass\n  case ?`about {x}`:\n    pass\n  case _:\n    pass\n',
    );
    expect(s.kind).toBe("Match");
    if (s.kind !== "Match") return;
    expect(shape(s.cases.map((c) => c.pattern))).toEqual([
      { kind: "ErrorKind", errorKind: "timeout" },
      { kind: "ErrorBind", name: "e" },
      { kind: "ErrorAny" },
      {
        kind: "Semantic",
        criterion: { kind: "Template", parts: [{ kind: "text", value: "about " }, { kind: "path", names: ["x"] }] },
      },
      { kind: "Wildcard" },
    ]);
    expect(s.cases.map((c) => at(c.pattern.span))).toEqual(["2:8-2:29", "4:8-4:16", "6:8-6:16", "8:8-8:20", "10:8-10:9"]);
    const bind = s.cases[1]!.pattern;
    expect(bind.kind === "ErrorBind" && at(bind.nameSpan)).toBe("4:14-4:15");
  });

  it("choose with options and the label binding", () => {
    const s = firstStmt('choose t by ?`which fits` as style:\n  option "a":\n    r = 1\n  option "b":\n    r = 2\n');
    expect(shape(s)).toEqual({
      kind: "Choose",
      subject: { kind: "Name", name: "t" },
      criterion: { kind: "Template", parts: [{ kind: "text", value: "which fits" }] },
      binding: "style",
      options: [
        { label: "a", body: [{ kind: "Assign", target: "r", value: { kind: "Number", value: 1 } }] },
        { label: "b", body: [{ kind: "Assign", target: "r", value: { kind: "Number", value: 2 } }] },
      ],
    });
    expect(s.kind === "Choose" && [at(s.bindingSpan), at(s.options[1]!.labelSpan)]).toEqual(["1:30-1:35", "4:10-4:13"]);
  });

  it("constrain with options, with empty parentheses, and without", () => {
    const p = ok(
      'constrain d(attempts=2, time="5m"):\n  require ?`a`\n  require ?`b`\nconstrain d():\n  require ?`c`\nconstrain d:\n  require ?`e`\n',
    );
    expect(shape(p.body[0])).toEqual({
      kind: "Constrain",
      target: "d",
      kwargs: [
        { name: "attempts", value: { kind: "Number", value: 2 } },
        { name: "time", value: { kind: "String", value: "5m" } },
      ],
      requires: [
        { criterion: { kind: "Template", parts: [{ kind: "text", value: "a" }] } },
        { criterion: { kind: "Template", parts: [{ kind: "text", value: "b" }] } },
      ],
    });
    const c = p.body[0]!;
    expect(c.kind === "Constrain" && c.requires.map((r) => at(r.span))).toEqual(["2:3-2:15", "3:3-3:15"]);
    expect(p.body.slice(1).map((s) => s.kind === "Constrain" && s.kwargs.length)).toEqual([0, 0]);
  });

  it("with input, try/except/finally, raise with and without a value", () => {
    const p = ok(
      'with input d:\n  x = 1\ntry:\n  raise "boom"\nexcept as err:\n  raise\nfinally:\n  pass\ntry:\n  pass\nfinally:\n  raise err\n',
    );
    expect(shape(p.body)).toEqual([
      { kind: "WithInput", expr: { kind: "Name", name: "d" }, body: [{ kind: "Assign", target: "x", value: { kind: "Number", value: 1 } }] },
      {
        kind: "Try",
        body: [{ kind: "Raise", value: { kind: "String", value: "boom" } }],
        handler: { name: "err", body: [{ kind: "Raise", value: null }] },
        finalBody: [{ kind: "Pass" }],
      },
      { kind: "Try", body: [{ kind: "Pass" }], handler: null, finalBody: [{ kind: "Raise", value: { kind: "Name", name: "err" } }] },
    ]);
    const t = p.body[1]!;
    expect(t.kind === "Try" && [at(t.span), at(t.handler!.nameSpan)]).toEqual(["3:1-8:7", "5:11-5:14"]);
  });

  it("assignment to it is parsed (the validator reports E060)", () => {
    expect(shape(firstStmt("it = 1\n"))).toEqual({ kind: "Assign", target: "it", value: { kind: "Number", value: 1 } });
  });

  it("an expression statement keeps the expression's span", () => {
    const s = firstStmt("@a `t`(())\n");
    expect(s.kind).toBe("ExprStmt");
    expect(at(s.span)).toBe("1:1-1:11");
  });
});

describe("statement errors", () => {
  it("names what was expected and where (E001)", () => {
    const cases: [string, string][] = [
      ["if x\n  y = 1\n", "E001 1:5 expected ':' after the if condition, found NEWLINE"],
      ["while x\n  pass\n", "E001 1:8 expected ':' after the while condition, found NEWLINE"],
      ["def f(a, b)\n  pass\n", "E001 1:12 expected ':' after the parameter list, found NEWLINE"],
      ["if x:\ny = 1\n", "E001 2:1 expected an indented block after ':', found name 'y' (a block needs a statement: write pass for an empty one; a comment is not a statement)"],
      // upstream's EBNF counts a comment as a statement; here it is not, so say how to write an empty block
      ["if x:\n  # later\ny = 1\n", "E001 3:1 expected an indented block after ':', found name 'y' (a block needs a statement: write pass for an empty one; a comment is not a statement)"],
      ["x = (1, 2)\n", "E001 1:7 expected ')' to close '(', found ','"],
      ["x = [1 2]\n", "E001 1:8 expected ',' or ']' to close '[', found number 2"],
      ["x = 1 2\n", "E001 1:7 expected NEWLINE at the end of the statement, found number 2"],
      ["x = \n", "E001 1:4 expected an expression, found NEWLINE"],
      ["match x:\n  y = 1\n", "E001 2:3 expected 'case', found name 'y'"],
      ["if x:\n", "E001 2:1 expected an indented block after ':', found end of file (a block needs a statement: write pass for an empty one; a comment is not a statement)"],
      ["while x: pass\n", "E001 1:10 expected NEWLINE after ':' (the block starts on the next line, indented), found 'pass'"],
      ['agent a(model="x" prompt="y")\n', "E001 1:19 expected ',' or ')' to close '(', found name 'prompt'"],
      ["else:\n  pass\n", "E001 1:1 expected a statement, found 'else' (it must follow an if block)"],
      ["x = a.\n", "E001 1:7 expected a name in an expression, found NEWLINE"],
      // `lambda` before ':' is a name (a lambda needs a parameter), so the ':' is what the parser trips on
      ["f = lambda: 1\n", "E001 1:11 expected NEWLINE at the end of the statement, found ':' (a lambda takes at least one parameter: lambda x: …)"],
      ["try:\n  pass\nexcept:\n  pass\n", "E001 3:7 expected 'as', found ':' (except catches every raise: write except as name:)"],
      ["try:\n  pass\nexcept ValueError as e:\n  pass\n", "E001 3:8 expected 'as', found name 'ValueError' (except catches every raise: write except as name:)"],
      ['import @helper from "./x.vvm"\n', "E001 1:8 expected a string in a skill import, found '@' (to import an agent, write from \"./file.vvm\" import @name)"],
    ];
    for (const [src, want] of cases) expect(parse(src, "t.vvm").diagnostics.map(brief)).toEqual([want]);
  });

  it("resumes at the next top-level statement and keeps the good ones", () => {
    const r = parse("a = 1\nb = (\nc = 2\nd = )\ne = 3\n", "t.vvm");
    expect(r.diagnostics.map((d) => d.code)).toEqual(["E001"]);
    const r2 = parse("a = 1\nb = 1 2\nc = 2\nd = 3 4\ne = 3\n", "t.vvm");
    expect(r2.diagnostics.map(brief)).toEqual([
      "E001 2:7 expected NEWLINE at the end of the statement, found number 2",
      "E001 4:7 expected NEWLINE at the end of the statement, found number 4",
    ]);
    expect(r2.program!.body.map((s) => (s.kind === "Assign" ? s.target : s.kind))).toEqual(["a", "c", "e"]);
  });

  it("only a plain name can be assigned", () => {
    expect(parse("a.b = 1\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E001 1:1 only a plain name can be assigned (not a member, index or call)",
    ]);
  });

  it("a positional argument may not follow a keyword argument", () => {
    expect(parse("f(a=1, 2)\n", "t.vvm").diagnostics.map(brief)).toEqual([
      "E001 1:8 positional argument after a keyword argument",
    ]);
  });
});

describe("reserved words where a name is bound (E010)", () => {
  const cases: [string, string][] = [
    ["def if(a):\n  pass\n", "E010 1:5 'if' is a reserved word and cannot be used as a function name"],
    ["def f(in):\n  pass\n", "E010 1:7 'in' is a reserved word and cannot be used as a parameter name"],
    ["for error in xs:\n  pass\n", "E010 1:5 'error' is a reserved word and cannot be used as a loop variable"],
    ['agent match(model="x")\n', "E010 1:7 'match' is a reserved word and cannot be used as an agent name"],
    ['from "./l.vvm" import f as case\n', "E010 1:28 'case' is a reserved word and cannot be used as an import alias"],
    ["try:\n  pass\nexcept as input:\n  pass\n", "E010 3:11 'input' is a reserved word and cannot be used as the name bound by except"],
    ['choose x by ?`c` as option:\n  option "a":\n    pass\n', "E010 1:21 'option' is a reserved word and cannot be used as the name bound by choose"],
    ["true = 1\n", "E010 1:1 'true' is a reserved word and cannot be assigned"],
    ["for = 1\n", "E010 1:1 'for' is a reserved word and cannot be assigned"],
    ["def f():\n  while = 2\n", "E010 2:3 'while' is a reserved word and cannot be assigned"],
  ];
  for (const [src, want] of cases) {
    it(want, () => expect(parse(src, "t.vvm").diagnostics.map(brief)).toEqual([want]));
  }
});

describe("reserved words anywhere a name belongs (E010 only, issue 19)", () => {
  const AGENT_HINT = 'declare an agent and call it by its name: agent worker(model="sonnet", prompt="…"), then @worker';
  const INPUT_HINT = "use another name, such as data or item; `it` is the implicit input";
  const cases: [string, string, string?][] = [
    // the table
    ["r = @agent `hi`(())\n", "E010 1:6 'agent' is a reserved word and cannot be used as an agent name", AGENT_HINT],
    ["y = f(input)\n", "E010 1:7 'input' is a reserved word and cannot be used as an argument", INPUT_HINT],
    ["y = f(x=input)\n", "E010 1:9 'input' is a reserved word and cannot be used as an argument", INPUT_HINT],
    ["input = 1\n", "E010 1:1 'input' is a reserved word and cannot be assigned", INPUT_HINT],
    ["export input\n", "E010 1:8 'input' is a reserved word and cannot be used as an exported name", INPUT_HINT],
    ["def f(agent):\n  pass\n", "E010 1:7 'agent' is a reserved word and cannot be used as a parameter name"],
    ["for input in xs:\n  pass\n", "E010 1:5 'input' is a reserved word and cannot be used as a loop variable", INPUT_HINT],
    // the agent after '@'
    ['y = @agent.with(model="x") `hi`(())\n', "E010 1:6 'agent' is a reserved word and cannot be used as an agent name", AGENT_HINT],
    ["export @agent\n", "E010 1:9 'agent' is a reserved word and cannot be used as an agent name", AGENT_HINT],
    ["@input `hi`(())\n", "E010 1:2 'input' is a reserved word and cannot be used as an agent name", AGENT_HINT],
    // operands and arguments
    ["y = input + 1\n", "E010 1:5 'input' is a reserved word and cannot be used as a name", INPUT_HINT],
    ["y = [1, agent]\n", "E010 1:9 'agent' is a reserved word and cannot be used as a name"],
    ["y = f(a, input, b)\n", "E010 1:10 'input' is a reserved word and cannot be used as an argument", INPUT_HINT],
    ["y = f(a=1, input)\n", "E010 1:12 'input' is a reserved word and cannot be used as an argument", INPUT_HINT],
    ["y = @w `t`(input)\n", "E010 1:12 'input' is a reserved word and cannot be used as an argument", INPUT_HINT],
    ["y = f(in=1)\n", "E010 1:7 'in' is a reserved word and cannot be used as a keyword argument name"],
    ['agent a(input="x")\n', "E010 1:9 'input' is a reserved word and cannot be used as an agent configuration key"],
    ["y = error\n", "E010 1:5 'error' is a reserved word and cannot be used as a name"],
    ["y = case\n", "E010 1:5 'case' is a reserved word and cannot be used as a name"],
    ["def f():\n  return input\n", "E010 2:10 'input' is a reserved word and cannot be used as a name", INPUT_HINT],
    ["while input:\n  pass\n", "E010 1:7 'input' is a reserved word and cannot be used as a name", INPUT_HINT],
    ["input.x = 1\n", "E010 1:1 'input' is a reserved word and cannot be used as a name", INPUT_HINT],
    ["match v:\n  case error(input):\n    pass\n", "E010 2:14 'input' is a reserved word and cannot be used as the name bound by case error(…)", INPUT_HINT],
    ["match v:\n  case input:\n    pass\n", "E010 2:8 'input' is a reserved word and cannot be used as a name", INPUT_HINT],
    // names bound elsewhere
    ["x = lambda input: 1\n", "E010 1:12 'input' is a reserved word and cannot be used as a parameter name", INPUT_HINT],
    ["x = lambda a, agent: a\n", "E010 1:15 'agent' is a reserved word and cannot be used as a parameter name"],
    ["constrain input:\n  require ?`x`\n", "E010 1:11 'input' is a reserved word and cannot be used as a constrain target", INPUT_HINT],
    ['from "./l.vvm" import f as input\n', "E010 1:28 'input' is a reserved word and cannot be used as an import alias", INPUT_HINT],
    // a statement-start word that only continues statements, before '='
    ["case = 1\n", "E010 1:1 'case' is a reserved word and cannot be assigned"],
    ["if a:\n  x = 1\n  else = 1\n", "E010 3:3 'else' is a reserved word and cannot be assigned"],
  ];
  for (const [src, want, hint] of cases) {
    it(want, () => {
      const diags = parse(src, "t.vvm").diagnostics;
      expect(diags.map(brief)).toEqual([want]);
      expect(diags[0]!.hint).toBe(hint);
    });
  }

  it("keeps the words that are expressions, member names and keys working", () => {
    ok('x = [it, true, false]\ny = x.error.input\nz = {input: 1, agent: 2}\nwith input z:\n  pass\nmatch x:\n  case error(e):\n    pass\n');
    ok("f = lambda and b\ng = lambda x: x\n");
  });

  it("leaves the stray-clause and operator messages as they were", () => {
    const cases: [string, string][] = [
      ["else:\n  pass\n", "E001 1:1 expected a statement, found 'else' (it must follow an if block)"],
      ["if a:\n  x = 1\n  else:\n    pass\n", "E001 3:3 expected the end of the block, found 'else'"],
      ["if a:\n  else:\n    pass\n", "E001 2:3 expected a statement in the block, found 'else'"],
      ["match x:\n  case _:\n    pass\n    case _:\n      pass\n", "E001 4:5 expected the end of the block, found 'case'"],
      ["as x\n", "E001 1:1 expected a statement, found 'as'"],
      ["x = a and and b\n", "E001 1:11 expected an expression, found 'and'"],
    ];
    for (const [src, want] of cases) expect(parse(src, "t.vvm").diagnostics.map(brief)).toEqual([want]);
  });

  it("keeps parsing after the word, so a later mistake is still reported", () => {
    expect(parse("def f(x):\n  y = g(input)\n  return y\nw = 1 2\n", "t.vvm").diagnostics.map(brief).sort()).toEqual([
      "E001 4:7 expected NEWLINE at the end of the statement, found number 2",
      "E010 2:9 'input' is a reserved word and cannot be used as an argument",
    ]);
  });
});

describe("case patterns (E050)", () => {
  const cases: [string, string][] = [
    ["3", "E050 2:8 invalid case pattern: expected _, error(_), error(kind=\"...\"), error(name) or ?`criterion`"],
    ['"x"', "E050 2:8 invalid case pattern: expected _, error(_), error(kind=\"...\"), error(name) or ?`criterion`"],
    ["?`c`(v)", "E050 2:8 a case predicate takes no input: it is judged against the match subject; write ?`criterion`"],
    ['error(code="x")', 'E050 2:8 invalid error pattern: use error(_), error(kind="...") or error(name)'],
    ["error(a, b)", 'E050 2:8 invalid error pattern: use error(_), error(kind="...") or error(name)'],
    ["error()", 'E050 2:8 invalid error pattern: use error(_), error(kind="...") or error(name)'],
    ["error(kind=k)", 'E050 2:8 invalid error pattern: use error(_), error(kind="...") or error(name)'],
  ];
  for (const [pattern, want] of cases) {
    it(pattern, () => expect(parse(`match v:\n  case ${pattern}:\n    pass\n`, "t.vvm").diagnostics.map(brief)).toEqual([want]));
  }
});
