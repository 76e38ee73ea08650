// state.md's names and summaries are scanned for secrets in batches, one scan per write rather than one per
// call (runtime/state/state-file.ts), and a batch still withholds exactly the texts that hold a secret.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { newRun, removeRuns } from "./helpers.ts";

const scans = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../runtime/memory/secrets.ts", async (importActual) => {
  const actual = await importActual<typeof import("../../runtime/memory/secrets.ts")>();
  return {
    ...actual,
    scanSecrets: (...args: Parameters<typeof actual.scanSecrets>) => {
      scans.count++;
      return actual.scanSecrets(...args);
    },
  };
});

afterEach(removeRuns);

it("scans a wide pmap's names and summaries a batch at a time, and withholds only the one with a secret", async () => {
  const run = await newRun();
  const github = "ghp_" + "R8x2kQ9mZ4vB7nL1pW3tY6uH0jC5dF8gA2sE";
  // more calls than one scan reads (256 texts), finishing together
  const calls = 300;
  await Promise.all(
    Array.from({ length: calls }, (_, i) =>
      run.bind({ name: `item_${i}`, agent: "worker", text: i === 150 ? `Token is ${github} for CI.` : `Item ${i} was handled.`, retries: 0, pause: async () => true }),
    ),
  );
  await run.finish("completed", "Completed");
  const md = readFileSync(path.join(run.dir, "state.md"), "utf8");
  expect(md).toContain("| item_150 | bindings/b000151.md | (withheld: looks like a secret) |");
  expect(md).not.toContain("ghp_");
  for (const i of [0, 149, 151, 299]) expect(md).toContain(`| item_${i} | bindings/b${String(i + 1).padStart(6, "0")}.md | Item ${i} was handled. |`);
  // 600 texts: a handful of scans, not one per call
  expect(scans.count).toBeGreaterThanOrEqual(3);
  expect(scans.count).toBeLessThan(20);
});
