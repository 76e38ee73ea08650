// A model's reply is untrusted input: memory updates the Messages API stand-in sends that are ambiguous
// must change nothing (spec/memory.md §4).
import { mkdtemp, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useStandin, useTempDir } from "../support/fixtures.ts";
import { digestText, ledger, patchReply } from "./helpers.ts";

const base = useTempDir("vvm-hostile-replies-");
const standin = useStandin();

describe("a vvm-memory block that gives a key twice", () => {
  it("is rejected whole, not applied with the key's last value", async () => {
    const dir = await mkdtemp(path.join(base, "p-"));
    await writeFile(path.join(dir, "keep.vvm"), 'agent keeper(model="haiku", prompt="Keep notes.", memory={ scope: "project", key: "notes" })\nr = @keeper `Note it.`(())\nexport r\n');
    standin.enqueue({ type: "text", text: patchReply('{"digest": "kept", "retain": ["first"], "retain": ["second"]}', "Noted.") });
    const res = await runCli(["run", "keep.vvm"], { cwd: dir, env: { ...standin.env(), HOME: dir } });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout).r).toBe("Noted.");
    expect(res.stderr).toContain('patch rejected, memory unchanged: "retain" is given twice in the vvm-memory block');
    const { entries } = await ledger(dir, "notes");
    expect(entries.map((e) => [e.kind, e.retain])).toEqual([["rejected", []]]);
    expect(await digestText(dir, "notes")).toBe(null);
  });
});
