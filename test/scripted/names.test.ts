// Script rules name an agent by the variable a `.with(...)` result was assigned to, or by any agent it was
// derived from; rules are tried in file order (spec/agent-calls.md §6).
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

const PROGRAM = `agent support(model="haiku", prompt="You answer tickets.")
acme = support.with(prompt="You answer Acme's tickets.")
acme_eu = acme.with(model="sonnet")
a = @acme \`first\`(())
b = @acme_eu \`second\`(())
c = @support.with(model="sonnet") \`third\`(())
d = @support \`fourth\`(())
export pack(a, b, c, d)
`;

async function run(script: string) {
  const p = writeProgram({ "main.vvm": PROGRAM, "s.yaml": script });
  try {
    const r = await runCli(["run", p.file("main.vvm"), "--script", p.file("s.yaml")]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, string>;
  } finally {
    p.cleanup();
  }
}

describe("script rules and derived agents", () => {
  it("a rule for the base agent answers calls through every agent derived from it", async () => {
    const out = await run(`- { agent: support, reply: "from support" }\n`);
    expect(out).toEqual({ a: "from support", b: "from support", c: "from support", d: "from support" });
  });

  it("a rule may name the variable, or an intermediate agent; the first matching rule in file order wins", async () => {
    const out = await run(`
- { agent: acme_eu, reply: "eu" }
- { agent: acme, reply: "acme" }
- { agent: support.with, reply: "unassigned" }
- { agent: support, reply: "base" }
`);
    expect(out).toEqual({ a: "acme", b: "eu", c: "unassigned", d: "base" });
  });

  it("a base rule before a derived one takes the derived calls too (file order, not closeness)", async () => {
    const out = await run(`
- { agent: support, reply: "base" }
- { agent: acme, reply: "acme" }
`);
    expect(out.a).toBe("base");
  });

  it("a derived name never answers its base or a sibling", async () => {
    const out = await run(`- { agent: acme, reply: "acme" }\n`);
    expect(out.a).toBe("acme");
    expect(out.b).toBe("acme");
    expect(out.c).toMatch(/^\[sim:support\.with\]/);
    expect(out.d).toMatch(/^\[sim:support\]/);
  });
});
