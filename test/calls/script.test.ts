// The script file format: strict validation with positions, rule matching and consumption.
import { mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadScript, MAX_SCRIPT_BYTES, parseScript, ScriptError, ScriptProvider } from "../../runtime/providers/script.ts";
import { agent, callReq, chooseReq, harness, judgeReq } from "./helpers.ts";
import { errorOf } from "../support/errors.ts";

function invalid(text: string): string {
  try {
    parseScript(text, "s.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ScriptError);
    return (err as Error).message;
  }
  throw new Error("the script was accepted");
}

describe("validation", () => {
  const cases: [string, string, string][] = [
    ["YAML syntax", "rules: [ { reply: x }", "s.yaml:1:"],
    ["not a list", "reply: x", 's.yaml:1:1: unknown top-level field "reply" (expected "rules")'],
    ["rules not a list", "rules: 3", "s.yaml:1:8: a script is a list of rules"],
    ["rule not an object", "- just text", "s.yaml:1:3: rule 1: a rule is an object"],
    ["unknown field", "- reply: x\n  rplay: y", 's.yaml:2:3: rule 1: unknown field "rplay" (expected one of:'],
    ["no answer", "- agent: a", "s.yaml:1:3: rule 1: give exactly one answer (reply, verdict, label, error or tool_use)"],
    ["two answers", "- reply: x\n  verdict: true", "rule 1: give exactly one answer (reply, verdict, label, error or tool_use), not reply and verdict"],
    ["reply not a string", "- reply: [1]", "s.yaml:1:10: rule 1: reply: expected a string"],
    ["bad verdict", "- verdict: maybe", 's.yaml:1:12: rule 1: verdict: expected true, false or "uncertain"'],
    ["bad kind", "- kind: agnet\n  reply: x", 's.yaml:1:9: rule 1: kind: unknown kind "agnet"'],
    ["reply for a judge", "- kind: predicate\n  reply: x", "rule 1: kind: a reply cannot answer a predicate call"],
    ["label for an agent", "- kind: agent\n  label: x", "rule 1: kind: a label cannot answer an agent call"],
    ["agent on a judge rule", "- verdict: true\n  agent: a", "rule 1: agent: only agent calls have an agent name"],
    ["bad regex", "- reply: x\n  regex: '('", "s.yaml:2:10: rule 1: regex: not a valid regular expression"],
    ["bad delay", "- reply: x\n  delay: 3", 'rule 1: delay: expected a string'],
    ["bad delay text", "- reply: x\n  delay: soon", 'rule 1: delay: expected a duration such as "200ms" or "2s", got "soon"'],
    ["bad times", "- reply: x\n  times: 0", "s.yaml:2:10: rule 1: times: expected a whole number of at least 1"],
    ["error kind", "- error: { kind: boom }", 'rule 1: error: kind: expected spawn_failed, timeout or rejected, got "boom"'],
    ["error status", "- error: { kind: rejected, status: 42 }", "rule 1: error: status: expected an HTTP status (100–599)"],
    ["error field", "- error: { kind: rejected, code: 1 }", 'rule 1: error: unknown field "code"'],
    ["retry_after", "- error: { kind: rejected, retry_after: 2 }", 'rule 1: error: retry_after: expected a duration such as "1s"'],
    ["usage field", "- reply: x\n  usage: { tokens: 3 }", 'rule 1: usage: unknown field "tokens"'],
    ["usage count", "- reply: x\n  usage: { input_tokens: 100000000000000000000000 }", "rule 1: usage: input_tokens: expected a whole number from 0 to 9007199254740991"],
    ["duplicate key", "- reply: x\n  reply: y", "s.yaml:2:3: not valid YAML or JSON"],
    ["second rule", "- reply: x\n- reply: y\n  times: -1", "s.yaml:3:10: rule 2: times:"],
  ];
  for (const [what, text, expected] of cases) {
    it(what, () => {
      expect(invalid(text)).toContain(expected);
    });
  }

  it("nesting deeper than 500 levels is refused at its place, also where the yaml package's own recursion gives out", () => {
    const nested = (depth: number) => `- { kind: agent, tool_use: [{ name: x, input: { a: ${"[".repeat(depth)}${"]".repeat(depth)} } }] }`;
    // four collections hold the first bracket: 495 brackets make 500 levels
    expect(parseScript(nested(495), "s.yaml")).toHaveLength(1);
    expect(invalid(nested(496))).toBe("s.yaml:1:547: not valid YAML or JSON: lists and mappings nested deeper than 500 levels are not supported");
    const yamlLimit = invalid(nested(5000));
    expect(yamlLimit).toMatch(/^s\.yaml:1:\d+: not valid YAML or JSON: lists and mappings nested deeper than 500 levels are not supported$/);
    expect(invalid(`rules:\n${Array.from({ length: 600 }, (_, i) => `${"  ".repeat(i)}- `).join("\n")}`)).toContain("nested deeper than 500 levels");
  });

  it("accepts JSON and the bare-list form", () => {
    const rules = parseScript('{"rules": [{"kind": "choose", "label": "b"}, {"verdict": "uncertain"}]}', "s.json");
    expect(rules.map((r) => [...r.kinds])).toEqual([["choose"], ["predicate", "case", "require"]]);
    expect(parseScript("- reply: x\n- kind: judge\n  verdict: true\n", "s.yaml")).toHaveLength(2);
  });

  it("a missing file says so; a device, a directory, a file over 16 MiB or one that is not UTF-8 is refused without being used", async () => {
    await expect(loadScript("/nonexistent/x.yaml", "x.yaml")).rejects.toThrow("x.yaml: no such file");
    await expect(loadScript(os.tmpdir(), "tmp")).rejects.toThrow("tmp: a directory, not a file");
    await expect(loadScript("/dev/zero", "/dev/zero")).rejects.toThrow("/dev/zero: not a regular file");
    const dir = await mkdtemp(path.join(os.tmpdir(), "vvm-script-"));
    try {
      const big = path.join(dir, "big.yaml");
      await writeFile(big, "");
      await truncate(big, MAX_SCRIPT_BYTES + 1);
      await expect(loadScript(big, "big.yaml")).rejects.toThrow("big.yaml: larger than 16 MiB");
      const latin1 = path.join(dir, "latin1.yaml");
      await writeFile(latin1, Buffer.from('- { reply: "caf\xe9" }\n', "latin1"));
      await expect(loadScript(latin1, "latin1.yaml")).rejects.toThrow("latin1.yaml: not UTF-8 text");
      const bom = path.join(dir, "bom.yaml");
      await writeFile(bom, "\uFEFF- { reply: café }\n");
      expect((await loadScript(bom, "bom.yaml"))[0].answer).toEqual({ type: "reply", text: "café" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("matching", () => {
  const p = () =>
    new ScriptProvider(
      parseScript(
        `
rules:
  - { kind: agent, agent: fetcher, match: "status of", times: 2, error: { kind: rejected, status: 429, message: "busy" } }
  - { kind: agent, agent: fetcher, regex: "^Summ", reply: "all green", usage: { input_tokens: 10, output_tokens: 4, cache_read_tokens: 2 } }
  - { kind: agent, input: "T-88", reply: "ticket seen" }
  - { kind: predicate, match: money, verdict: true }
  - { kind: [case, require], verdict: false }
  - { kind: choose, match: style, label: facts }
  - { kind: choose, label: nothing-like-it }
`,
        "s.yaml",
      ),
    );

  it("matches in order on kind, agent, substring, regex and input; times consumes a rule", async () => {
    const { rt, acc } = harness(p());
    const fetcher = agent("fetcher");
    const first = errorOf(await rt.call(callReq(fetcher, "Summarise the status of payments", null)))!;
    expect(first).toMatchObject({ kind: "rejected", message: "busy" });
    expect(await rt.call(callReq(fetcher, "Summarise the status of payments", null, { retry: 1 }))).toBe("all green");
    expect(acc.inputTokens).toBe(10);
    expect(acc.outputTokens).toBe(4);
    expect(acc.cacheReadTokens).toBe(2);
    expect(await rt.call(callReq(agent("other"), "anything", new Map([["id", "T-88"]])))).toBe("ticket seen");
    expect(await rt.call(callReq(agent("other"), "Summarise", null))).toBe("[sim:other] Summarise");
  });

  it("a regex with the g or y flag matches every call it fits, not every other one (RegExp.test keeps a position)", async () => {
    const { rt } = harness(new ScriptProvider(parseScript(`- { regex: "/^record/gi", reply: "recorded" }\n- { regex: "/^Note/y", reply: "noted" }\n`, "s.yaml")));
    for (const task of ["Record one", "Record two", "Record three"]) expect(await rt.call(callReq(agent("a"), task, null))).toBe("recorded");
    for (const task of ["Note one", "Note two"]) expect(await rt.call(callReq(agent("a"), task, null))).toBe("noted");
  });

  it("judges and choose", async () => {
    const { rt } = harness(p());
    expect(await rt.judge(judgeReq("predicate", "about money", 1))).toBe(true);
    expect(await rt.judge(judgeReq("predicate", "about bugs", 1))).toBe(false);
    expect(await rt.judge(judgeReq("case", "anything", 1))).toBe(false);
    expect(await rt.choose(chooseReq("which style", 1, ["apology", "facts"]))).toBe("facts");
    // A label that is not an option is unusable: the first option wins.
    expect(await rt.choose(chooseReq("which tone", 1, ["warm", "cold"]))).toBe("warm");
  });

  it("loads from a file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "vvm-script-"));
    try {
      await writeFile(path.join(dir, "r.yaml"), "- reply: from file\n");
      const rules = await loadScript(path.join(dir, "r.yaml"), "r.yaml");
      const { rt } = harness(new ScriptProvider(rules));
      expect(await rt.call(callReq(agent("a"), "t", null))).toBe("from file");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
