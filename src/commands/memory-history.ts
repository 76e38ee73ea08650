// `vvm memory history KEY`: the digest's versions, from the ledger, and where digest.md stands now.
import path from "node:path";
import type { CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { digestVersions, type DigestVersion } from "../../runtime/memory/history.ts";
import { readDigestFile, type DigestFile } from "../../runtime/memory/state.ts";
import { columns, emit, existing, label, memoryCommand, shortTime, type WhereFlags } from "./memory.ts";
import { who } from "./memory-log.ts";

function author(v: DigestVersion, io: CliIO): string {
  if (v.seq === 0) return "(the empty digest the memory began with)";
  if (v.kind === "external_edit") return "a person (edited digest.md by hand)";
  return v.agent ? who(v.agent, io) : v.kind;
}

/** Where digest.md stands against the versions: one of them, or a change the ledger does not have yet. */
function current(digest: DigestFile, versions: DigestVersion[]) {
  const same = [...versions].reverse().find((v) => v.hash === digest.hash);
  return { sha256: digest.hash, chars: digest.parsed.unusable ? null : digest.parsed.body.length, version: same?.seq ?? null, unusable: digest.parsed.unusable };
}

export function memoryHistory(key: string, flags: WhereFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const loc = await existing(key, flags, io);
    const found = await digestVersions(nodeFs, path.join(loc.dir, "ledger.jsonl"));
    const versions = found?.versions ?? [];
    const now = current(await readDigestFile(nodeFs, path.join(loc.dir, "digest.md")), versions);
    const json = {
      key: loc.key,
      scope: loc.scope,
      versions: versions.map((v) => ({
        seq: v.seq,
        ts: v.ts,
        kind: v.kind,
        by: v.seq === 0 ? null : v.kind === "external_edit" ? "person" : "agent",
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
