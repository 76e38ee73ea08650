// Filesystem state mode's service: the run directory, binding files, ref values, state.md, and what a call
// passed refs may read (runtime/state/, spec/state.md).
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nodeFs, type MemoryFs } from "../../runtime/memory/fsio.ts";
import type { MemoryPort } from "../../runtime/memory-port.ts";
import type { ModelReply, ModelRequest, Provider } from "../../runtime/provider.ts";
import { RunDirectory, RunDirError, RUN_ID } from "../../runtime/state/run-dir.ts";
import { readBinding, readRun } from "../../runtime/state/runs.ts";
import { INDEX_CHARS, summarize, SUMMARY_CHARS, tableCell } from "../../runtime/state/summary.ts";
import { errorKind, isErrorValue, isRef, obj, type Value, type VObject } from "../../runtime/values.ts";
import { agent, callReq, fakeReport, harness } from "../calls/helpers.ts";

const dirs: string[] = [];
function project(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "vvm-state-"));
  dirs.push(d);
  writeFileSync(path.join(d, "main.vvm"), "export 1\n");
  return d;
}
// a run's state.md is written in the background: each run is finished (its last write awaited) before its folder goes
const made: RunDirectory[] = [];
afterEach(async () => {
  for (const run of made.splice(0)) await run.finish("completed", "Completed");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const warnings: string[] = [];
async function create(dir: string, fs: MemoryFs = nodeFs): Promise<RunDirectory> {
  const run = await RunDirectory.create({ entryPath: path.join(dir, "main.vvm"), source: "export 1\n", warn: (m) => warnings.push(m), fs });
  made.push(run);
  return run;
}
const noPause = async () => true;
const state = (run: RunDirectory) => readFileSync(path.join(run.dir, "state.md"), "utf8");

describe("summaries", () => {
  it("are the first one to three sentences, on one line, bounded", () => {
    expect(summarize("# Findings\n\nOne. Two!  Three?\nFour.")).toBe("Findings One. Two! Three?");
    expect(summarize("- item a.\n- item b.")).toBe("item a. item b.");
    expect(summarize("Version 3.5 is out. It is faster.")).toBe("Version 3.5 is out. It is faster.");
    expect(summarize("```\ncode\n```\nDone.")).toBe("code Done.");
    expect(summarize("")).toBe("");
    const long = "word ".repeat(200);
    const s = summarize(long);
    expect(s.length).toBeLessThanOrEqual(SUMMARY_CHARS);
    expect(s.endsWith("…")).toBe(true);
    // a short first sentence and a long second one: only the first
    expect(summarize(`Short. ${"x".repeat(400)}.`)).toBe("Short.");
  });

  it("are one table cell in state.md, cut without splitting a character", () => {
    expect(tableCell("a | b\nc", INDEX_CHARS)).toBe("a \\| b c");
    expect(tableCell("x".repeat(200), INDEX_CHARS).length).toBeLessThanOrEqual(80);
    expect(tableCell("x".repeat(78) + "😀 more", INDEX_CHARS)).toBe("x".repeat(78) + "…");
    expect(summarize("y".repeat(278) + "😀 more")).toBe("y".repeat(278) + "…");
  });
});

describe("the run directory", () => {
  it("holds program.vvm, state.md (running), bindings/ and imports/, and .vvm/.gitignore lists runs/", async () => {
    const dir = project();
    const run = await create(dir);
    expect(run.id).toMatch(RUN_ID);
    expect(run.dir).toBe(path.join(dir, ".vvm", "runs", run.id));
    expect(readFileSync(path.join(run.dir, "program.vvm"), "utf8")).toBe("export 1\n");
    expect(lstatSync(path.join(run.dir, "bindings")).isDirectory()).toBe(true);
    expect(lstatSync(path.join(run.dir, "imports")).isDirectory()).toBe(true);
    expect(state(run)).toMatch(/^# VVM Run: \d{8}-\d{6}-[0-9a-f]{6}\n\nProgram: main\.vvm\nStarted: .+\nUpdated: .+\nStatus: running\n/);
    expect(readFileSync(path.join(dir, ".vvm", ".gitignore"), "utf8")).toBe("runs/\n");
    await run.finish("completed", "Completed with 0 exports");
    expect(state(run)).toContain("Status: completed");
    expect(state(run)).toMatch(/- \[\d\d:\d\d:\d\d\] Completed with 0 exports\n$/);
  });

  it("gives two runs at once two directories, and never touches a .vvm/.gitignore that is there", async () => {
    const dir = project();
    mkdirSync(path.join(dir, ".vvm"));
    writeFileSync(path.join(dir, ".vvm", ".gitignore"), "mine\n");
    const runs = await Promise.all([create(dir), create(dir), create(dir)]);
    expect(new Set(runs.map((r) => r.dir)).size).toBe(3);
    expect(readdirSync(path.join(dir, ".vvm", "runs")).sort()).toEqual(runs.map((r) => r.id).sort());
    expect(readFileSync(path.join(dir, ".vvm", ".gitignore"), "utf8")).toBe("mine\n");
    expect(existsSync(path.join(dir, ".gitignore"))).toBe(false);
  });

  it("is never made through a symbolic link", async () => {
    const dir = project();
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), "vvm-elsewhere-"));
    dirs.push(elsewhere);
    symlinkSync(elsewhere, path.join(dir, ".vvm"));
    await expect(create(dir)).rejects.toThrow(RunDirError);
    await expect(create(dir)).rejects.toThrow(/symbolic link/);
    expect(readdirSync(elsewhere)).toEqual([]);
    rmSync(path.join(dir, ".vvm"));
    mkdirSync(path.join(dir, ".vvm"));
    symlinkSync(elsewhere, path.join(dir, ".vvm", "runs"));
    await expect(create(dir)).rejects.toThrow(/symbolic link/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });
});

describe("bindings", () => {
  it("hold U+FFFD for half a surrogate pair, which UTF-8 cannot hold, and bytes counts the file; the summary keeps the reply's text", async () => {
    const run = await create(project());
    const v = (await run.bind({ name: "x", agent: "a", text: "half \ud83d here.", retries: 0, pause: noPause })) as VObject;
    expect(readFileSync(path.join(run.dir, "bindings", "b000001.md"), "utf8")).toBe("half \ufffd here.");
    expect(v.get("bytes")).toBe(statSync(path.join(run.dir, "bindings", "b000001.md")).size);
    expect(v.get("summary")).toBe("half \ud83d here.");
  });

  it("hold the whole reply; the call gets a ref value and state.md a row and a trace line", async () => {
    const run = await create(project());
    const reply = "# Report\nQuantum is hard. Very hard.\n\n" + "detail ".repeat(1000);
    const v = (await run.bind({ name: "research", agent: "researcher", text: reply, retries: 0, pause: noPause })) as VObject;
    expect(isRef(v)).toBe(true);
    expect([...v.keys()]).toEqual(["ref", "summary", "mime", "bytes"]);
    expect(v.get("ref")).toBe(`.vvm/runs/${run.id}/bindings/b000001.md`);
    expect(v.get("summary")).toBe("Report Quantum is hard. Very hard.");
    expect(v.get("mime")).toBe("text/markdown");
    expect(v.get("bytes")).toBe(Buffer.byteLength(reply));
    expect(readFileSync(path.join(run.dir, "bindings", "b000001.md"), "utf8")).toBe(reply);
    await run.bind({ name: null, agent: "notifier", text: "", retries: 0, pause: noPause });
    await run.finish("completed", "Completed");
    const md = state(run);
    expect(md).toContain("| research | bindings/b000001.md | Report Quantum is hard. Very hard. |");
    expect(md).toContain("| _anon_1 | bindings/b000002.md |  |");
    expect(md).toMatch(/research = @researcher \(b000001\)/);
    expect(md).toMatch(/_anon_1 = @notifier \(b000002\)/);
    // never the reply itself
    expect(md).not.toContain("detail");
  });

  it("keep secrets out of state.md: a name or summary the memory store's detectors flag is withheld there, not in the ref", async () => {
    const run = await create(project());
    const github = "ghp_" + "R8x2kQ9mZ4vB7nL1pW3tY6uH0jC5dF8gA2sE";
    const slack = "xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx";
    const v = (await run.bind({ name: slack, agent: "writer", text: `Token is ${github} for CI.`, retries: 0, pause: noPause })) as VObject;
    expect(v.get("summary")).toBe(`Token is ${github} for CI.`);
    run.noteFailure(github, "writer", "rejected");
    await run.finish("completed", "Completed");
    const md = state(run);
    expect(md).toContain("| (withheld: looks like a secret) | bindings/b000001.md | (withheld: looks like a secret) |");
    expect(md).toContain("(withheld: looks like a secret) = @writer (b000001)");
    expect(md).toContain('(withheld: looks like a secret) = @writer failed: error(kind="rejected")');
    expect(md).not.toContain("ghp_");
    expect(md).not.toContain("xoxb-");
  });

  it("a name longer than state.md's cell is found by vvm runs cat as written", async () => {
    const run = await create(project());
    const long = "a very long binding name given with name= ".repeat(3);
    await run.bind({ name: long, agent: "writer", text: "the text.", retries: 0, pause: noPause });
    await run.finish("completed", "Completed");
    const found = await readBinding(await readRun(run.dir), long);
    expect(found).toMatchObject({ binding: "b000001", text: "the text." });
  });

  it("of concurrent calls are distinct files, and state.md loses no line", async () => {
    const run = await create(project());
    const refs = await Promise.all(Array.from({ length: 300 }, (_, i) => run.bind({ name: `r${i}`, agent: "w", text: `reply ${i}.`, retries: 0, pause: noPause })));
    await run.finish("completed", "Completed");
    const paths = refs.map((r) => (r as VObject).get("ref") as string);
    expect(new Set(paths).size).toBe(300);
    const md = state(run);
    for (let i = 0; i < 300; i++) expect(md).toContain(`| r${i} | `);
    expect(readdirSync(path.join(run.dir, "bindings")).length).toBe(300);
    // the trace keeps its start and its end, with a count of the lines between
    expect(md).toContain("Started");
    expect(md).toMatch(/trace lines left out/);
    expect(md).toMatch(/Completed\n$/);
  });

  it("rewrite state.md at most once per gap while calls go on, unsynced, and at once on finish", async () => {
    const writes: { file: string; sync: boolean | undefined }[] = [];
    const counting: MemoryFs = {
      ...nodeFs,
      writeAtomic: (file, data, before, opts) => {
        writes.push({ file, sync: opts?.sync });
        return nodeFs.writeAtomic(file, data, before, opts);
      },
    };
    const run = await create(project(), counting);
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) await run.bind({ name: `r${i}`, agent: "a", text: `reply ${i}.`, retries: 0, pause: noPause });
    await run.finish("completed", "Completed");
    const ms = performance.now() - t0;
    const stateWrites = writes.filter((w) => w.file.endsWith("state.md")).length;
    // 50 changes one after another: one write each would be 51; the gap allows one per 100 ms (plus the first and the flush)
    expect(stateWrites).toBeLessThanOrEqual(Math.ceil(ms / 100) + 3);
    expect(stateWrites).toBeLessThan(51);
    // run outputs are not fsynced (spec/state.md §2); the finish's flush did not wait out a gap to land
    expect(writes.every((w) => w.sync === false)).toBe(true);
    expect(state(run)).toMatch(/\| r49 \| bindings\/b000050\.md \|[\s\S]*Completed\n$/);
    expect(state(run)).toMatch(/Status: completed/);
  });

  it("that cannot be written are binding_failed, after the call's retries", async () => {
    let failures = 2;
    let tried = 0;
    const flaky: MemoryFs = {
      ...nodeFs,
      writeAtomic: (file, data, ...rest) => {
        if (/b\d{6}\.md$/.test(file)) {
          tried++;
          if (failures-- > 0) return Promise.reject(Object.assign(new Error("no space"), { code: "ENOSPC" }));
        }
        return nodeFs.writeAtomic(file, data, ...rest);
      },
    };
    const run = await create(project(), flaky);
    const failed = await run.bind({ name: "x", agent: "a", text: "t", retries: 1, pause: noPause });
    expect(isErrorValue(failed) && errorKind(failed)).toBe("binding_failed");
    expect(tried).toBe(2);
    const ok = await run.bind({ name: "y", agent: "a", text: "t", retries: 1, pause: noPause });
    expect(isRef(ok)).toBe(true);
    expect((ok as VObject).get("ref")).toMatch(/b000002\.md$/);
    await run.finish("failed", "Failed");
    const md = state(run);
    expect(md).toMatch(/x = @a failed: b000001 could not be written \(ENOSPC\)/);
    expect(md).not.toContain("| x |");
  });
});

/** A provider that plays the model: asks for the tool uses in `uses` on its first turn, then answers with what the tools said. */
function toolAsker(uses: { name: string; input: Record<string, unknown> }[], seen: ModelRequest[]): Provider {
  const usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  return {
    name: "test",
    async complete(req: ModelRequest): Promise<ModelReply> {
      seen.push(req);
      const history = req.history ?? [];
      if (history.length === 0 && uses.length > 0) {
        return { text: "", model: req.model, usage, requestId: null, stopReason: "tool_use", toolUses: uses.map((u, i) => ({ id: `t${i}`, ...u })) };
      }
      const last = history[history.length - 1];
      const said = last?.role === "tool_results" ? last.results.map((r) => `${r.isError ? "ERR" : "OK"}: ${r.content}`).join("\n---\n") : "plain reply.";
      return { text: said, model: req.model, usage, requestId: null };
    },
    async judge() {
      throw new Error("no judges here");
    },
  };
}

describe("agent calls in filesystem state", () => {
  it("return refs; a call passed refs gets the Ref Reading Protocol and may read this run's bindings, nothing else", async () => {
    const dir = project();
    writeFileSync(path.join(dir, "secret.txt"), "not for you\n");
    const run = await create(dir);
    const seen: ModelRequest[] = [];
    const first = harness(toolAsker([], seen), { runState: run, programDir: dir });
    const research = await first.rt.call(callReq(agent("researcher"), "Research.", null, {}, { target: "research" }));
    expect(isRef(research)).toBe(true);
    expect(seen[0]!.system).not.toContain("Ref Reading Protocol");
    expect(seen[0]!.tools).toEqual([]);

    const other = await create(dir); // another run's bindings are not granted
    await other.bind({ name: "o", agent: "a", text: "other run", retries: 0, pause: noPause });
    const ref = (research as VObject).get("ref") as string;
    const uses = [
      { name: "read_file", input: { path: ref } },
      { name: "read_file", input: { path: "secret.txt" } },
      { name: "read_file", input: { path: `.vvm/runs/${other.id}/bindings/b000001.md` } },
      { name: "read_file", input: { path: `.vvm/runs/${run.id}/state.md` } },
      { name: "write_file", input: { path: `.vvm/runs/${run.id}/bindings/b000009.md`, content: "x" } },
    ];
    const seen2: ModelRequest[] = [];
    const writer = harness(toolAsker(uses, seen2), { runState: run, programDir: dir });
    const report = (await writer.rt.call(callReq(agent("writer", { prompt: "Write well." }), "Write.", obj({ research }), {}, { target: "report" }))) as VObject;
    expect(seen2[0]!.system).toMatch(/^Write well\.\n\n## Ref Reading Protocol\n/);
    expect(seen2[0]!.system).toContain(`.vvm/runs/${run.id}/bindings/**`);
    // the input carries the ref object itself
    expect(JSON.parse(seen2[0]!.input!)).toEqual({ research: { ref: `.vvm/runs/${run.id}/bindings/b000001.md`, summary: "plain reply.", mime: "text/markdown", bytes: 12 } });
    expect(seen2[0]!.tools!.map((t) => t.name)).not.toContain("write_file");
    // the tools name the grant as the protocol does, relative to the program's directory
    expect(seen2[0]!.tools!.find((t) => t.name === "read_file")!.description).toContain(`matching: ".vvm/runs/${run.id}/bindings/**".`);
    const text = readFileSync(path.join(dir, report.get("ref") as string), "utf8").split("\n---\n");
    expect(text[0]).toMatch(/^OK: .*plain reply\./s);
    expect(text[1]).toMatch(/^ERR: permission denied/);
    expect(text[2]).toMatch(/^ERR: permission denied/);
    expect(text[3]).toMatch(/^ERR: permission denied/);
    expect(text[4]).toMatch(/^ERR: .*(no tool|permission denied)/);
    expect(existsSync(path.join(run.dir, "bindings", "b000009.md"))).toBe(false);
  });

  /** A run with one ref made, and a private folder in the project that a link could point bindings/ at. */
  async function refBesidePrivateFolder() {
    const dir = project();
    const privateDir = path.join(dir, "private");
    mkdirSync(privateDir);
    writeFileSync(path.join(privateDir, "id_key.txt"), "PRIVATE KEY MATERIAL\n");
    const run = await create(dir);
    const first = harness(toolAsker([], []), { runState: run, programDir: dir });
    const research = await first.rt.call(callReq(agent("researcher"), "Research.", null, {}, { target: "research" }));
    return { dir, privateDir, run, research };
  }

  it("a bindings/ swapped for a link during the run takes neither the writes nor a ref's read grant elsewhere", async () => {
    const { dir, privateDir, run, research } = await refBesidePrivateFolder();
    expect(isRef(research)).toBe(true);
    // what a command an agent ran could do: bindings/ becomes a link to a private folder
    const bindings = path.join(run.dir, "bindings");
    rmSync(bindings, { recursive: true });
    symlinkSync(privateDir, bindings);
    const failed = await run.bind({ name: "next", agent: "a", text: "to be written", retries: 0, pause: noPause });
    expect(isErrorValue(failed) && errorKind(failed)).toBe("binding_failed");
    expect(readdirSync(privateDir)).toEqual(["id_key.txt"]);
    const seen: ModelRequest[] = [];
    const reader = harness(toolAsker([{ name: "read_file", input: { path: `.vvm/runs/${run.id}/bindings/id_key.txt` } }], seen), { runState: run, programDir: dir });
    const out = await reader.rt.call(callReq(agent("reader"), "Read.", obj({ research }), {}, { target: "out" }));
    // no grant: the reader has no tools at all, so nothing of the private folder came back
    expect(seen[0]!.tools).toEqual([]);
    expect(JSON.stringify(out)).not.toContain("PRIVATE");
    await run.finish("completed", "Completed");
    expect(state(run)).toMatch(/next = @a failed: b000002 could not be written \(bindings\/ now leads elsewhere/);
  });

  it("a bindings/ swapped for a link while a call passed refs waits for its memory grants nothing there", async () => {
    const { dir, privateDir, run, research } = await refBesidePrivateFolder();
    // while the call waits for its memory's lock, a command another agent runs makes bindings/ a link
    const memory: MemoryPort = {
      open: async () => {
        const bindings = path.join(run.dir, "bindings");
        rmSync(bindings, { recursive: true });
        symlinkSync(privateDir, bindings);
        return { context: null, report: fakeReport(), complete: async (text) => text, release: async () => {} };
      },
    };
    const seen: ModelRequest[] = [];
    const reader = harness(toolAsker([{ name: "read_file", input: { path: `.vvm/runs/${run.id}/bindings/id_key.txt` } }], seen), { runState: run, programDir: dir, memory });
    const out = await reader.rt.call(callReq(agent("reader", { memory: obj({ scope: "project", key: "k" }) }), "Read.", obj({ research }), {}, { target: "out" }));
    expect(JSON.stringify(out)).not.toContain("PRIVATE");
    expect(JSON.stringify(seen.map((r) => r.history))).not.toContain("PRIVATE");
  });

  it("a run directory swapped for a link during the run takes no state.md write elsewhere", async () => {
    const dir = project();
    const run = await create(dir);
    await run.bind({ name: "first", agent: "a", text: "Written.", retries: 0, pause: noPause });
    await run.finish("failed", "checkpoint");
    // what a command an agent ran could do: the run directory moves away and a link to it takes its place
    const moved = path.join(dir, "moved");
    renameSync(run.dir, moved);
    symlinkSync(moved, run.dir);
    const before = readFileSync(path.join(moved, "state.md"), "utf8");
    warnings.length = 0;
    const failed = await run.bind({ name: "second", agent: "a", text: "Not written.", retries: 0, pause: noPause });
    expect(isErrorValue(failed) && errorKind(failed)).toBe("binding_failed");
    await run.finish("completed", "Completed");
    expect(readFileSync(path.join(moved, "state.md"), "utf8")).toBe(before);
    expect(readdirSync(moved).sort()).toEqual(["bindings", "imports", "program.vvm", "state.md"]);
    expect(warnings).toEqual([expect.stringMatching(/^cannot write .*state\.md \(the run directory now leads elsewhere than when the run began, a link\?\); the run goes on$/)]);
  });

  it("a bindings/ swapped for a link between its check and the write takes no binding elsewhere", async () => {
    const dir = project();
    const elsewhere = path.join(dir, "elsewhere");
    mkdirSync(elsewhere);
    let bindings = "";
    // the swap lands right after the check, as a command an agent runs meanwhile could make it land
    const racing: MemoryFs = {
      ...nodeFs,
      writeAtomic: (file, data, ...rest) => {
        if (/b\d{6}\.md$/.test(file)) {
          renameSync(bindings, `${bindings}.moved`);
          symlinkSync(elsewhere, bindings);
        }
        return nodeFs.writeAtomic(file, data, ...rest);
      },
    };
    const run = await create(dir, racing);
    bindings = path.join(run.dir, "bindings");
    await run.bind({ name: "x", agent: "a", text: "Not for elsewhere.", retries: 0, pause: noPause });
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(readdirSync(`${bindings}.moved`)).toEqual(["b000001.md"]);
  });

  it("a run directory swapped for a link between its check and the write of state.md takes no state.md elsewhere", async () => {
    const dir = project();
    const elsewhere = path.join(dir, "elsewhere");
    mkdirSync(elsewhere);
    let runDir: string | null = null;
    const racing: MemoryFs = {
      ...nodeFs,
      writeAtomic: (file, data, ...rest) => {
        if (runDir !== null && file.endsWith("state.md")) {
          renameSync(runDir, `${runDir}.moved`);
          symlinkSync(elsewhere, runDir);
          runDir = null;
        }
        return nodeFs.writeAtomic(file, data, ...rest);
      },
    };
    const run = await create(dir, racing);
    runDir = run.dir;
    await run.finish("completed", "Completed");
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(readFileSync(path.join(`${run.dir}.moved`, "state.md"), "utf8")).toMatch(/Status: completed/);
  });

  it("a folder linked in place of bindings/ is refused even when it has bindings/'s old inode number", async () => {
    const dir = project();
    const run = await create(dir);
    const bindings = path.join(run.dir, "bindings");
    const old = statSync(bindings).ino;
    const elsewhere = path.join(dir, "elsewhere");
    mkdirSync(elsewhere);
    rmSync(bindings, { recursive: true });
    // ext4 hands a freed inode number out again at once: make folders until one has it (tmpfs never does; the link is refused all the same)
    let target = path.join(elsewhere, "d0");
    mkdirSync(target);
    for (let i = 1; i < 20 && statSync(target).ino !== old; i++) mkdirSync((target = path.join(elsewhere, `d${i}`)));
    symlinkSync(target, bindings);
    const failed = await run.bind({ name: "next", agent: "a", text: "to be written", retries: 0, pause: noPause });
    expect(isErrorValue(failed) && errorKind(failed)).toBe("binding_failed");
    expect(readdirSync(target)).toEqual([]);
    expect(run.bindingsTree(dir)).toBeNull();
  });

  it("bind the reply as memory leaves it: the memory patch goes to memory, never into the binding; the trace names the binding", async () => {
    const run = await create(project());
    const usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    const provider: Provider = {
      name: "test",
      complete: async (req) => ({ text: "The answer.\n<patch>remember this</patch>", model: req.model, usage, requestId: null }),
      judge: async () => {
        throw new Error("no judges here");
      },
    };
    const patches: string[] = [];
    const memory: MemoryPort = {
      open: async () => ({
        context: null,
        report: { scope: "project", key: "k", mode: "continue", lock_wait_ms: 0, facts_shown: 0, facts_hidden: 0, context_chars: 0, result: "applied", seq: 1, reason: null },
        complete: async (text) => {
          patches.push(/<patch>(.*)<\/patch>/.exec(text)![1]!);
          return text.replace(/\n<patch>.*<\/patch>/, "");
        },
        release: async () => {},
      }),
    };
    const h = harness(provider, { runState: run, memory });
    const v = (await h.rt.call(callReq(agent("a", { memory: obj({ scope: "project", key: "k" }) }), "t", null, {}, { target: "x" }))) as VObject;
    expect(patches).toEqual(["remember this"]);
    expect(readFileSync(path.join(run.dir, "bindings", "b000001.md"), "utf8")).toBe("The answer.");
    expect(v.get("summary")).toBe("The answer.");
    expect(h.trace.events.find((e) => e.type === "call")).toMatchObject({ ok: true, reply_chars: "The answer.".length, binding: "b000001" });
  });

  it("keep judges' answers and error values as they are, and note failures in state.md", async () => {
    const run = await create(project());
    const failing: Provider = {
      name: "fail",
      complete: async () => {
        const { ProviderError } = await import("../../runtime/provider.ts");
        throw new ProviderError("rejected", "no", false, 400);
      },
      judge: async (req) => ({ verdict: true, label: null, model: req.model, usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }, requestId: null }),
    };
    const h = harness(failing, { runState: run });
    const v: Value = await h.rt.call(callReq(agent("a"), "t", null, {}, { target: "x" }));
    expect(isErrorValue(v) && errorKind(v)).toBe("rejected");
    expect(await h.rt.judge({ kind: "predicate", criterion: "c", input: null, site: { path: "/tmp/p.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } }, signal: new AbortController().signal })).toBe(true);
    await run.finish("completed", "Completed");
    expect(state(run)).toMatch(/x = @a failed: error\(kind="rejected"\)/);
    expect(readdirSync(path.join(run.dir, "bindings"))).toEqual([]);
  });
});
