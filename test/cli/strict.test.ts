// Strict runs and failed results through the real CLI, in-process: `--strict` turns every warning into a refusal
// before anything runs, an exported error value makes `vvm run` exit 1 unless --allow-error-exports, and the
// summary line counts failed calls and judges by error kind.
import { cpSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli, type CliResult } from "../support/cli.ts";
import { REFERENCE_EXAMPLES, referenceExamples } from "../support/examples.ts";
import { useTempDir } from "../support/fixtures.ts";
import { writeProgram } from "../support/program.ts";

const CHECK_CASES = path.join(ROOT, "test/conformance/check");
const dir = useTempDir("vvm-strict-");

/** The warning conformance programs and the codes each expects (`# expect: W030 2:1, …`). */
const warningCases = readdirSync(CHECK_CASES)
  .filter((f) => /^W\d+-.*\.vvm$/.test(f))
  .sort()
  .map((f) => {
    const codes = new Set<string>();
    for (const m of readFileSync(path.join(CHECK_CASES, f), "utf8").matchAll(/^# expect: (.*)$/gm)) {
      for (const c of m[1]!.matchAll(/\b([EW]\d{3})\b/g)) codes.add(c[1]!);
    }
    return { file: f, codes: [...codes].sort() };
  });

// A copy, so runs that use memory write their .vvm/ there and never inside the repository.
const cases = path.join(dir, "check");
cpSync(CHECK_CASES, cases, { recursive: true });

describe("--strict", () => {
  it("has a warning program for every warning code of spec/diagnostics.md", () => {
    const documented = [...readFileSync(path.join(ROOT, "spec/diagnostics.md"), "utf8").matchAll(/^\| (W\d{3}) \|/gm)].map((m) => m[1]!);
    const covered = new Set(warningCases.flatMap((c) => c.codes));
    expect(documented.length).toBeGreaterThanOrEqual(13);
    expect(documented.filter((c) => !covered.has(c))).toEqual([]);
  });

  it.each(warningCases.map((c) => [c.file, c.codes]))("%s: vvm run --strict refuses to run (exit 2), naming %j", async (file, codes) => {
    expect(codes.every((c) => c.startsWith("W"))).toBe(true);
    const strict = await runCli(["run", "--strict", "--provider", "sim", file], { cwd: cases });
    expect(strict.code).toBe(2);
    expect(strict.stdout).toBe("");
    // the warnings themselves are printed as usual, then the refusal; no call was made (no summary line)
    for (const c of codes) expect(strict.stderr).toMatch(new RegExp(`${file.replace(".", "\\.")}:\\d+:\\d+: ${c} `));
    expect(strict.stderr).toMatch(new RegExp(`vvm: --strict: (1 warning \\(${codes.join(", ")}\\) counts as an error|\\d+ warnings \\(${codes.join(", ")}\\) count as errors); nothing ran\\n$`));
    expect(strict.stderr).not.toMatch(/vvm: \d+ calls?/);
    // without --strict the same program is not refused
    const plain = await runCli(["run", "--provider", "sim", "--allow-error-exports", file], { cwd: cases });
    expect(plain.code).not.toBe(2);
    expect(plain.stderr).toMatch(/vvm: \d+ calls?/);
  });

  it.each(warningCases.map((c) => [c.file]))("%s: vvm check --strict exits 2, vvm check 0", async (file) => {
    const strict = await runCli(["check", "--strict", file], { cwd: cases });
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(/vvm: --strict: (1 warning \(W\d{3}\) counts as an error|\d+ warnings \(W\d{3}.*\) count as errors)\n$/);
    expect((await runCli(["check", file], { cwd: cases })).code).toBe(0);
  });

  it("one warning reads in the singular", async () => {
    const p = writeProgram({ "main.vvm": "x = 1\ny = 2\nexport y\n" });
    const r = await runCli(["run", "--strict", "main.vvm"], { cwd: p.dir });
    expect(r.stderr).toContain("vvm: --strict: 1 warning (W030) counts as an error; nothing ran\n");
    p.cleanup();
  });

  it("a program without warnings runs as usual", async () => {
    const p = writeProgram({ "main.vvm": "x = 1\nexport x\n" });
    const r = await runCli(["run", "--strict", "--provider", "sim", "main.vvm"], { cwd: p.dir });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ x: 1 });
    expect((await runCli(["check", "--strict", "main.vvm"], { cwd: p.dir })).code).toBe(0);
    p.cleanup();
  });

  it("errors are reported as errors (no --strict line), and strictness comes before the inputs", async () => {
    const p = writeProgram({ "bad.vvm": "return 1\n", "warn.vvm": 'input t: "needed"\nunused = t\nexport t\n' });
    const bad = await runCli(["run", "--strict", "bad.vvm"], { cwd: p.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("E080");
    expect(bad.stderr).not.toContain("--strict");
    // a warning and a missing input: the warning is the refusal (exit 2), not the input (64)
    const warn = await runCli(["run", "--strict", "warn.vvm"], { cwd: p.dir });
    expect(warn.code).toBe(2);
    expect(warn.stderr).not.toContain("missing input");
    p.cleanup();
  });
});

function exportsOf(r: CliResult): Record<string, unknown> {
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

describe("exported error values", () => {
  const SOURCE = [
    'agent a(model="haiku")',
    "good = @a `Fine.`(())",
    "late = @a `Slow one.`((), timeout=\"50ms\")",
    "refused = @a `Refused one.`(())",
    "kept = [refused]",
    "export good",
    "export late",
    "export refused",
    "export kept",
    "",
  ].join("\n");
  const SCRIPT = "- { kind: agent, match: Slow, delay: 2s, reply: late }\n- { kind: agent, match: Refused, error: { kind: rejected, status: 403, message: no } }\n";

  it("exit 1 by default, the exports still on stdout, each failed export named with its kind", async () => {
    const p = writeProgram({ "main.vvm": SOURCE, "s.yaml": SCRIPT });
    const r = await runCli(["run", "main.vvm", "--script", "s.yaml"], { cwd: p.dir });
    expect(r.code).toBe(1);
    const out = exportsOf(r);
    expect(Object.keys(out)).toEqual(["good", "late", "refused", "kept"]);
    expect(out.late).toMatchObject({ error: { kind: "timeout" } });
    // only exports that are error values count: `kept` holds one inside a list
    expect(r.stderr).toContain("vvm: 2 exports are error values: 'late' (timeout), 'refused' (rejected): exit 1 (--allow-error-exports exits 0)\n");
    // the summary line stays last, with the failures by kind
    expect(r.stderr).toMatch(/vvm: 3 calls, 2 failed \(1 rejected, 1 timeout; 3 attempts\), 0 judges \(0 attempts\), .*\[script\]\n$/);
    p.cleanup();
  });

  it("--allow-error-exports exits 0 with the same stdout", async () => {
    const p = writeProgram({ "main.vvm": SOURCE, "s.yaml": SCRIPT });
    const strict = await runCli(["run", "main.vvm", "--script", "s.yaml"], { cwd: p.dir });
    const allowed = await runCli(["run", "main.vvm", "--script", "s.yaml", "--allow-error-exports"], { cwd: p.dir });
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toBe(strict.stdout);
    expect(allowed.stderr).not.toContain("error value");
    p.cleanup();
  });

  it("one failed export is named alone, by its export key", async () => {
    const p = writeProgram({ "main.vvm": 'e = { error: { kind: "custom", message: "m" } }\nexport pack(result=e)\n' });
    const r = await runCli(["run", "main.vvm", "--provider", "sim"], { cwd: p.dir });
    expect(r.code).toBe(1);
    expect(exportsOf(r)).toEqual({ result: { error: { kind: "custom", message: "m" } } });
    expect(r.stderr).toContain("vvm: export 'result' is an error value (custom): exit 1 (--allow-error-exports exits 0)\n");
    p.cleanup();
  });

  it("an object that merely has an error field of text is no error value", async () => {
    const p = writeProgram({ "main.vvm": 'note = { error: "none today" }\nexport note\n' });
    const r = await runCli(["run", "main.vvm", "--provider", "sim"], { cwd: p.dir });
    expect(r.code).toBe(0);
    p.cleanup();
  });

  it("an uncaught raise is still exit 1 with nothing on stdout", async () => {
    const p = writeProgram({ "main.vvm": 'raise "stop"\n' });
    const r = await runCli(["run", "main.vvm", "--provider", "sim", "--allow-error-exports"], { cwd: p.dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    p.cleanup();
  });

  it.skipIf(!REFERENCE_EXAMPLES)("the reference example 07-errors exports error values on purpose: exit 1 by default, 0 when allowed", async () => {
    const file = path.join(referenceExamples(), "07-errors.vvm");
    const r = await runCli(["run", file, "--provider", "sim"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("vvm: 2 exports are error values: 'reason' (thrown), 'outer' (thrown)");
    expect((await runCli(["run", file, "--provider", "sim", "--allow-error-exports"], { cwd: dir })).code).toBe(0);
  });
});

describe("the summary line", () => {
  it("counts failed calls and judges by kind, most frequent first", async () => {
    const p = writeProgram({
      "main.vvm": [
        'agent a(model="haiku")',
        "r = [@a `one`(()), @a `two`(()), @a `three`(()), @a `four`(()), @a `fine`(())]",
        "try:",
        "  j = ?`judged`(1)",
        "except as e:",
        "  j = e.error.data.kind",
        "export j",
        "",
      ].join("\n"),
      "s.yaml": [
        "- { kind: agent, match: one, error: { kind: spawn_failed, status: 529 } }",
        "- { kind: agent, match: two, error: { kind: rejected, status: 400 } }",
        "- { kind: agent, match: three, error: { kind: rejected, status: 404 } }",
        "- { kind: agent, match: four, error: { kind: timeout } }",
        "- { kind: predicate, error: { kind: rejected, status: 401 } }",
        "",
      ].join("\n"),
    });
    const r = await runCli(["run", "main.vvm", "--script", "s.yaml"], { cwd: p.dir, env: { VVM_RETRY_BASE_MS: "1" } });
    expect(r.code).toBe(0);
    expect(exportsOf(r)).toEqual({ j: "rejected" });
    expect(r.stderr).toMatch(/vvm: 5 calls, 4 failed \(2 rejected, 1 spawn_failed, 1 timeout; 5 attempts\), 1 judge, 1 failed \(1 rejected; 1 attempt\), tokens/);
    p.cleanup();
  });

  it("says nothing of failures when none failed", async () => {
    const p = writeProgram({ "main.vvm": 'agent a(model="haiku")\nr = @a `x`(())\nexport r\n' });
    const r = await runCli(["run", "main.vvm", "--provider", "sim"], { cwd: p.dir });
    expect(r.stderr).toMatch(/vvm: 1 call \(1 attempt\), 0 judges \(0 attempts\), tokens/);
    p.cleanup();
  });
});
