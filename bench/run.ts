// `npm run bench`: runs every bench/*.bench.ts in turn (or only those named on the command line).
// Each bench prints its measures as ratios against its named baseline; targets are reported, not asserted.
//
// Each bench runs in a process of its own, as each `vvm` command does: a bench must not inherit the heap
// another left behind (the recall bench holds 100,000-fact indexes). Before each bench the data written so far is
// flushed (`sync`), so a bench that waits for fsyncs does not wait behind the writeback of the hundreds
// of megabytes an earlier one wrote: each measures on a quiet disk.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { useScratchRoot } from "./support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const self = fileURLToPath(import.meta.url);
const [flag, childFile, childScratch] = process.argv.slice(2);

if (flag === "--child" && childFile !== undefined && childScratch !== undefined) {
  useScratchRoot(childScratch);
  const mod = (await import(pathToFileURL(path.join(here, childFile)).href)) as { run: () => Promise<void> };
  try {
    await mod.run();
  } catch (err) {
    process.stdout.write(`bench ${childFile} failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
} else {
  const only = process.argv.slice(2);
  const files = readdirSync(here)
    .filter((f) => f.endsWith(".bench.ts"))
    .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
    .sort();
  // one folder for every bench's files, removed after the last bench (see support.ts)
  const scratch = mkdtempSync(path.join(os.tmpdir(), "vvm-bench-"));
  let failed = 0;
  try {
    for (const file of files) {
      process.stdout.write(`\n== ${file}\n`);
      spawnSync("sync", { stdio: "ignore" });
      const r = spawnSync(process.execPath, [...process.execArgv, self, "--child", file, scratch], { stdio: "inherit" });
      if (r.status !== 0) {
        failed++;
        if (r.status === null) process.stdout.write(`bench ${file} failed: ${r.signal ?? r.error?.message}\n`);
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  process.exitCode = failed ? 1 : 0;
}
