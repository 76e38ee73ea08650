// `npm run bench`: runs every bench/*.bench.ts in turn (or only those named on the command line).
// Each bench prints its measures as ratios against its named baseline; targets are reported, not asserted.
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { removeScratch } from "./support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();

let failed = 0;
for (const file of files) {
  process.stdout.write(`\n== ${file}\n`);
  try {
    const mod = (await import(pathToFileURL(path.join(here, file)).href)) as { run: () => Promise<void> };
    await mod.run();
  } catch (err) {
    failed++;
    process.stdout.write(`bench ${file} failed: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}
removeScratch();
process.exitCode = failed ? 1 : 0;
