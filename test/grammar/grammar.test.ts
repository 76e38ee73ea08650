import { describe, expect, it } from "vitest";
import { CappedDiagnostics, diagnostic, MAX_ERRORS } from "../../grammar/diagnostics.ts";
import { layout } from "../../grammar/layout.ts";
import { VvmParser } from "../../grammar/parser.ts";
import { lexer } from "../../grammar/tokens.ts";

describe("grammar definition", () => {
  it("passes Chevrotain's own checks (no ambiguities, no left recursion)", () => {
    // The CLI builds its parser with validations skipped to start faster; this is where they run.
    expect(() => new VvmParser(true)).not.toThrow();
  });
});

describe("error recovery", () => {
  it("resumes at a token index of the input it was given, without copying the input", () => {
    const text = "x = = 1\ny = 2\n";
    const tokens = layout(lexer.tokenize(text).tokens, text, "t.vvm").tokens;
    const count = tokens.length;
    const parser = new VvmParser();
    parser.input = tokens;
    parser.programFrom(tokens.findIndex((t) => t.image === "y"));
    expect(parser.errors).toEqual([]);
    expect(parser.collected.map((s) => s.kind === "Assign" && s.target)).toEqual(["y"]);
    expect(parser.input).toBe(tokens);
    expect(tokens.length).toBe(count); // Chevrotain's end padding is gone again
  });

  it("keeps the first MAX_ERRORS diagnostics of each code, in order, and wants no more of a full code", () => {
    const sink = new CappedDiagnostics();
    const at = (line: number) => ({ line, col: 1, endLine: line, endCol: 2 });
    for (let line = 1; line <= MAX_ERRORS + 10; line++) sink.push(diagnostic("E005", "unknown escape", "t.vvm", at(line)));
    sink.push(diagnostic("E052", "lone '}'", "t.vvm", at(1000)));
    expect(sink.kept.map((d) => `${d.code} ${d.span.line}`)).toEqual([
      ...Array.from({ length: MAX_ERRORS }, (_, k) => `E005 ${k + 1}`),
      "E052 1000",
    ]);
    expect(sink.wants("E005")).toBe(false);
    expect(sink.wants("E052")).toBe(true);
  });
});
