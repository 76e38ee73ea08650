// The writer fixture bundled once into plain JavaScript: `node --import tsx` costs about a second per
// start, too slow for 200 kill -9 iterations; a bundle starts in about 0.2 s. It lives under
// node_modules/.cache so bare imports (proper-lockfile, secretlint…) resolve as in the runtime.
import { rm } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";
import { ROOT } from "../support/cli.ts";

export async function bundleWriter(): Promise<{ file: string; dispose: () => Promise<void> }> {
  const file = path.join(ROOT, "node_modules", ".cache", "vvm-memory-test", `writer-${process.pid}-${Date.now()}.mjs`);
  await build({
    entryPoints: [path.join(ROOT, "test", "memory", "fixtures", "writer.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    outfile: file,
    logLevel: "silent",
  });
  return { file, dispose: () => rm(file, { force: true }) };
}
