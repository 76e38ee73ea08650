// Helpers shared by the bench scripts.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Median of a sample (the upper one for an even count); runs are few, so one outlier must not decide. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** The installed CLI entry point; benches measure the built JavaScript, as users run it. */
export function builtCli(): string {
  if (!existsSync(path.join(ROOT, "dist/src/start.js"))) throw new Error("dist/ is missing: run `npm run build` first");
  return path.join(ROOT, "bin/vvm.js");
}
