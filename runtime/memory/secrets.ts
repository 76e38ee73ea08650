// Secret scanning of patches with secretlint's recommended preset, minus the comment filter
// (which would let `secretlint-disable` inside a patch switch scanning off), profiler off.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { SecretLintCoreConfig } from "@secretlint/types";

export interface Finding {
  ruleId: string;
  messageId: string;
  /** which part of the patch: "digest" or "retain[i]" */
  field: string;
  line: number;
}

type LintSource = (typeof import("@secretlint/core"))["lintSource"];

const FILTER_COMMENTS = "@secretlint/secretlint-rule-filter-comments";

let loading: Promise<{ lint: LintSource; config: SecretLintCoreConfig; ruleIds: string[] }> | null = null;

/**
 * @secretlint/core 12.0 imports its own nested copy of @secretlint/profiler (12.0, no
 * `setEnabled`), distinct from the top-level 12.3 one. Resolve the copy core itself resolves,
 * from core's own directory, and make its `mark` a no-op: no performance marks, no unbounded
 * entry list. (test/memory/secrets.test.ts checks that linting leaves no marks.)
 */
async function silenceProfiler(): Promise<void> {
  const require = createRequire(import.meta.url);
  const coreDir = path.dirname(require.resolve("@secretlint/core/package.json"));
  const fromCore = createRequire(path.join(coreDir, "package.json"));
  const profilerDir = path.dirname(fromCore.resolve("@secretlint/profiler/package.json"));
  const pkg = fromCore("@secretlint/profiler/package.json") as { exports?: { ".": { import?: { default?: string } } } };
  const entry = pkg.exports?.["."]?.import?.default ?? "./module/node.js";
  const mod = (await import(pathToFileURL(path.join(profilerDir, entry)).href)) as { secretLintProfiler: { mark: (m: unknown) => void } };
  mod.secretLintProfiler.mark = () => {};
  // the top-level copy too, in case a future core shares it
  const top = (await import("@secretlint/profiler")) as unknown as { secretLintProfiler: { mark: (m: unknown) => void; setEnabled?: (on: boolean) => void } };
  if (typeof top.secretLintProfiler.setEnabled === "function") top.secretLintProfiler.setEnabled(false);
  top.secretLintProfiler.mark = () => {};
}

function load() {
  loading ??= (async () => {
    await silenceProfiler();
    const core = await import("@secretlint/core");
    const preset = await import("@secretlint/secretlint-rule-preset-recommend");
    const rules = preset.rules.filter((r) => r.meta.id !== FILTER_COMMENTS);
    const config: SecretLintCoreConfig = { rules: rules.map((rule) => ({ id: rule.meta.id, rule: rule as never })) };
    return { lint: core.lintSource, config, ruleIds: rules.map((r) => r.meta.id) };
  })();
  return loading;
}

/** The rule ids in force (tests check every one of them fires). */
export async function activeRules(): Promise<string[]> {
  return (await load()).ruleIds;
}

/** Findings in a digest and retain items; empty when clean. Reports rule ids and places only, never the text. */
export async function scanSecrets(digest: string | undefined, retain: string[]): Promise<Finding[]> {
  const { lint, config } = await load();
  const parts: { field: string; text: string }[] = [];
  if (digest !== undefined) parts.push({ field: "digest", text: digest });
  retain.forEach((text, i) => parts.push({ field: `retain[${i}]`, text }));
  if (parts.length === 0) return [];
  // one lint over all parts, each on its own lines, mapped back by offset
  const starts: number[] = [];
  let content = "";
  for (const p of parts) {
    starts.push(content.length);
    content += p.text + "\n\n";
  }
  const result = await lint({
    source: { content, filePath: "vvm-memory-patch.md", ext: ".md", contentType: "text" },
    options: { config, maskSecrets: true, noPhysicFilePath: true },
  });
  const findings = result.messages.map((m) => {
    const at = m.range[0];
    let i = starts.length - 1;
    while (i > 0 && starts[i] > at) i--;
    const before = content.slice(starts[i], at);
    return { ruleId: m.ruleId, messageId: m.messageId, field: parts[i].field, line: before.split("\n").length };
  });
  // some rules (GCP service-account keys) only look at whole JSON documents
  for (const p of parts) {
    if (!/^\s*\{/.test(p.text)) continue;
    try {
      JSON.parse(p.text);
    } catch {
      continue;
    }
    const r = await lint({
      source: { content: p.text, filePath: "vvm-memory-patch.json", ext: ".json", contentType: "text" },
      options: { config, maskSecrets: true, noPhysicFilePath: true },
    });
    for (const m of r.messages) findings.push({ ruleId: m.ruleId, messageId: m.messageId, field: p.field, line: p.text.slice(0, m.range[0]).split("\n").length });
  }
  return findings;
}
