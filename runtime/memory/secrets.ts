// Secret scanning of patches (spec/memory.md §8): secretlint's recommended preset, minus the comment
// filter (which would let `secretlint-disable` inside a patch switch scanning off), profiler off, plus
// our own rules (secret-rules.ts); over the raw patch and its normalised view (secret-views.ts).
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { SecretLintCoreConfig } from "@secretlint/types";
import { findSecrets, LABELLED_SECRET, PREFIXED_TOKEN, ruleIds as ownRuleIds, type Hit } from "./secret-rules.ts";
import { normalisedView, type View } from "./secret-views.ts";

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

/** A text to scan and the field a finding in it names ("digest", "retain[i]"). */
interface Part {
  field: string;
  text: string;
}

/** Findings in a digest and retain items; empty when clean. Reports rule ids and places only, never the text. */
export async function scanSecrets(digest: string | undefined, retain: string[]): Promise<Finding[]> {
  const parts: Part[] = [];
  if (digest !== undefined) parts.push({ field: "digest", text: digest });
  retain.forEach((text, i) => parts.push({ field: `retain[${i}]`, text }));
  if (parts.length === 0) return [];
  return (await scanGroups([parts]))[0];
}

/**
 * Several unrelated groups of texts in one scan, each group found as if scanned alone (fields
 * `retain[i]` within its group): a lint call costs a fixed ~40-90 µs besides its length, which one per
 * group would pay again. A group's texts are rejoined and decoded together, within a normalised view
 * and limits of its own, never with another group's, so no group can use up what another is checked with.
 */
export async function scanTexts(groups: string[][]): Promise<Finding[][]> {
  return scanGroups(groups.map((texts) => texts.map((text, i) => ({ field: `retain[${i}]`, text }))));
}

/**
 * One lint over every group: first each group's parts as written, each followed by a blank line, then each
 * group's normalised view (secret-views.ts), each after a blank line. A finding is placed by where its
 * match starts; a match that runs on into another group counts for that group too (its first field), so
 * a long match cannot hide what a neighbour holds.
 */
async function scanGroups(groups: Part[][]): Promise<Finding[][]> {
  const { lint, config } = await load();
  // the raw text: where each part starts, and each group's range
  const starts: { group: number; field: string; text: string; at: number }[] = [];
  const raw: { from: number; to: number }[] = [];
  let content = "";
  for (const [g, parts] of groups.entries()) {
    const from = content.length;
    for (const p of parts) {
      starts.push({ group: g, field: p.field, text: p.text, at: content.length });
      content += p.text + "\n\n";
    }
    raw.push({ from, to: content.length });
  }
  // then the views; a single group's comes right after the raw text, as it always did
  const views: { group: number; from: number; to: number; view: View }[] = [];
  let whole = content;
  for (const [g, r] of raw.entries()) {
    const view = normalisedView(content.slice(r.from, r.to));
    if (view.text === "") continue;
    if (views.length > 0) whole += "\n\n";
    views.push({ group: g, from: whole.length, to: whole.length + view.text.length, view });
    whole += view.text;
  }
  const partAt = (at: number) => {
    let i = starts.length - 1;
    while (i > 0 && starts[i].at > at) i--;
    return starts[i];
  };
  const place = (at: number) => {
    const p = partAt(at);
    return { group: p.group, field: p.field, line: content.slice(p.at, at).split("\n").length };
  };
  const lintHits = async (text: string, ext: ".md" | ".json"): Promise<Hit[]> => {
    const result = await lint({
      source: { content: text, filePath: `vvm-memory-patch${ext}`, ext, contentType: "text" },
      options: { config, maskSecrets: true, noPhysicFilePath: true },
    });
    return result.messages.map((m) => ({ ruleId: m.ruleId, messageId: m.messageId, index: m.range[0], end: m.range[1] }));
  };

  const found = groups.map(() => new Map<string, Finding>());
  const add = (group: number, f: Finding) => {
    const key = `${f.ruleId}/${f.messageId}/${f.field}/${f.line}`;
    if (!found[group].has(key)) found[group].set(key, f);
  };
  /** The groups whose raw text or view the range [from, to) touches. */
  const touched = (from: number, to: number): number[] => [
    ...raw.flatMap((r, g) => (r.from < to && from < r.to ? [g] : [])),
    ...views.flatMap((v) => (v.from < to && from < v.to ? [v.group] : [])),
  ];
  for (const hit of [...(await lintHits(whole, ".md")), ...findSecrets(whole)]) {
    let at = hit.index;
    let view: Finding["view"] = "raw";
    if (hit.index >= content.length) {
      let k = views.length - 1;
      while (k > 0 && views[k].from > hit.index) k--;
      const v = views[k];
      const i = Math.min(Math.max(0, hit.index - v.from), v.view.text.length - 1);
      // words glued at a line break can look random: the entropy rule reads runs as written or decoded
      if (hit.ruleId === LABELLED_SECRET && i >= v.view.rejoinedFrom && i < v.view.decodedFrom) continue;
      at = raw[v.group].from + v.view.origin(i);
      view = i < v.view.decodedFrom ? "normalised" : "decoded";
    }
    const { group, field, line } = place(at);
    add(group, { ruleId: hit.ruleId, messageId: hit.messageId, field, line, view });
    for (const other of touched(hit.index, Math.max(hit.end, hit.index + 1))) {
      if (other !== group) add(other, { ruleId: hit.ruleId, messageId: hit.messageId, field: groups[other][0].field, line: 1, view });
    }
  }
  // some rules (GCP service-account keys) only look at whole JSON documents
  for (const s of starts) {
    if (!/^\s*\{/.test(s.text)) continue;
    try {
      JSON.parse(s.text);
    } catch {
      continue;
    }
    for (const hit of await lintHits(s.text, ".json")) {
      const { line } = place(s.at + hit.index);
      add(s.group, { ruleId: hit.ruleId, messageId: hit.messageId, field: s.field, line, view: "raw" });
    }
  }
  // a token the preset's rule found is not reported a second time by our copy of that rule
  return found.map((byKey) => {
    const all = [...byKey.values()];
    const placed = new Set(all.filter((f) => f.ruleId !== PREFIXED_TOKEN).map((f) => `${f.field}/${f.line}`));
    return all.filter((f) => f.ruleId !== PREFIXED_TOKEN || !placed.has(`${f.field}/${f.line}`));
  });
}
