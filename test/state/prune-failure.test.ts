// `vvm runs prune`: a run that cannot be removed (a folder not the user's to delete, or one swapped for a link
// after the listing) is said as such, exit 1, never counted as removed, and the runs after it are still removed.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it, vi } from "vitest";
import { runCli } from "../support/cli.ts";

const stuck = vi.hoisted(() => ({ id: "", swapped: "" }));
vi.mock("../../runtime/state/runs.ts", async (original) => {
  const real = await original<typeof import("../../runtime/state/runs.ts")>();
  return {
    ...real,
    removeRun: (run: { id: string; dir: string }) => {
      if (run.id === stuck.id) throw Object.assign(new Error("permission denied"), { code: "EACCES" });
      // the run's folder swapped for a link to a copy of it between the listing and the removal
      if (run.id === stuck.swapped) {
        renameSync(run.dir, `${run.dir}.elsewhere`);
        symlinkSync(`${run.dir}.elsewhere`, run.dir);
      }
      real.removeRun(run as never);
    },
  };
});

const tmp = mkdtempSync(path.join(os.tmpdir(), "vvm-prune-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it("says which run it could not remove, exits 1, and removes the others", async () => {
  writeFileSync(path.join(tmp, "p.vvm"), "x = 1\nexport x\n");
  const runs = path.join(tmp, ".vvm", "runs");
  // in the order they were made: runs within one second do not sort by id
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    expect((await runCli(["run", "p.vvm", "--provider", "sim", "--state", "filesystem"], { cwd: tmp })).code).toBe(0);
    ids.push(readdirSync(runs).find((id) => !ids.includes(id))!);
  }
  expect(ids).toHaveLength(3);
  stuck.id = ids[0]!;
  const r = await runCli(["runs", "prune", "--keep", "0", "--dir", tmp]);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`vvm: cannot remove ${ids[0]} (EACCES); it may be partly removed\n`);
  expect(r.stdout).toBe(`removed ${ids[1]} (completed)\nremoved ${ids[2]} (completed)\nremoved 2 runs\n`);
  expect(readdirSync(runs)).toEqual([ids[0]]);
  expect(existsSync(path.join(runs, ids[0]!))).toBe(true);
});

it("a run swapped for a link after the listing is not removed, through the link or otherwise, and not said to be", async () => {
  const project = path.join(tmp, "swap");
  mkdirSync(project);
  writeFileSync(path.join(project, "p.vvm"), "x = 1\nexport x\n");
  for (let i = 0; i < 2; i++) expect((await runCli(["run", "p.vvm", "--provider", "sim", "--state", "filesystem"], { cwd: project })).code).toBe(0);
  const runs = path.join(project, ".vvm", "runs");
  const ids = readdirSync(runs).sort();
  stuck.swapped = ids[0]!;
  const r = await runCli(["runs", "prune", "--keep", "0", "--dir", project]);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`vvm: cannot remove ${ids[0]}: its folder, .vvm/runs or .vvm is no longer a real directory (removed, or replaced by a link); nothing was removed\n`);
  expect(r.stdout).toBe(`removed ${ids[1]} (completed)\nremoved 1 run\n`);
  expect(existsSync(path.join(runs, `${ids[0]}.elsewhere`, "state.md"))).toBe(true);
});
