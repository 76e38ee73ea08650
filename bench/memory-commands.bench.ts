// `vvm memory` on a 200 MB ledger (the installed CLI): `log --last 20` reads from the end and `show` reads
// the recall index and the ledger's tail, so each costs a small fraction of a command that must read the
// whole ledger (`log --json`, every entry). Printed as ratios against that full read (target <= 0.1x).
import { spawnSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { createMemoryStore } from "../runtime/memory/index.ts";
import { escapeKey } from "../runtime/memory/keys.ts";
import type { MemoryProvenance, MemorySession } from "../runtime/memory-port.ts";
import { obj } from "../runtime/values.ts";
import { builtCli, median, scratchDir } from "./support.ts";

const TARGET_MB = 200;

function timed(cli: string, dir: string, args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cli, "memory", ...args], { cwd: dir, encoding: "utf8", maxBuffer: 1024 * 1024 * 1024, env: { PATH: process.env.PATH, HOME: dir } });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`vvm memory ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return ms;
}

export async function run(): Promise<void> {
  const cli = builtCli();
  const dir = scratchDir("memcmd");
  const mem = path.join(dir, ".vvm", "memory", escapeKey("k"));
  await mkdir(mem, { recursive: true });
  // entries shaped like a busy memory's: a 2 KB digest and two facts each
  const digest = "## Notes\n" + "- a line of the running digest\n".repeat(64);
  const lines: string[] = [];
  let bytes = 0;
  for (let seq = 1; bytes < TARGET_MB * 1024 * 1024; seq++) {
    const line = JSON.stringify({ v: 1, ts: "2026-01-01T00:00:00.000Z", seq, kind: "patch", digest, retain: [`B step ${seq} done`, `W @Team${seq % 40} owns part ${seq}`], digest_before: "x", digest_after: "x", provenance: null }) + "\n";
    lines.push(line);
    bytes += line.length;
  }
  await writeFile(path.join(mem, "ledger.jsonl"), lines.join(""));
  // one continue call builds recall.jsonl, as the memory's first call of a run would
  const store = createMemoryStore({ entryDir: dir, homeDir: dir, lockTimeoutMs: 60_000, budgetTokens: 2000, warn: () => {} });
  const prov: MemoryProvenance = { site: { path: "bench.vvm", span: { line: 1, col: 1, endLine: 1, endCol: 1 } }, agentName: "bench", model: "m", mode: "continue" };
  await ((await store.open(obj({ scope: "project", key: "k" }), prov, new AbortController().signal)) as MemorySession).release();
  await store.close();

  const full = median([0, 1, 2].map(() => timed(cli, dir, ["log", "k", "--json"])));
  const last = median([0, 1, 2].map(() => timed(cli, dir, ["log", "k", "--last", "20"])));
  const show = median([0, 1, 2].map(() => timed(cli, dir, ["show", "k"])));
  const line = (what: string, ms: number) => `${what}: ${ms.toFixed(0)} ms, ${(ms / full).toFixed(3)}x of reading the whole ledger (target <= 0.1x) ${ms / full <= 0.1 ? "ok" : "MISSED"}`;
  console.log(`${lines.length} entries, ${(bytes / 1024 / 1024).toFixed(0)} MB ledger: vvm memory log --json (every entry) ${full.toFixed(0)} ms`);
  console.log(line("vvm memory log --last 20", last));
  console.log(line("vvm memory show", show));
}
