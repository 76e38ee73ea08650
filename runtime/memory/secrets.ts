// Secret scanning of patches (spec/memory.md §8): secretlint's recommended preset, minus the comment
// filter (which would let `secretlint-disable` inside a patch switch scanning off), profiler off, plus
// our own rules (secret-rules.ts); over the raw patch and its normalised view (secret-views.ts).
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { SecretLintCoreConfig } from "@secretlint/types";
import { findSecrets, LABELLED_SECRET, PREFIXED_TOKEN, ruleIds as ownRuleIds, type Hit } from "./secret-rules.ts";
import { normalisedView } from "./secret-views.ts";

export interface Finding {
  ruleId: string;
  messageId: string;
  /** which part of the patch: "digest" or "retain[i]" (where the match starts) */
  field: string;
  line: number;
  /**
   * where the rule matched: the text as written; its normalised view (invisible characters dropped,
   * look-alikes folded, tokens rejoined across line breaks and parts); or text decoded from base64/hex
   */
  view: "raw" | "normalised" | "decoded";
}

type LintSource = (typeof import("@secretlint/core"))["lintSource"];

const FILTER_COMMENTS = "@secretlint/secretlint-rule-filter-comments";
const AWS = "@secretlint/secretlint-rule-aws";

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
    // AWS documents its example keys with this ending (AKIAIOSFODNN7EXAMPLE, …/bPxRfiCYEXAMPLEKEY); the rule knows only one pair
    const options = (id: string) => (id === AWS ? { allows: ["/EXAMPLE(KEY)?$/"] } : {});
    const config: SecretLintCoreConfig = { rules: rules.map((rule) => ({ id: rule.meta.id, rule: rule as never, options: options(rule.meta.id) })) };
    return { lint: core.lintSource, config, ruleIds: rules.map((r) => r.meta.id) };
  })();
  return loading;
}

/**
 * Start loading secretlint now: a `continue` call scans the reply it is waiting for, and the rules
 * (the store's heaviest modules) then load while the model answers. A failure surfaces at the scan.
 */
export function preloadSecretRules(): void {
  load().catch(() => {});
}

/** The rule ids in force (tests check every one of them fires). */
export async function activeRules(): Promise<string[]> {
  return [...(await load()).ruleIds, ...ownRuleIds];
}

/** Findings in a digest and retain items; empty when clean. Reports rule ids and places only, never the text. */
export async function scanSecrets(digest: string | undefined, retain: string[]): Promise<Finding[]> {
  const { lint, config } = await load();
  const parts: { field: string; text: string }[] = [];
  if (digest !== undefined) parts.push({ field: "digest", text: digest });
  retain.forEach((text, i) => parts.push({ field: `retain[${i}]`, text }));
  if (parts.length === 0) return [];
  // the patch as one text, each part on its own lines, mapped back by offset
  const starts: number[] = [];
  let content = "";
  for (const p of parts) {
    starts.push(content.length);
    content += p.text + "\n\n";
  }
  const place = (at: number) => {
    let i = starts.length - 1;
    while (i > 0 && starts[i] > at) i--;
    return { field: parts[i].field, line: content.slice(starts[i], at).split("\n").length };
  };
  const lintHits = async (text: string, ext: ".md" | ".json"): Promise<Hit[]> => {
    const result = await lint({
      source: { content: text, filePath: `vvm-memory-patch${ext}`, ext, contentType: "text" },
      options: { config, maskSecrets: true, noPhysicFilePath: true },
    });
    return result.messages.map((m) => ({ ruleId: m.ruleId, messageId: m.messageId, index: m.range[0] }));
  };

  const found = new Map<string, Finding>();
  const add = (hit: Hit, at: number, view: Finding["view"]) => {
    const f: Finding = { ruleId: hit.ruleId, messageId: hit.messageId, ...place(at), view };
    const key = `${f.ruleId}/${f.messageId}/${f.field}/${f.line}`;
    if (!found.has(key)) found.set(key, f);
  };
  // the raw text and its normalised view (after the raw text's closing blank line) in one pass: each
  // lint costs a fixed ~40 µs besides its length
  const view = normalisedView(content);
  const whole = content + view.text;
  for (const hit of [...(await lintHits(whole, ".md")), ...findSecrets(whole)]) {
    const i = hit.index - content.length;
    if (i < 0) add(hit, hit.index, "raw");
    // words glued at a line break can look random: the entropy rule reads runs as written or decoded
    else if (hit.ruleId === LABELLED_SECRET && i >= view.rejoinedFrom && i < view.decodedFrom) continue;
    else add(hit, view.origin(i), i < view.decodedFrom ? "normalised" : "decoded");
  }
  // some rules (GCP service-account keys) only look at whole JSON documents
  for (const [i, p] of parts.entries()) {
    if (!/^\s*\{/.test(p.text)) continue;
    try {
      JSON.parse(p.text);
    } catch {
      continue;
    }
    for (const hit of await lintHits(p.text, ".json")) add(hit, starts[i] + hit.index, "raw");
  }
  // a token the preset's rule found is not reported a second time by our copy of that rule
  const all = [...found.values()];
  const placed = new Set(all.filter((f) => f.ruleId !== PREFIXED_TOKEN).map((f) => `${f.field}/${f.line}`));
  return all.filter((f) => f.ruleId !== PREFIXED_TOKEN || !placed.has(`${f.field}/${f.line}`));
}
