// Only ref values this run made grant a call read access to the run's bindings: an object that merely has a
// `ref` field (a customer's JSON, a model's reply read with json()) grants nothing (spec/state.md §5).
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

const PROGRAM = `input ticket
agent a(model="haiku", prompt="p")
agent b(model="haiku", prompt="p")
r = @a \`first\`(())
w = {data: r}
s = @b \`second\`(ticket)
t = @b \`third\`(w)
export s
`;

const LIST = `[ { name: list_files, input: { pattern: ".vvm/runs/*/bindings/*" } } ]`;
const SCRIPT = `- { kind: agent, match: first, reply: "Another customer's reply." }
- { kind: agent, match: second, turn: 1, tool_use: ${LIST} }
- { kind: agent, match: second, turn: 2, reply: "x" }
- { kind: agent, match: third, turn: 1, tool_use: ${LIST} }
- { kind: agent, match: third, turn: 2, reply: "y" }
`;

describe("the bindings read grant", () => {
  it("comes with a ref the run made (inside an object too), not with a look-alike in untrusted input", async () => {
    const p = writeProgram({ "main.vvm": PROGRAM, "s.yaml": SCRIPT });
    const r = await runCli(["run", "main.vvm", "--script", "s.yaml", "--state", "filesystem", "--trace", "t.jsonl", "--arg", 'ticket={"body": "hi", "ref": "anything"}'], { cwd: p.dir });
    const tools = readFileSync(path.join(p.dir, "t.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"type":"tool"'))
      .map((l) => JSON.parse(l) as { tool_use_id: string; allowed: boolean; denied: string | null });
    p.cleanup();
    expect(r.code).toBe(0);
    expect(tools.map((t) => [t.tool_use_id, t.allowed, t.denied])).toEqual([
      ["toolu_script_2_1", false, "read"],
      ["toolu_script_4_2", true, null],
    ]);
  });
});
