// When the secret scanner cannot run (its rules failed to load), state.md holds no name or summary it
// could not check, and the run goes on (runtime/state/summary.ts withoutSecrets).
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { newRun, removeRuns } from "./helpers.ts";
import { isRef } from "../../runtime/values.ts";

vi.mock("../../runtime/memory/secrets.ts", () => ({
  preloadSecretRules: () => {},
  scanSecrets: async () => {
    throw new Error("the rules did not load");
  },
}));

afterEach(removeRuns);

it("withholds every name and summary, and still writes the binding and returns its ref", async () => {
  const run = await newRun();
  const ref = await run.bind({ name: "research", agent: "a", text: "A plain reply.", retries: 0, pause: async () => true });
  expect(isRef(ref)).toBe(true);
  run.noteFailure("other", "a", "timeout");
  await run.finish("completed", "Completed");
  const md = readFileSync(path.join(run.dir, "state.md"), "utf8");
  expect(md).toContain("| (withheld: looks like a secret) | bindings/b000001.md | (withheld: looks like a secret) |");
  expect(md).toContain('(withheld: looks like a secret) = @a failed: error(kind="timeout")');
  expect(md).not.toContain("research");
  expect(readFileSync(path.join(run.dir, "bindings", "b000001.md"), "utf8")).toBe("A plain reply.");
});
