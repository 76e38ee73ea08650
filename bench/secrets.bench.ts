// Secret scanning (spec/memory.md §8): the refusal rate on the secret corpus, the false-positive rate
// on the clean corpus (test/memory/secret-corpus.ts), and the scan's cost on a typical small patch
// (a 2 KB digest and 5 retain items), against secretlint's preset alone on the same text (the scan
// before the normalised view and our own rules).
import { lintSource } from "@secretlint/core";
import { rules } from "@secretlint/secretlint-rule-preset-recommend";
import { scanSecrets } from "../runtime/memory/secrets.ts";
import { cleanCorpus, secretCorpus } from "../test/memory/secret-corpus.ts";
import { median } from "./support.ts";

export async function run(): Promise<void> {
  const secrets = secretCorpus();
  const missed: string[] = [];
  for (const s of secrets) if ((await scanSecrets(s.digest, s.retain)).length === 0) missed.push(s.name);
  const refused = (secrets.length - missed.length) / secrets.length;
  console.log(`secret corpus: ${secrets.length - missed.length} of ${secrets.length} shapes refused, ${(refused * 100).toFixed(1)}% (target >= 97%) ${refused >= 0.97 ? "ok" : "MISSED"}`);
  if (missed.length > 0) console.log(`  accepted: ${missed.join(", ")}`);

  const clean = cleanCorpus();
  let flagged = 0;
  for (const line of clean) if ((await scanSecrets(undefined, [line])).length > 0) flagged++;
  console.log(`clean corpus: ${flagged} of ${clean.length} lines flagged, ${((flagged / clean.length) * 100).toFixed(1)}% false positives (target 0) ${flagged === 0 ? "ok" : "MISSED"}`);

  let digest = "## Stable\n";
  for (let i = 0; digest.length < 2000; i++) digest += `- ${i}: @Peter prefers short replies; commit ${"3f1c2e9a8b7d6c5e4f3a".repeat(2)} fixed the lock (see https://example.org/issues/${i}).\n`;
  const retain = Array.from({ length: 5 }, (_, i) => `O(c=0.9) fact ${i}: the build uses node 20 and vitest; run id 550e8400-e29b-41d4-a716-44665544000${i}`);
  const content = [digest, ...retain].map((t) => t + "\n\n").join("");
  // the profiler is off for both: the first scan silenced it
  const config = { rules: rules.filter((r) => r.meta.id !== "@secretlint/secretlint-rule-filter-comments").map((r) => ({ id: r.meta.id, rule: r as never })) };
  const presetOnly = () => lintSource({ source: { content, filePath: "patch.md", ext: ".md", contentType: "text" }, options: { config, maskSecrets: true, noPhysicFilePath: true } });
  const perCall = async (f: () => Promise<unknown>) => {
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) await f();
    return ((performance.now() - t0) / 200) * 1000;
  };
  await perCall(() => scanSecrets(digest, retain));
  await perCall(presetOnly);
  // interleaved rounds, so load from other processes hits both sides alike
  const scan: number[] = [];
  const preset: number[] = [];
  for (let round = 0; round < 15; round++) {
    scan.push(await perCall(() => scanSecrets(digest, retain)));
    preset.push(await perCall(presetOnly));
  }
  const us = median(scan);
  console.log(
    `scan of a typical patch (${content.length} characters): ${us.toFixed(0)} µs vs ${median(preset).toFixed(0)} µs for the preset alone, ratio ${(us / median(preset)).toFixed(2)}x (target <= 300 µs) ${us <= 300 ? "ok" : "MISSED"}`,
  );
}
