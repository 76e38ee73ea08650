// --strict-script through the real CLI: a call or judge no rule answers is error(kind="rejected") naming the
// call, the run exits 1 even when the program handled that error, and the rules never used are listed.
// Without it the simulator answers, and one warning says so.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

const PROGRAM = `agent support(model="haiku", prompt="You answer tickets.")
acme = support.with(prompt="You answer Acme's tickets.")
a = @acme \`Triage the ticket about exports\`(())
b = @support \`Summarise the day's tickets for the team lead\`(())
urgent = ?\`the ticket is urgent\`(a)
export pack(a, b, urgent)
`;

/** The run's result, and its --trace file when a flag asks for `t.jsonl`. */
async function run(script: string, ...flags: string[]) {
  const p = writeProgram({ "main.vvm": PROGRAM, "s.yaml": script });
  try {
    const r = await runCli(["run", "main.vvm", "--script", "s.yaml", ...flags], { cwd: p.dir });
    return { ...r, trace: flags.includes("t.jsonl") ? readFileSync(p.file("t.jsonl"), "utf8") : "" };
  } finally {
    p.cleanup();
  }
}

const ALL = `
- { agent: acme, reply: "triaged" }
- { agent: support, match: Summarise, reply: "summary" }
- { kind: predicate, verdict: true }
`;

describe("vvm run --strict-script", () => {
  it("a script that answers everything and uses every rule: exit 0 and nothing more on stderr", async () => {
    const r = await run(ALL, "--strict-script");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ a: "triaged", b: "summary", urgent: true });
    expect(r.stderr).not.toContain("--strict-script");
    expect(r.stderr).not.toContain("warning");
  });

  it("an unanswered call is error(kind=\"rejected\") naming the agent, the site and the task; the run exits 1", async () => {
    const r = await run(`- { agent: acme, reply: "triaged" }\n- { kind: predicate, verdict: true }\n`, "--strict-script", "--trace", "t.jsonl");
    expect(r.code).toBe(1);
    // the trace names the call's failure, never its task
    expect(r.trace).toContain("no script rule answers agent call 'support' at main.vvm:4:5");
    expect(r.trace).not.toContain("Summarise");
    const out = JSON.parse(r.stdout) as { b: { error: { kind: string; message: string } } };
    expect(out.b.error.kind).toBe("rejected");
    expect(out.b.error.message).toBe(`--strict-script: no script rule answers agent call 'support' at main.vvm:4:5`);
    expect(r.stderr).toContain(`vvm: --strict-script: no rule of s.yaml answered 1 call; each got error(kind="rejected"):\n  agent call 'support' at main.vvm:4:5: "Summarise the day's tickets for the team lead"\n`);
    expect(r.stderr).not.toContain("[sim:");
  });

  it("an unanswered judge is named too", async () => {
    const r = await run(`- { agent: acme, reply: "triaged" }\n- { agent: support, reply: "summary" }\n`, "--strict-script");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no rule of s.yaml answered 1 judge; each got error(kind="rejected"):\n  predicate judge at main.vvm:5:10: "the ticket is urgent"\n`);
  });

  it("exits 1 even when the program catches the error and exports nothing wrong", async () => {
    const p = writeProgram({
      "main.vvm": `agent a(model="haiku")\nr = @a \`hello\`(())\nok = "fine"\nmatch r:\n  case error(e):\n    ok = "handled"\n  case _:\n    pass\nexport ok\n`,
      "s.yaml": `- { agent: someone_else, reply: "x" }\n`,
    });
    try {
      const r = await runCli(["run", "main.vvm", "--script", "s.yaml", "--strict-script"], { cwd: p.dir });
      expect(JSON.parse(r.stdout)).toEqual({ ok: "handled" });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("agent call 'a' at main.vvm:2:5");
      expect(r.stderr).toContain(`1 rule of s.yaml never answered anything:\n  rule 1 (line 1): kind agent, agent someone_else\n`);
    } finally {
      p.cleanup();
    }
  });

  it("lists the rules never used, with their lines, and still exits 0 when every call was answered", async () => {
    const r = await run(`${ALL}- { agent: nobody, match: "never asked", reply: "x" }\n- { kind: choose, label: a }\n`, "--strict-script");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`vvm: --strict-script: 2 rules of s.yaml never answered anything:\n  rule 4 (line 5): kind agent, agent nobody, match "never asked"\n  rule 5 (line 6): kind choose\n`);
  });

  it("without --strict-script the simulator answers, one warning names the first such call, and unused rules are not listed", async () => {
    const r = await run(`- { agent: acme, reply: "triaged" }\n- { agent: nobody, reply: "x" }\n`);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).b).toMatch(/^\[sim:support\]/);
    expect(r.stderr).toContain(
      `vvm: warning: no rule of s.yaml answered 1 call and 1 judge, so the simulator did (first: agent call 'support' at main.vvm:4:5: "Summarise the day's tickets for the team lead"); --strict-script makes that an error\n`,
    );
    expect(r.stderr).not.toContain("never answered");
  });

  it("--strict-script needs --script", async () => {
    const p = writeProgram({ "main.vvm": PROGRAM });
    try {
      const r = await runCli(["run", "main.vvm", "--strict-script"], { cwd: p.dir });
      expect(r.code).toBe(64);
      expect(r.stderr).toContain("vvm: --strict-script needs --script FILE");
    } finally {
      p.cleanup();
    }
  });
});
