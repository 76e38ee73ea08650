// `vvm runs` reads (and prune removes) only what is really under <project>/.vvm/runs, and only so much of it: a hostile repository may
// commit `.vvm`, `.vvm/runs` or a run's `bindings` as a symbolic link to somewhere else (spec/state.md §6).
import { existsSync, mkdirSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { findRun, listRuns, NotRemoved, readBinding, removeRun } from "../../runtime/state/runs.ts";
import { useFreshDirs } from "../support/fixtures.ts";

const fresh = useFreshDirs("vvm-runs-links-");

const ID = "20200101-000000-aaaaaa";
const STATE = `# VVM Run: ${ID}\n\nProgram: p.vvm\nStarted: 2020-01-01T00:00:00Z\nStatus: completed\n\n## Binding Index\n\n| Name | Ref Path | Summary |\n|------|----------|---------|\n| x | bindings/b000001.md | s |\n`;

/** `elsewhere/runs/<id>/` with a state.md and a binding, and an empty project beside it. */
function layout(): { project: string; elsewhere: string } {
  const tmp = fresh();
  const elsewhere = path.join(tmp, "elsewhere");
  mkdirSync(path.join(elsewhere, "runs", ID, "bindings"), { recursive: true });
  writeFileSync(path.join(elsewhere, "runs", ID, "state.md"), STATE);
  writeFileSync(path.join(elsewhere, "runs", ID, "bindings", "b000001.md"), "precious\n");
  const project = path.join(tmp, "project");
  mkdirSync(project);
  return { project, elsewhere };
}

describe("vvm runs never goes through a link", () => {
  it("a .vvm that is a link: no runs are listed or found, and nothing there can be removed", async () => {
    const { project, elsewhere } = layout();
    symlinkSync(elsewhere, path.join(project, ".vvm"));
    expect(await listRuns(project)).toEqual([]);
    expect(await findRun(project, ID)).toMatch(/^no runs under/);
    // what prune would be handed had it listed one through the link
    expect(() => removeRun({ id: ID, dir: path.join(project, ".vvm", "runs", ID), program: null, started: null, updated: null, status: "completed", stateRead: true, bindingCount: 0 })).toThrow(NotRemoved);
    expect(existsSync(path.join(elsewhere, "runs", ID, "bindings", "b000001.md"))).toBe(true);
  });

  it("a .vvm/runs that is a link: no runs", async () => {
    const { project, elsewhere } = layout();
    mkdirSync(path.join(project, ".vvm"));
    symlinkSync(path.join(elsewhere, "runs"), path.join(project, ".vvm", "runs"));
    expect(await listRuns(project)).toEqual([]);
  });

  it("a run whose bindings folder is a link: its bindings are not read", async () => {
    const { project, elsewhere } = layout();
    const run = path.join(project, ".vvm", "runs", ID);
    mkdirSync(run, { recursive: true });
    writeFileSync(path.join(run, "state.md"), STATE);
    symlinkSync(path.join(elsewhere, "runs", ID, "bindings"), path.join(run, "bindings"));
    const found = await findRun(project, ID);
    expect(typeof found).toBe("object");
    expect(await readBinding(found as Exclude<typeof found, string>, "x")).toMatch(/bindings is not a folder of the run/);
  });
});

describe("vvm runs reads a bounded part of state.md", () => {
  it("a 3 GB state.md (sparse) is read up to its cap: its header still shows", async () => {
    const { project } = layout();
    const run = path.join(project, ".vvm", "runs", ID);
    mkdirSync(path.join(run, "bindings"), { recursive: true });
    writeFileSync(path.join(run, "state.md"), STATE);
    truncateSync(path.join(run, "state.md"), 3 * 2 ** 30);
    const found = await findRun(project, ID);
    expect(found).toMatchObject({ status: "completed", program: "p.vvm" });
  });

  it("a binding file past what vvm runs cat shows (a sparse 5 GB one) is named, not read", async () => {
    const { project } = layout();
    const run = path.join(project, ".vvm", "runs", ID);
    mkdirSync(path.join(run, "bindings"), { recursive: true });
    writeFileSync(path.join(run, "state.md"), STATE);
    writeFileSync(path.join(run, "bindings", "b000001.md"), "");
    truncateSync(path.join(run, "bindings", "b000001.md"), 5 * 2 ** 30);
    const found = (await findRun(project, ID)) as Exclude<Awaited<ReturnType<typeof findRun>>, string>;
    expect(await readBinding(found, "x")).toBe(`b000001.md is 5,368,709,120 bytes, more than vvm runs cat shows (64 MiB): read ${path.join(run, "bindings", "b000001.md")} itself`);
    truncateSync(path.join(run, "bindings", "b000001.md"), 0);
    expect(await readBinding(found, "x")).toMatchObject({ text: "" });
  });
});
