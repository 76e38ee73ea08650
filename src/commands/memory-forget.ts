// `vvm memory forget KEY --fact SEQ[:INDEX] | --match TEXT [--purge]`: a `forget` entry naming retained
// facts, so recall and search never show them again; --purge also rewrites the ledger without their text
// (runtime/memory/maintain.ts does the work, under the memory's lock).
import { UsageError, type CliIO } from "../io.ts";
import { emit, existing, label, memoryCommand, shortTime, toolOptions, type WriteFlags } from "./memory.ts";

export type ForgetFlags = WriteFlags & { fact?: string[]; match?: string; purge?: boolean };

function factArg(text: string): { seq: number; index: number | null } {
  const m = /^(\d{1,15})(?::(\d{1,4}))?$/.exec(text.trim());
  if (!m) throw new UsageError(`--fact ${JSON.stringify(text)}: expected SEQ (every fact of entry SEQ) or SEQ:INDEX (one of them, counted from 0), as vvm memory search prints them`);
  return { seq: Number(m[1]), index: m[2] === undefined ? null : Number(m[2]) };
}

const quote = (s: string, max = 60) => JSON.stringify(s.length > max ? s.slice(0, max - 1) + "…" : s);

export function memoryForget(key: string, flags: ForgetFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const facts = (flags.fact ?? []).map(factArg);
    if (flags.match !== undefined && flags.match.trim() === "") throw new UsageError("--match is empty: give the text the facts to forget contain");
    if (facts.length === 0 && flags.match === undefined) throw new UsageError("say which facts to forget: --fact SEQ[:INDEX] (repeatable) or --match TEXT");
    const loc = await existing(key, flags, io);
    const { forgetFacts } = await import("../../runtime/memory/maintain.ts");
    const purge = flags.purge === true;
    const r = await forgetFacts(loc, { facts, match: flags.match ?? null }, purge, toolOptions("forget", flags, io));
    // a purge is for text that must be gone: it is not printed again
    const shown = r.facts.map((f) => ({ seq: f.seq, index: f.index, ts: f.ts, ...(purge ? {} : { text: f.text }) }));
    const json = { key: loc.key, scope: loc.scope, entry: r.seq, forgotten: shown, already_forgotten: r.already, purge: r.purge === null ? null : { entries_rewritten: r.purge.entries, occurrences: r.purge.occurrences, removed_files: r.purge.removedFiles } };
    return emit(io, flags, json, () => {
      const n = r.facts.length;
      let out = n > 0 ? `${label(loc)}: forgot ${n} fact${n === 1 ? "" : "s"} (entry ${r.seq}); recall and vvm memory search no longer show ${n === 1 ? "it" : "them"}\n` : `${label(loc)}: purged (entry ${r.seq})\n`;
      for (const f of r.facts) out += `  [#${f.seq}:${f.index}] ${shortTime(f.ts)}${purge ? "" : `  ${quote(f.text)}`}\n`;
      if (r.already.length > 0) out += `  (${r.already.length} forgotten already: ${r.already.map((a) => `#${a.seq}:${a.index}`).join(", ")})\n`;
      if (r.purge !== null) {
        out += `purged: ${r.purge.entries} ledger line${r.purge.entries === 1 ? "" : "s"} rewritten, ${r.purge.occurrences} occurrence${r.purge.occurrences === 1 ? "" : "s"} replaced by a mark that names no text; recall.jsonl rebuilt`;
        out += r.purge.removedFiles.length > 0 ? `; removed ${r.purge.removedFiles.join(", ")}\n` : "\n";
      }
      return out;
    });
  }, "change");
}
