// Every example program parses with no diagnostics: the project's own examples/ (always in the repository)
// and the shared reference examples when the workspace has them (../shared/reference/examples).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "../../grammar/index.ts";
import { ROOT } from "../support/cli.ts";
import { brief } from "./helpers.ts";

function vvmFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".vvm"))
    .map((f) => path.join(dir, f))
    .sort();
}

const own = vvmFiles(path.join(ROOT, "examples"));
const reference = vvmFiles(path.resolve(ROOT, "../shared/reference/examples"));

describe("examples parse cleanly", () => {
  it("finds the project's examples", () => {
    expect(own.length).toBeGreaterThan(0);
  });

  it.each([...own, ...reference].map((f) => [path.relative(path.resolve(ROOT, ".."), f), f]))("%s", (_name, file) => {
    const r = parse(readFileSync(file, "utf8"), file);
    expect(r.diagnostics.map(brief)).toEqual([]);
    expect(r.program).not.toBeNull();
    expect(r.program!.body.length).toBeGreaterThan(0);
  });
});
