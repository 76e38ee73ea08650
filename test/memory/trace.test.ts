// `vvm run --trace` says what memory did on each call (key, mode, lock wait, facts injected, the patch's
// result and entry seq) without any fact or digest text.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useTempDir } from "../support/fixtures.ts";

const dir = useTempDir("vvm-mem-trace-");
const block = (patch: string) => "```vvm-memory\n" + patch + "\n```";

describe("memory events in the trace", () => {
  it("one per call: applied, rejected and unchanged, with facts shown and hidden, and no memory text", async () => {
    await writeFile(
      path.join(dir, "p.vvm"),
      [
        'agent scribe(model="haiku", memory={ scope: "project", key: "notes:ops" })',
        "a = @scribe `First.`()",
        "b = @scribe `Second.`()",
        "c = @scribe `Third.`()",
        'd = @scribe `Fourth.`((), memory_mode="dry_run")',
        "export a",
        "",
      ].join("\n"),
    );
    const reply = (match: string, body: string) => ["  - kind: agent", `    match: ${JSON.stringify(match)}`, "    reply: |", ...body.split("\n").map((l) => "      " + l)];
    await writeFile(
      path.join(dir, "s.yaml"),
      [
        "rules:",
        ...reply("First", "ok\n" + block(JSON.stringify({ digest: "SECRET-FREE DIGEST TEXT\n", retain: ["B fact text one", "B fact text two"] }))),
        ...reply("Second", "ok\n" + block("{not json")),
        ...reply("Third", "nothing to keep"),
        ...reply("Fourth", "read only"),
      ].join("\n") + "\n",
    );
    const r = await runCli(["run", "p.vvm", "--script", "s.yaml", "--trace", "t.jsonl"], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const raw = await readFile(path.join(dir, "t.jsonl"), "utf8");
    const events = raw.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.type === "memory");
    expect(events.map((e) => [e.mode, e.result, e.seq])).toEqual([
      ["continue", "applied", 1],
      ["continue", "rejected", 2],
      ["continue", "unchanged", null],
      ["dry_run", "none", null],
    ]);
    expect(events[0]).toMatchObject({ scope: "project", key: "notes:ops", facts_shown: 0, facts_hidden: 0, agent: "scribe" });
    expect(events[2]).toMatchObject({ facts_shown: 2, facts_hidden: 0 });
    expect(typeof events[0]!.lock_wait_ms).toBe("number");
    expect(events[1]!.reason).toMatch(/not valid JSON/);
    expect(raw).not.toMatch(/SECRET-FREE|fact text/);
  });
});

describe("the memory event's result for a patch that only keeps facts, or whose digest is refused", () => {
  it("applied with its entry for retain alone (and beside a refused digest); rejected when nothing is left", async () => {
    await writeFile(
      path.join(dir, "p.vvm"),
      [
        'agent scribe(model="haiku", memory={ scope: "project", key: "notes:ro" })',
        "a = @scribe `First.`()",
        "b = @scribe `Second.`()",
        "c = @scribe `Third.`()",
        "export a",
        "",
      ].join("\n"),
    );
    // read_only: a new digest is refused, retain items are still kept (the hand-made digest.md is entry 1)
    await mkdir(path.join(dir, ".vvm/memory/k-notes_3aro"), { recursive: true });
    await writeFile(path.join(dir, ".vvm/memory/k-notes_3aro/digest.md"), "---\nread_only: true\n---\n## Notes\n");
    const reply = (match: string, body: string) => ["  - kind: agent", `    match: ${JSON.stringify(match)}`, "    reply: |", ...body.split("\n").map((l) => "      " + l)];
    await writeFile(
      path.join(dir, "s.yaml"),
      [
        "rules:",
        ...reply("First", "ok\n" + block(JSON.stringify({ retain: ["kept fact one"] }))),
        ...reply("Second", "ok\n" + block(JSON.stringify({ digest: "a new digest", retain: ["kept fact two"] }))),
        ...reply("Third", "ok\n" + block(JSON.stringify({ digest: "another digest" }))),
      ].join("\n") + "\n",
    );
    const r = await runCli(["run", "p.vvm", "--script", "s.yaml", "--trace", "t.jsonl", "--narrate"], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const raw = await readFile(path.join(dir, "t.jsonl"), "utf8");
    const events = raw.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.type === "memory");
    expect(events.map((e) => [e.result, e.seq])).toEqual([
      ["applied", 2],
      ["applied", 3],
      ["rejected", 4],
    ]);
    expect(events[1]!.reason).toMatch(/read_only/);
    expect(events[2]!.reason).toMatch(/read_only/);
    expect(r.stderr).toMatch(/memory notes:ro \(continue\): applied, seq 2/);
  });
});
