// `vvm memory history KEY`: the digest's versions, from the ledger, and where digest.md stands now.
// `vvm memory diff KEY A [B]`: a unified diff between the digest as it was after entry A and after entry B
// (B left out: digest.md now).
import path from "node:path";
import { createTwoFilesPatch } from "diff";
import { beforeLongSync, type CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { digestVersions, type DigestVersion } from "../../runtime/memory/history.ts";
import { toolProvenance } from "../../runtime/memory/ledger.ts";
import { readDigestFile, type DigestFile } from "../../runtime/memory/state.ts";
import { columns, emit, existing, label, memoryCommand, MissingMemory, seqArg, shortTime, type WhereFlags } from "./memory.ts";
import { who } from "./memory-log.ts";

function author(v: DigestVersion, io: CliIO): string {
  if (v.seq === 0) return "(the empty digest the memory began with)";
  if (v.kind === "external_edit") return "a person (edited digest.md by hand)";
  const by = v.agent ? who(v.agent, io) : v.kind;
  return v.restoredFrom !== null ? `${by}: the digest of entry ${v.restoredFrom} again` : by;
}

/** Where digest.md stands against the versions: one of them, or a change the ledger does not have yet. */
const versionOf = (hash: string, versions: DigestVersion[]) => [...versions].reverse().find((v) => v.hash === hash) ?? null;

function current(digest: DigestFile, versions: DigestVersion[]) {
  const same = versionOf(digest.hash, versions);
  return { sha256: digest.hash, chars: digest.parsed.unusable ? null : digest.parsed.body.length, version: same?.seq ?? null, unusable: digest.parsed.unusable };
}


/** Changed lines past which `diff` says the versions differ throughout instead of computing a line diff. */
const MAX_EDIT_LINES = 2000;
export function memoryHistory(key: string, flags: WhereFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const loc = await existing(key, flags, io);
    beforeLongSync(io);
    const found = await digestVersions(nodeFs, path.join(loc.dir, "ledger.jsonl"));
    const versions = found?.versions ?? [];
    const now = current(await readDigestFile(nodeFs, path.join(loc.dir, "digest.md")), versions);
    const json = {
      key: loc.key,
      scope: loc.scope,
      versions: versions.map((v) => ({
        seq: v.seq,
        // version 0 is no entry: the empty digest the memory began with has no time or kind of its own
        ts: v.seq === 0 ? null : v.ts,
        kind: v.seq === 0 ? null : v.kind,
        by: v.seq === 0 ? null : v.kind === "external_edit" ? "person" : toolProvenance(v.agent) !== null ? "tool" : "agent",
        restored_from: v.restoredFrom,
        agent: v.agent,
        sha256: v.hash,
        chars: v.chars,
        recorded: v.chars !== null,
        reason: v.reason,
      })),
      current: now,
      torn_bytes: found?.tornBytes ?? 0,
      skipped_lines: found?.skipped ?? 0,
    };
    return emit(io, flags, json, () => {
      if (versions.length === 0) return `${label(loc)}: the ledger holds no version of the digest\n`;
      const rows = versions.map((v) => [`[${v.seq}]`, v.seq === 0 ? "" : shortTime(v.ts), author(v, io), v.chars === null ? `content not recorded: ${v.reason ?? "?"}` : `${v.chars} chars`]);
      let out = `${label(loc)}: ${versions.length} version${versions.length === 1 ? "" : "s"} of the digest, oldest first\n` + columns(rows, "  ");
      if (now.unusable) out += `digest.md now: ${now.unusable}\n`;
      else if (now.version !== null) out += `digest.md now: version [${now.version}]\n`;
      else out += `digest.md now: changed by hand since the last version (${now.chars} chars); the next continue call records it\n`;
      out += `(vvm memory diff ${JSON.stringify(loc.key)} A [B] compares two versions; B defaults to digest.md now)\n`;
      return out;
    });
  });
}

interface Side {
  /** the entry asked for; null: digest.md now */
  seq: number | null;
  /** the version in effect then */
  version: DigestVersion | null;
  body: string;
  title: string;
}

export function memoryDiff(key: string, a: string, b: string | undefined, flags: WhereFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const seqs = [seqArg(a, "A"), ...(b === undefined ? [] : [seqArg(b, "B")])];
    const loc = await existing(key, flags, io);
    beforeLongSync(io);
    const found = await digestVersions(nodeFs, path.join(loc.dir, "ledger.jsonl"), seqs);
    const last = found?.last ?? 0;
    const side = (seq: number): Side => {
      if (seq > last) throw new MissingMemory(`${label(loc)} has no entry ${seq}; its last entry is ${last}`);
      const at = found?.at.get(seq);
      if (at === undefined) throw new MissingMemory(`${label(loc)}: the ledger does not hold the digest as it was after entry ${seq}`);
      const v = at.version;
      if (at.body === null) throw new MissingMemory(`${label(loc)}: the digest of entry ${v.seq} is not in the ledger (${v.reason ?? "not recorded"})`);
      return { seq, version: v, body: at.body, title: `after entry ${seq}${v.seq !== seq ? ` (version ${v.seq})` : ""}${v.seq === 0 ? "" : `, ${shortTime(v.ts)}`}` };
    };
    const left = side(seqs[0]);
    let right: Side;
    if (seqs.length > 1) right = side(seqs[1]);
    else {
      const now = await readDigestFile(nodeFs, path.join(loc.dir, "digest.md"));
      if (now.parsed.unusable) throw new MissingMemory(`${label(loc)}: ${now.parsed.unusable}; give B to compare two versions`);
      right = { seq: null, version: versionOf(now.hash, found?.versions ?? []), body: now.parsed.body, title: "digest.md now" };
    }
    // the line diff's cost grows with the number of changed lines: past MAX_EDIT_LINES it gives up (undefined)
    // rather than run for minutes on two long digests that differ throughout
    const computed = left.body === right.body ? "" : createTwoFilesPatch("a/digest.md", "b/digest.md", left.body, right.body, left.title, right.title, { context: 3, maxEditLength: MAX_EDIT_LINES });
    const patch = computed === undefined ? null : computed.replace(/^=+\n/, "");
    const json = {
      key: loc.key,
      scope: loc.scope,
      a: { seq: left.seq, version: left.version?.seq ?? null },
      b: { seq: right.seq, version: right.version?.seq ?? null },
      identical: patch === "",
      diff: patch,
    };
    return emit(io, flags, json, () => patch ?? `the two versions differ in more than ${MAX_EDIT_LINES} lines: no line-by-line diff (vvm memory show, or --json, prints each)\n`);
  });
}
