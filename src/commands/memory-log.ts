// `vvm memory log KEY`: the ledger's entries, newest last, one line each; read from the end of the file
// when --last or --since says how far back to go.
import path from "node:path";
import { beforeLongSync, displayPath, UsageError, type CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { readLog, type LogLine } from "../../runtime/memory/history.ts";
import { callProvenance, ENTRY_KINDS, forgottenBy, toolProvenance, type LedgerEntry } from "../../runtime/memory/ledger.ts";
import { exactDuration } from "../../runtime/duration.ts";
import { emit, existing, label, memoryCommand, shortTime, type WhereFlags } from "./memory.ts";

export type LogFlags = WhereFlags & { kind?: string; last?: number; since?: string; agent?: string };

/** `--since`: a duration back from now (`90s`, `15m`, `2h`, `3d`) or an ISO 8601 time. */
export function sinceTime(text: string, now: number, flag = "--since"): number {
  // a bare number has no unit a person could mean (7 days? 7 seconds?): asked for, never guessed
  if (/^\s*\d+(?:\.\d+)?\s*$/.test(text)) throw new UsageError(`${flag} ${text}: give a unit, such as "${text.trim()}m", "${text.trim()}h" or "${text.trim()}d"`);
  const days = /^\s*(\d+(?:\.\d+)?)\s*d\s*$/.exec(text);
  // exact: a timer's limit (about 24.8 days) would make "older than 720h" mean 24.8 days
  const ms = days ? Number(days[1]) * 86_400_000 : exactDuration(text);
  if (ms !== null && Number.isFinite(ms)) return now - ms;
  const day = /^(\d{4})-(\d\d)-(\d\d)/.exec(text);
  // Date.parse rolls an impossible day over (2026-02-30 is March 2): the day must be the one written
  const real = day !== null && exists(+day[1]!, +day[2]!, +day[3]!);
  const t = real ? Date.parse(text) : NaN;
  if (Number.isNaN(t)) throw new UsageError(`${flag} ${text}: expected a duration such as "30m", "2h" or "3d", or an ISO 8601 time such as 2026-01-02T09:00:00Z`);
  return t;
}

/** Whether the calendar has this day (year, month 1-12, day); setUTCFullYear, unlike Date.UTC, keeps years 0-99. */
function exists(year: number, month: number, day: number): boolean {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

function kinds(text: string): string[] {
  const list = text.split(",").map((k) => k.trim()).filter((k) => k !== "");
  const unknown = list.filter((k) => !(ENTRY_KINDS as readonly string[]).includes(k));
  if (list.length === 0 || unknown.length > 0) throw new UsageError(`--kind ${text}: expected one or more of ${ENTRY_KINDS.join(", ")}, separated by commas`);
  return list;
}

const quote = (s: string, max = 60) => JSON.stringify(s.length > max ? s.slice(0, max - 1) + "…" : s);

/** What an entry did, in a few words; never more of a fact than its start. */
function entrySummary(e: LedgerEntry): string {
  const parts: string[] = [];
  const retain = Array.isArray(e.retain) ? e.retain.filter((f) => typeof f === "string") : [];
  const purged = Array.isArray(e.retain) ? e.retain.length - retain.length : 0;
  switch (e.kind) {
    case "patch":
      if (typeof e.digest === "string") parts.push(`digest → ${e.digest.length} chars`);
      if (retain.length > 0) parts.push(`+${retain.length} fact${retain.length === 1 ? "" : "s"}: ${retain.map((f) => quote(f)).join(", ")}`);
      if (purged > 0) parts.push(`${purged} purged fact${purged === 1 ? "" : "s"}`);
      if (e.reason) parts.push(e.reason);
      break;
    case "restore":
      parts.push(`digest → ${typeof e.digest === "string" ? `${e.digest.length} chars` : "?"}, restored from entry ${e.restored_from ?? "?"}`);
      if (e.reason) parts.push(e.reason);
      break;
    case "forget": {
      const refs = forgottenBy(e);
      // a purge of text that only past digests held names no fact: its reason says what it did
      if (refs.length > 0 || !e.purge) parts.push(`${e.purge ? "forgot and purged" : "forgot"} ${refs.length} fact${refs.length === 1 ? "" : "s"}: ${refs.map((r) => `#${r.seq}:${r.index}`).join(", ")}`);
      if (e.reason) parts.push(e.reason);
      break;
    }
    case "external_edit":
      parts.push(typeof e.digest === "string" ? `digest edited by hand → ${e.digest.length} chars` : "digest edited by hand");
      if (e.reason) parts.push(e.reason);
      break;
    case "rejected":
    case "repair":
      parts.push(e.reason ?? "");
      break;
    default:
      // a kind of a later release: say what it says
      parts.push(e.reason ?? "");
  }
  return parts.join("; ");
}

/** `agent@program:line` of the call that wrote an entry, or the `vvm memory` command and its user. */
export function who(p: unknown, io: CliIO): string {
  const tool = toolProvenance(p);
  if (tool !== null) return `${tool.tool}${typeof tool.user === "string" ? ` (${tool.user})` : ""}`;
  const c = callProvenance(p);
  if (c === null) return "-";
  return `${c.agent}@${typeof c.program === "string" ? displayPath(c.program, io) : "?"}:${c.line}`;
}

function logText(lines: LogLine[], torn: number, io: CliIO): string {
  // a loop, not Math.max(...lines): a long ledger has more lines than a call takes arguments
  let seqWidth = 1;
  for (const l of lines) seqWidth = Math.max(seqWidth, String(l.entry?.seq ?? "?").length);
  let out = "";
  for (const { start, entry } of lines) {
    if (entry === null) {
      out += `[${"?".padStart(seqWidth)}] (byte ${start}: an unreadable or out-of-sequence line, skipped)\n`;
      continue;
    }
    out += `[${String(entry.seq).padStart(seqWidth)}] ${String(entry.kind).padEnd(13)} ${shortTime(entry.ts)}  ${who(entry.provenance, io)}  ${entrySummary(entry)}\n`;
  }
  if (torn > 0) out += `(ledger.jsonl ends with ${torn} bytes of an incomplete line; the next continue call repairs it)\n`;
  return out;
}

export function memoryLog(key: string, flags: LogFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const query = {
      kinds: flags.kind !== undefined ? kinds(flags.kind) : undefined,
      agent: flags.agent,
      last: flags.last,
      since: flags.since !== undefined ? sinceTime(flags.since, Date.now()) : undefined,
    };
    const loc = await existing(key, flags, io);
    beforeLongSync(io);
    const log = await readLog(nodeFs, path.join(loc.dir, "ledger.jsonl"), query);
    const lines = log?.lines ?? [];
    const json = {
      key: loc.key,
      scope: loc.scope,
      dir: loc.dir,
      entries: lines.flatMap((l) => (l.entry === null ? [] : [l.entry])),
      skipped: lines.flatMap((l) => (l.entry === null ? [{ offset: l.start }] : [])),
      torn_bytes: log?.tornBytes ?? 0,
      ledger_bytes: log?.size ?? 0,
      bytes_read: log?.bytesRead ?? 0,
    };
    return emit(io, flags, json, () => (lines.length === 0 && (log?.tornBytes ?? 0) === 0 ? `${label(loc)}: no ledger entries${log === null ? " (no ledger.jsonl)" : query.kinds || query.agent || query.since !== undefined ? " match" : ""}\n` : logText(lines, log?.tornBytes ?? 0, io)));
  });
}
