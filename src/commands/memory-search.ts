// `vvm memory search KEY QUERY`: retained facts and lines of past digests, most relevant first.
import path from "node:path";
import { beforeLongSync, UsageError, type CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { searchLedger, type Hit } from "../../runtime/memory/history.ts";
import { terms } from "../../runtime/memory/recall.ts";
import { clipped } from "../../runtime/text.ts";
import { emit, existing, label, memoryCommand, shortTime, type WhereFlags } from "./memory.ts";

export type SearchFlags = WhereFlags & { limit: number };

function hitLine(h: Hit): string {
  const where = h.kind === "fact" ? "fact  " : "digest";
  const span = h.kind === "digest" ? `  (in the digest from entry ${h.seq}${h.until === null ? " on" : ` until entry ${h.until}`})` : "";
  // a fact as vvm memory forget --fact names it (SEQ:INDEX)
  return `[${h.kind === "fact" ? `${h.seq}:${h.index}` : h.seq}] ${shortTime(h.ts)}  ${where}  ${h.text.replace(/\s*\n\s*/g, " ")}${span}\n`;
}

export function memorySearch(key: string, query: string, flags: SearchFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    if (query.trim() === "") throw new UsageError("the query is empty: give the words to look for");
    // searched as recall searches (spec/memory.md §3 "Recall"): nothing would ever match
    if (terms(query, 1).length === 0) throw new UsageError(`the query ${JSON.stringify(clipped(query, 80))} has no searchable words (one-letter words and common words such as "the" and "of" are left out): give the words to look for`);
    const loc = await existing(key, flags, io);
    beforeLongSync(io);
    const found = await searchLedger(nodeFs, path.join(loc.dir, "ledger.jsonl"), query, flags.limit);
    const hits = found?.hits ?? [];
    const json = {
      key: loc.key,
      scope: loc.scope,
      query,
      hits: hits.map((h) => (h.kind === "fact" ? { kind: h.kind, seq: h.seq, index: h.index, ts: h.ts, text: h.text } : { kind: h.kind, seq: h.seq, until: h.until, ts: h.ts, text: h.text })),
      searched: { facts: found?.facts ?? 0, digest_lines: found?.digestLines ?? 0 },
      torn_bytes: found?.tornBytes ?? 0,
      skipped_lines: found?.skipped ?? 0,
    };
    return emit(io, flags, json, () => {
      const searched = `${json.searched.facts} retained fact${json.searched.facts === 1 ? "" : "s"} and ${json.searched.digest_lines} line${json.searched.digest_lines === 1 ? "" : "s"} of past and present digests`;
      if (hits.length === 0) return `${label(loc)}: nothing matches ${JSON.stringify(query)} (searched ${searched})\n`;
      return `${label(loc)}: ${hits.length} best match${hits.length === 1 ? "" : "es"} for ${JSON.stringify(query)}, most relevant first (searched ${searched})\n` + hits.map(hitLine).join("");
    });
  });
}
