// Helpers shared by the bench scripts.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Median of a sample; runs are few, so one outlier must not decide. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The installed CLI entry point; benches measure the built JavaScript, as users run it. */
export function builtCli(): string {
  if (!existsSync(path.join(ROOT, "dist/start.js"))) throw new Error("dist/ is missing: run `npm run build` first");
  return path.join(ROOT, "bin/vvm.js");
}
