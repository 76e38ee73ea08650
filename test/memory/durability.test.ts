// What a power loss needs beyond a killed process: the fsyncs themselves, seen with strace. A new
// memory directory's parents, the directory of a new ledger.jsonl, the ledger after each append and a
// replacement digest before its rename must be fsynced (spec/memory.md §7). Skipped, with a printed
// reason, where strace is not installed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, testEnv } from "../support/cli.ts";

const strace = spawnSync("strace", ["-V"]).status === 0;
if (!strace) console.log("skipped: the fsync tests (strace is not installed)");

describe.skipIf(!strace)("fsyncs", () => {
  it("cover new directories, a new ledger, every append and a replaced digest", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "vvm-durable-"));
    try {
      const mem = path.join(dir, ".vvm", "memory", "k-k");
      const script = [
        `import { nodeFs } from ${JSON.stringify(path.join(ROOT, "runtime/memory/fsio.ts"))};`,
        `await nodeFs.mkdirp(${JSON.stringify(mem)});`,
        `await nodeFs.append(${JSON.stringify(path.join(mem, "ledger.jsonl"))}, Buffer.from("{}\\n"));`,
        `await nodeFs.append(${JSON.stringify(path.join(mem, "ledger.jsonl"))}, Buffer.from("{}\\n"));`,
        `await nodeFs.writeAtomic(${JSON.stringify(path.join(mem, "digest.md"))}, "digest\\n");`,
      ].join("\n");
      const r = spawnSync("strace", ["-f", "-qq", "-e", "trace=openat,fsync,rename", "--", process.execPath, "--import", "tsx", "--input-type=module", "-e", script], {
        cwd: ROOT,
        encoding: "utf8",
        env: testEnv({ HOME: dir }),
      });
      expect(r.status, r.stderr).toBe(0);
      // fd → path as opened, then the paths fsynced (fds are reused, so map at each fsync)
      const open = new Map<string, string>();
      const synced: string[] = [];
      for (const line of r.stderr.split("\n")) {
        const o = /openat\(AT_FDCWD, "([^"]+)", [^)]*\) = (\d+)/.exec(line);
        if (o && o[1].startsWith(dir)) open.set(o[2], path.relative(dir, o[1]));
        const f = /fsync\((\d+)\)\s+= 0/.exec(line);
        if (f && open.has(f[1])) synced.push(open.get(f[1])!);
      }
      const tmp = synced.filter((p) => /digest\.md\.[0-9a-f]{18}\.tmp$/.test(p));
      expect(synced.filter((p) => !tmp.includes(p))).toEqual([".vvm/memory", ".vvm", "", ".vvm/memory/k-k/ledger.jsonl", ".vvm/memory/k-k", ".vvm/memory/k-k/ledger.jsonl"]);
      expect(tmp).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
