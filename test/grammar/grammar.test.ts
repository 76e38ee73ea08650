import { describe, expect, it } from "vitest";
import { VvmParser } from "../../grammar/parser.ts";

describe("grammar definition", () => {
  it("passes Chevrotain's own checks (no ambiguities, no left recursion)", () => {
    // The CLI builds its parser with validations skipped to start faster; this is where they run.
    expect(() => new VvmParser(true)).not.toThrow();
  });
});
