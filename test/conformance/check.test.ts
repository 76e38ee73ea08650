// Conformance driver for `vvm check`: every top-level test/conformance/check/*.vvm carries its expected
// diagnostics in comment lines, and the exact set of (code, file, line, col) must match.
//   # expect: E020 4:7            a diagnostic in this file
//   # expect: E090 lib/b.vvm:1:6  a diagnostic in another file of the program (path relative to this file)
//   # expect: ok                  no diagnostics at all
// Several expectations may share one line, separated by commas.
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkProgram } from "../../src/check.ts";
import { CODES } from "../../grammar/diagnostics.ts";
import { ROOT } from "../support/cli.ts";

const DIR = path.join(ROOT, "test/conformance/check");
const files = readdirSync(DIR, { withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".vvm"))
  .map((e) => e.name)
  .sort();

const EXPECT = /^\s*#\s*expect:\s*(.*)$/;
const ITEM = /^([EW]\d{3})\s+(?:(\S+):)?(\d+):(\d+)$/;

/** Expected diagnostics as `CODE path:line:col` keys, or an error message for a malformed expectation. */
function expectations(source: string, file: string): { keys: Set<string>; ok: boolean; errors: string[] } {
  const keys = new Set<string>();
  const errors: string[] = [];
  let ok = false;
  source.split(/\r?\n/).forEach((line, i) => {
    const m = EXPECT.exec(line);
    if (!m) return;
    for (const raw of m[1].split(",").map((s) => s.trim())) {
      if (raw === "ok") {
        ok = true;
        continue;
      }
      const item = ITEM.exec(raw);
      if (!item) {
        errors.push(`line ${i + 1}: cannot read expectation '${raw}'`);
        continue;
      }
      const target = item[2] ? realpathSync(path.resolve(path.dirname(file), item[2])) : file;
      keys.add(`${item[1]} ${path.relative(DIR, target)}:${item[3]}:${item[4]}`);
    }
  });
  return { keys, ok, errors };
}

describe("check conformance", () => {
  it("has programs to check", () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it("expects every diagnostic code somewhere (issue 2: one case per code)", () => {
    const expected = new Set<string>();
    for (const name of files) {
      const file = realpathSync(path.join(DIR, name));
      for (const k of expectations(readFileSync(file, "utf8"), file).keys) expected.add(k.split(" ")[0]!);
    }
    expect(Object.keys(CODES).filter((c) => !expected.has(c))).toEqual([]);
  });

  it.each(files)("%s", async (name) => {
    const file = realpathSync(path.join(DIR, name));
    const want = expectations(readFileSync(file, "utf8"), file);
    expect(want.errors).toEqual([]);
    if (!want.ok && want.keys.size === 0) throw new Error(`${name} has no '# expect:' lines`);
    if (want.ok && want.keys.size > 0) throw new Error(`${name} expects 'ok' and diagnostics at once`);

    const result = await checkProgram(file);
    const got = new Map<string, string>();
    for (const d of result.diagnostics) {
      got.set(`${d.code} ${path.relative(DIR, d.path)}:${d.span.line}:${d.span.col}`, d.message);
    }
    const missing = [...want.keys].filter((k) => !got.has(k));
    const extra = [...got.keys()].filter((k) => !want.keys.has(k));
    if (missing.length > 0 || extra.length > 0) {
      const lines = [
        `${name}: diagnostics differ from the '# expect:' lines`,
        ...missing.map((k) => `  - expected, not reported: ${k}`),
        ...extra.map((k) => `  + reported, not expected: ${k}  (${got.get(k)})`),
      ];
      throw new Error(lines.join("\n"));
    }
  });
});
