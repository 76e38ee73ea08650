// state.md is read with cat and editors: a model's text in it (a summary, a name) carries no control that
// could drive a terminal or reorder the line (spec/state.md §2).
import { describe, expect, it } from "vitest";
import { INDEX_CHARS, tableCell } from "../../runtime/state/summary.ts";

describe("state.md cells", () => {
  it("drop C0, C1 and bidi controls", () => {
    expect(tableCell("Evil \u001b[2J \u009b2J reply.\u202e txt \u2066x\u2069 \u200fy", INDEX_CHARS)).toBe("Evil [2J 2J reply. txt x y");
    expect(tableCell("name\u202e", 60)).toBe("name");
  });
});
