// When the secret scanner cannot run (its rules failed to load), state.md holds no name or summary it
// could not check, and the run goes on (runtime/state/summary.ts withoutSecrets).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { RunDirectory } from "../../runtime/state/run-dir.ts";
import { isRef } from "../../runtime/values.ts";

vi.mock("../../runtime/memory/secrets.ts", () => ({
  preloadSecretRules: () => {},
  scanSecrets: async () => {
    throw new Error("the rules did not load");
  },
}));

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

it("withholds every name and summary, and still writes the binding and returns its ref", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "vvm-state-scan-"));
  dirs.push(dir);
  writeFileSync(path.join(dir, "main.vvm"), "export 1\n");
  const run = await RunDirectory.create({ entryPath: path.join(dir, "main.vvm"), source: "export 1\n", warn: () => {} });
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
