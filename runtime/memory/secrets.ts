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

/**
 * Reports one rule may make in one scan. secretlint's core removes duplicate reports by comparing each with
 * every later one: 12,000 characters of `xoxb-a-a.` lines (a patch within the limits) made ~10,000 reports and
 * a 6–9 s scan. A scan needs one report to refuse a patch or withhold a state.md cell, and a batch that finds
 * anything is scanned again one text at a time (scanTexts).
 */
const MAX_REPORTS = 50;

/** `rule` with its reports counted and those past MAX_REPORTS dropped (a new count for each scan: create runs per scan). */
function capped<R extends { create: (context: never, options: never) => unknown }>(rule: R): R {
  return {
    ...rule,
    create(context: { report: (descriptor: unknown) => void }, options: never) {
      let left = MAX_REPORTS;
      // a copy (the context is a plain object of closures): one whose prototype is the context made every lint ~4x slower
      const counted = {
        ...context,
        report: (descriptor: unknown) => {
          if (left-- > 0) context.report(descriptor);
        },
      };
      return rule.create(counted as never, options);
    },
  };
}

function load() {
  loading ??= (async () => {
    await silenceProfiler();
    const core = await import("@secretlint/core");
    const preset = await import("@secretlint/secretlint-rule-preset-recommend");
    const rules = preset.rules.filter((r) => r.meta.id !== FILTER_COMMENTS);
    // AWS documents its example keys with this ending (AKIAIOSFODNN7EXAMPLE, …/bPxRfiCYEXAMPLEKEY); the rule knows only one pair
    const options = (id: string) => (id === AWS ? { allows: ["/EXAMPLE(KEY)?$/"] } : {});
    const config: SecretLintCoreConfig = { rules: rules.map((rule) => ({ id: rule.meta.id, rule: capped(rule) as never, options: options(rule.meta.id) })) };
    return { lint: core.lintSource, config, ruleIds: rules.map((r) => r.meta.id) };
  })();
  return loading;
}

/**
 * Start loading secretlint now: a `continue` call scans the reply it is waiting for, and the rules
 * (the store's heaviest modules) then load while the model answers, and scan a line once, since a
 * first scan costs several times a later one. A failure surfaces at the real scan.
 */
export function preloadSecretRules(): void {
  load()
    .then(() => scanSecrets("- warm up", []))
    .catch(() => {});
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
 * Several unrelated groups of texts (fields `retain[i]` within each group) found as if each were scanned
 * alone: a lint call costs a fixed ~40-90 µs besides its length, which one per group would pay again.
 * All groups go through one lint, each group's text exactly as a scan of it alone reads it (its parts,
 * then its own normalised view, within limits of its own), the groups apart by a line no pattern's
 * white space runs across. When that finds nothing, no group holds anything a scan alone would find;
 * when it finds something, every group is scanned alone (a match that starts in one group could cover
 * part of the next), so a batch is never less strict than scans one by one.
 */
export async function scanTexts(groups: string[][]): Promise<Finding[][]> {
  const parts = groups.map((texts) => texts.map((text, i) => ({ field: `retain[${i}]`, text })));
  const batch = await scanGroups(parts);
  if (groups.length <= 1 || batch.every((found) => found.length === 0)) return batch;
  const alone: Finding[][] = [];
  for (const group of parts) alone.push((await scanGroups([group]))[0]);
  return alone;
}

/** Between two groups in one lint: a blank line, a line that is not white space, a blank line. */
const GROUP_SEPARATOR = "\n\n#\n\n";

/**
 * One lint over every group, each as a scan of it alone reads it: its parts as written, each followed by
 * a blank line, then its normalised view (secret-views.ts); GROUP_SEPARATOR between groups.
 */
async function scanGroups(groups: Part[][]): Promise<Finding[][]> {
  const { lint, config } = await load();
  // each group's text: where it starts in the whole, where each part starts in it, its view
  const segments: { group: number; from: number; content: string; starts: { field: string; text: string; at: number }[]; view: View }[] = [];
  let whole = "";
  for (const [group, parts] of groups.entries()) {
    if (parts.length === 0) continue;
    const starts: { field: string; text: string; at: number }[] = [];
    let content = "";
    for (const p of parts) {
      starts.push({ field: p.field, text: p.text, at: content.length });
      content += p.text + "\n\n";
    }
    const view = normalisedView(content);
    if (whole !== "") whole += GROUP_SEPARATOR;
    segments.push({ group, from: whole.length, content, starts, view });
    whole += content + view.text;
  }
  const place = (seg: (typeof segments)[number], at: number) => {
    let i = seg.starts.length - 1;
    while (i > 0 && seg.starts[i].at > at) i--;
    return { field: seg.starts[i].field, line: seg.content.slice(seg.starts[i].at, at).split("\n").length };
  };
  const lintHits = async (text: string, ext: ".md" | ".json"): Promise<Hit[]> => {
    const result = await lint({
      source: { content: text, filePath: `vvm-memory-patch${ext}`, ext, contentType: "text" },
      options: { config, maskSecrets: true, noPhysicFilePath: true },
    });
    return result.messages.map((m) => ({ ruleId: m.ruleId, messageId: m.messageId, index: m.range[0] }));
  };
  const found = groups.map(() => new Map<string, Finding>());
  const add = (seg: (typeof segments)[number], f: Finding) => {
    const key = `${f.ruleId}/${f.messageId}/${f.field}/${f.line}`;
    if (!found[seg.group].has(key)) found[seg.group].set(key, f);
  };
  for (const hit of [...(await lintHits(whole, ".md")), ...findSecrets(whole)]) {
    let k = segments.length - 1;
    while (k > 0 && segments[k].from > hit.index) k--;
    const seg = segments[k];
    const local = hit.index - seg.from;
    const i = local - seg.content.length;
    if (i < 0) {
      add(seg, { ruleId: hit.ruleId, messageId: hit.messageId, ...place(seg, Math.max(0, local)), view: "raw" });
      continue;
    }
    // words glued at a line break can look random: the entropy rule reads runs as written or decoded
    if (hit.ruleId === LABELLED_SECRET && i >= seg.view.rejoinedFrom && i < seg.view.decodedFrom) continue;
    const at = seg.view.origin(Math.min(i, seg.view.text.length - 1));
    add(seg, { ruleId: hit.ruleId, messageId: hit.messageId, ...place(seg, at), view: i < seg.view.decodedFrom ? "normalised" : "decoded" });
  }
  // some rules (GCP service-account keys) only look at whole JSON documents
  for (const seg of segments) {
    for (const s of seg.starts) {
      if (!/^\s*\{/.test(s.text)) continue;
      try {
        JSON.parse(s.text);
      } catch {
        continue;
      }
      for (const hit of await lintHits(s.text, ".json")) add(seg, { ruleId: hit.ruleId, messageId: hit.messageId, ...place(seg, s.at + hit.index), view: "raw" });
    }
  }
  // a token the preset's rule found is not reported a second time by our copy of that rule
  return found.map((byKey) => {
    const all = [...byKey.values()];
    const placed = new Set(all.filter((f) => f.ruleId !== PREFIXED_TOKEN).map((f) => `${f.field}/${f.line}`));
    return all.filter((f) => f.ruleId !== PREFIXED_TOKEN || !placed.has(`${f.field}/${f.line}`));
  });
}
