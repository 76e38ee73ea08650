// Runs every test/conformance/run/*.vvm and compares its exports, exit code and stderr with the
// expectations written in its comments (format: test/conformance/README.md).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fromJSON, type Value } from "../../runtime/values.ts";
import { runCli, ROOT } from "../support/cli.ts";
import { runWithFakes, type FakeScript } from "../support/fake-agents.ts";

const DIR = path.join(ROOT, "test/conformance/run");

interface Expectations {
  /** `# run-args: ["--arg", "topic=x"]`: more arguments for `vvm run` (paths relative to run/) */
  args: string[];
  exports: unknown;
  exit: number;
  stderr: string[];
  fake: FakeScript | null;
  calls: number | null;
}

export function parseExpectations(source: string): Expectations {
  const lines = source.split(/\r?\n/);
  const out: Expectations = { args: [], exports: undefined, exit: 0, stderr: [], fake: null, calls: null };
  const fake: Required<Pick<FakeScript, "replies" | "verdicts" | "choices">> = { replies: [], verdicts: [], choices: [] };
  for (let i = 0; i < lines.length; i++) {
    const m = /^# (expect-[a-z]+|fake-[a-z]+|agents|run-args):\s*(.*)$/.exec(lines[i] as string);
    if (!m) continue;
    const [, key, rest] = m as unknown as [string, string, string];
    const pair = () => {
      const k = rest.indexOf("=>");
      if (k < 0) throw new Error(`${key} needs 'substring => value': ${rest}`);
      return [rest.slice(0, k).trim(), rest.slice(k + 2).trim()] as const;
    };
    switch (key) {
      case "expect-exports": {
        let json = rest;
        while (i + 1 < lines.length && /^#( |$)/.test(lines[i + 1] as string) && !/^# (expect-|fake-|agents:)/.test(lines[i + 1] as string)) {
          json += "\n" + (lines[++i] as string).slice(2);
        }
        out.exports = JSON.parse(json);
        break;
      }
      case "run-args":
        out.args = JSON.parse(rest) as string[];
        break;
      case "expect-exit":
        out.exit = Number(rest);
        break;
      case "expect-stderr":
        out.stderr.push(rest);
        break;
      case "expect-calls":
        out.calls = Number(rest);
        break;
      case "agents":
        if (rest.trim() !== "fake") throw new Error(`unknown agents: ${rest}`);
        out.fake = fake;
        break;
      case "fake-reply": {
        const [k, v] = pair();
        fake.replies.push([k, fromJSON(JSON.parse(v)) as Value]);
        break;
      }
      case "fake-verdict": {
        const [k, v] = pair();
        fake.verdicts.push([k, v === "raise" ? "raise" : v === "true"]);
        break;
      }
      case "fake-choice": {
        const [k, v] = pair();
        fake.choices.push([k, v]);
        break;
      }
      default:
        throw new Error(`unknown directive ${key}`);
    }
  }
  return out;
}

async function runWithFake(file: string, script: FakeScript) {
  const r = await runWithFakes(file, script);
  switch (r.outcome.kind) {
    case "ok":
      return { code: 0, stdout: JSON.stringify(r.exports), stderr: "", agents: r.agents };
    case "raised":
      return { code: 1, stdout: "", stderr: JSON.stringify(r.error), agents: r.agents };
    case "interrupted":
      return { code: 130, stdout: "", stderr: "interrupted", agents: r.agents };
    default: {
      const never: never = r.outcome;
      return never;
    }
  }
}

const files = readdirSync(DIR).filter((f) => f.endsWith(".vvm")).sort();

describe("conformance: vvm run", () => {
  it("has programs", () => expect(files.length).toBeGreaterThan(20));
  for (const name of files) {
    it(name, async () => {
      const file = path.join(DIR, name);
      const exp = parseExpectations(readFileSync(file, "utf8"));
      if (exp.fake && exp.args.length > 0) throw new Error("run-args need the CLI: drop '# agents: fake'");
      const r = exp.fake ? await runWithFake(file, exp.fake) : { ...(await runCli(["run", file, ...exp.args], { cwd: DIR })), agents: null };
      expect({ code: r.code, stderr: r.code === exp.exit ? "" : r.stderr }).toEqual({ code: exp.exit, stderr: "" });
      // exports are printed by a finished run, also one that exits 1 because an export is an error value
      if (exp.exit === 0 || exp.exports !== undefined) expect(JSON.parse(r.stdout)).toEqual(exp.exports ?? {});
      else expect(r.stdout).toBe("");
      for (const s of exp.stderr) expect(r.stderr).toContain(s);
      if (exp.calls !== null) expect(r.agents?.calls().length).toBe(exp.calls);
    });
  }
});
