// Typed results at their edges (spec/typed-results.md): what a program and a model read when a reply or a
// schema is unusual — previews, paths, schemas the validator cannot use.
import { describe, expect, it } from "vitest";
import { askTyped, prepareTyped, type Typed } from "../../runtime/calls/typed.ts";
import { fromJSON, type VObject } from "../../runtime/values.ts";

const site = { path: "t.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } };

async function typed(returns: unknown, withMemory = false): Promise<Typed> {
  return (await prepareTyped(fromJSON(returns), withMemory, site))!;
}

describe("a rejected reply", () => {
  it("keeps a preview cut between characters, never inside a surrogate pair", async () => {
    const text = "a".repeat(499) + "😀😀";
    const out = await askTyped(await typed({ n: "number" }), 0, "m", async () => ({ ok: true, text, attempts: 1, turns: 1, toolUses: 0 }));
    if (out.ok) throw new Error("accepted");
    const data = (out as { rejected: VObject }).rejected.get("error") as VObject;
    expect((data.get("data") as VObject).get("reply_preview")).toBe("a".repeat(499) + "…");
  });
});

describe("a problem's place", () => {
  it("is written as the program writes it: a key of digits as a key, a list's index as an index", async () => {
    const t = await typed({ "0": "string", l: ["number"] });
    expect(t.validate({ "0": 1, l: [1, "a"] })).toEqual(['["0"]: must be a string', "l[1]: must be a number"]);
  });
});
