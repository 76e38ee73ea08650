// Every shipped program must check without errors: the shared reference examples (present next to the
// repository in the development workspace) and the repository's own examples/.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkProgram } from "../../src/check.ts";
import { ROOT } from "../support/cli.ts";
import { REFERENCE_EXAMPLES } from "../support/examples.ts";
import { programsIn } from "../support/programs.ts";

const REFERENCE = REFERENCE_EXAMPLES ?? "";
const reference = REFERENCE_EXAMPLES === null ? [] : programsIn(REFERENCE_EXAMPLES);
const own = programsIn(path.join(ROOT, "examples"));

async function errorsOf(file: string): Promise<string[]> {
  const result = await checkProgram(file);
  return result.diagnostics
    .filter((d) => d.severity === "error")
    .map((d) => `${path.basename(d.path)}:${d.span.line}:${d.span.col}: ${d.code} ${d.message}`);
}

describe.skipIf(reference.length === 0)(`reference examples (${REFERENCE})`, () => {
  it.each(reference.map((f) => [path.basename(f), f]))("%s checks with no errors", async (_name, file) => {
    expect(await errorsOf(file)).toEqual([]);
  });

  it("include the module example, whose library is loaded and checked too", async () => {
    const result = await checkProgram(path.join(REFERENCE, "06-modules.vvm"));
    expect([...result.modules.keys()].map((p) => path.relative(REFERENCE, p))).toEqual(["lib/shared.vvm", "06-modules.vvm"]);
  });
});

describe.skipIf(own.length === 0)("repository examples/", () => {
  it.each(own.map((f) => [path.basename(f), f]))("%s checks with no errors", async (_name, file) => {
    expect(await errorsOf(file)).toEqual([]);
  });
});
