// `vvm memory show KEY`: the front-matter settings, the digest and the facts the next call would be
// shown; `--context` prints the exact Memory Context a `continue` call would send now.
import { beforeLongSync, displayPath, homeDir, type CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { nextContext } from "../../runtime/memory/inspect.ts";
import { factLine } from "../../runtime/memory/recall.ts";
import { emit, inspectKey, label, memoryCommand, shortTime, type WhereFlags } from "./memory.ts";

export type ShowFlags = WhereFlags & { context?: boolean; task?: string; memoryBudget: number };

export function memoryShow(key: string, flags: ShowFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const i = await inspectKey(key, flags, io);
    const warnings = [...i.warnings];
    const query = flags.task ?? "";
    beforeLongSync(io);
    const { facts, context } = await nextContext(i, { fs: nodeFs, query, budgetTokens: flags.memoryBudget, homeDir: homeDir(io), warn: (m) => warnings.push(m) });
    const { parsed } = i.digest;
    const s = parsed.settings;
    const last = i.ledger.last;
    const json = {
      key: i.loc.key,
      scope: i.loc.scope,
      dir: i.loc.dir,
      entries: last?.seq ?? i.meta?.last_seq ?? 0,
      last_entry: last === null ? null : { seq: last.seq, kind: last.kind, ts: last.ts },
      settings: { digest_limit: s.digestLimit, read_only: s.readOnly, recall: s.recall, recent_share: s.recentShare },
      digest: parsed.unusable ? null : parsed.body,
      digest_unusable: parsed.unusable,
      digest_sha256: i.digest.hash,
      facts: { shown: facts.shown.map((f) => ({ seq: f.seq, index: f.i, ts: f.ts, text: f.text })), hidden: facts.hidden, budget_tokens: flags.memoryBudget, task: flags.task ?? null },
      health: warnings.length > 0 ? "warnings" : "ok",
      warnings,
      notes: i.notes,
      ...(flags.context ? { context } : {}),
    };
    return emit(io, flags, json, () => {
      if (flags.context) return context + "\n";
      let out = `${label(i.loc)}\n`;
      out += `  directory  ${displayPath(i.loc.dir, io)}\n`;
      out += `  entries    ${json.entries}${last !== null ? ` (last: [${last.seq}] ${last.kind}, ${shortTime(last.ts)})` : ""}\n`;
      out += `  settings   digest_limit ${s.digestLimit}, read_only ${s.readOnly}, recall ${s.recall}, recent_share ${s.recentShare}${parsed.prefix !== "" ? "" : parsed.unusable !== null && parsed.body === "" ? " (defaults: digest.md cannot be used, see below)" : " (defaults: digest.md has no front matter)"}\n`;
      out += `  health     ${warnings.length === 0 ? "ok" : `${warnings.length} warning${warnings.length === 1 ? "" : "s"}`}\n`;
      for (const w of warnings) out += `      warning: ${w}\n`;
      for (const n of i.notes) out += `      note: ${n}\n`;
      out += "\n";
      if (parsed.unusable) out += `## Digest (not shown to calls: ${parsed.unusable})\n`;
      else out += `## Digest (${parsed.body.length} characters)\n${parsed.body.trim() === "" ? "(empty)" : parsed.body.replace(/\s+$/, "")}\n`;
      const total = facts.shown.length + facts.hidden;
      out += `\n## Facts the next call is shown (${facts.shown.length} of ${total} retained; budget ${flags.memoryBudget} tokens)\n`;
      for (const f of facts.shown) out += `- ${factLine(f)}\n`;
      if (facts.shown.length === 0) out += "(none)\n";
      if (s.recall === "relevant" && facts.hidden > 0 && flags.task === undefined) {
        out += `(the newest facts fill ${Math.round(s.recentShare * 100)}% of the budget; the rest goes to the facts most relevant to the call's task and input: --task TEXT shows which)\n`;
      }
      return out;
    });
  });
}
