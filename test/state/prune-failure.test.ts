// `vvm runs prune`: a run that cannot be removed (a folder not the user's to delete) is said as such, exit 1,
// and the runs after it are still removed.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it, vi } from "vitest";
import { runCli } from "../support/cli.ts";

const stuck = vi.hoisted(() => ({ id: "" }));
vi.mock("../../runtime/state/runs.ts", async (original) => {
  const real = await original<typeof import("../../runtime/state/runs.ts")>();
  return {
    ...real,
    removeRun: (run: { id: string }) => {
      if (run.id === stuck.id) throw Object.assign(new Error("permission denied"), { code: "EACCES" });
      real.removeRun(run as never);
    },
  };
});

const tmp = mkdtempSync(path.join(os.tmpdir(), "vvm-prune-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it("says which run it could not remove, exits 1, and removes the others", async () => {
  writeFileSync(path.join(tmp, "p.vvm"), "x = 1\nexport x\n");
  for (let i = 0; i < 3; i++) expect((await runCli(["run", "p.vvm", "--provider", "sim", "--state", "filesystem"], { cwd: tmp })).code).toBe(0);
  const runs = path.join(tmp, ".vvm", "runs");
  const ids = readdirSync(runs).sort();
  expect(ids).toHaveLength(3);
  stuck.id = ids[0]!;
  const r = await runCli(["runs", "prune", "--keep", "0", "--dir", tmp]);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`vvm: cannot remove ${ids[0]} (EACCES); it may be partly removed\n`);
  expect(r.stdout).toBe(`removed ${ids[1]} (completed)\nremoved ${ids[2]} (completed)\nremoved 2 runs\n`);
  expect(readdirSync(runs)).toEqual([ids[0]]);
  expect(existsSync(path.join(runs, ids[0]!))).toBe(true);
});
