// Every example program parses with no diagnostics: the project's own examples/ (always in the repository)
// and the shared reference examples (../shared/reference/examples), modules in subfolders included.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "../../grammar/index.ts";
import { ROOT } from "../support/cli.ts";
import { REFERENCE_EXAMPLES } from "../support/examples.ts";
import { vvmFilesUnder } from "../support/programs.ts";
import { brief } from "./helpers.ts";

const own = vvmFilesUnder(path.join(ROOT, "examples"));
const reference = REFERENCE_EXAMPLES === null ? [] : vvmFilesUnder(REFERENCE_EXAMPLES);

describe("examples parse cleanly", () => {
  it("finds the project's examples", () => {
    expect(own.length).toBeGreaterThan(0);
  });

  it.skipIf(!REFERENCE_EXAMPLES)("finds the reference examples (when ../shared is beside the repository)", () => {
    expect(reference.length).toBeGreaterThan(0);
  });

  it.each([...own, ...reference].map((f) => [path.basename(path.dirname(f)) + "/" + path.basename(f), f]))("%s", (_name, file) => {
    const r = parse(readFileSync(file, "utf8"), file);
    expect(r.diagnostics.map(brief)).toEqual([]);
    expect(r.program).not.toBeNull();
    expect(r.program!.body.length).toBeGreaterThan(0);
  });
});
