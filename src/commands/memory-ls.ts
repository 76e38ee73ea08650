// `vvm memory ls`: every memory under the scope's root, with its size, last use and health.
import { beforeLongSync, displayPath, type CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import path from "node:path";
import { listMemories, removalsLeft, type Listed, type RemovalLeft } from "../../runtime/memory/inspect.ts";
import { columns, cutShort, emit, memoryCommand, notAnRmFolder, shortTime, size, where, type WhereFlags } from "./memory.ts";

function summary(l: Listed) {
  const i = l.inspection;
  const warnings = l.problem !== null ? [l.problem] : (i?.warnings ?? []);
  return {
    key: l.key,
    dir: l.name,
    entries: i === null ? null : (i.ledger.last?.seq ?? i.meta?.last_seq ?? 0),
    digest_bytes: i?.digest.size ?? null,
    last_used_at: i?.meta?.last_used_at ?? i?.ledger.last?.ts ?? null,
    last_mode: i?.meta?.last_mode ?? null,
    health: l.problem !== null ? "unreadable" : warnings.length > 0 ? "warnings" : "ok",
    warnings,
    notes: i?.notes ?? [],
  };
}

export function memoryLs(flags: WhereFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const w = where(flags, io);
    // every memory is read with synchronous calls: a Ctrl-C stops the listing, or ends it at once
    beforeLongSync(io);
    const found = (await listMemories(w.scope, w.root, { fs: nodeFs, signal: io.signal })).map(summary);
    // an rm killed part-way left a directory aside: no memory any more, but its files are still there
    const left: { r: RemovalLeft; folder: boolean }[] = [];
    // (a link or a file there is no rm's: rm leaves it, and so does the advice)
    for (const r of await removalsLeft(w.root, nodeFs)) left.push({ r, folder: (await nodeFs.inspect(r.path))?.type === "dir" });
    const json = { scope: w.scope, root: w.root, memories: found, removals_cut_short: left.map(({ r }) => ({ key: r.key, dir: path.basename(r.path) })) };
    return emit(io, flags, json, () => {
      const root = displayPath(w.root, io);
      const after = left
        .map(({ r, folder }) =>
          !folder
            ? `(${notAnRmFolder(r)}: remove it by hand)\n`
            : `(${cutShort(r)}: ${r.key === null ? "vvm memory rm of its key finishes it" : `vvm memory rm ${JSON.stringify(r.key)} --yes finishes it`})\n`,
        )
        .join("");
      if (found.length === 0) return `no memories in ${root} (${w.scope} scope)\n${after}`;
      const rows = found.map((m) => [
        m.key ?? `(unknown key) ${m.dir}`,
        m.entries === null ? "-" : `${m.entries} ${m.entries === 1 ? "entry" : "entries"}`,
        `digest ${size(m.digest_bytes)}`,
        `used ${shortTime(m.last_used_at)}${m.last_mode !== null ? ` (${m.last_mode})` : ""}`,
        m.health === "ok" ? "ok" : m.health === "unreadable" ? "unreadable" : `${m.warnings.length} warning${m.warnings.length === 1 ? "" : "s"}`,
      ]);
      let out = `${found.length} ${found.length === 1 ? "memory" : "memories"} in ${root} (${w.scope} scope)\n`;
      const lines = columns(rows, "  ").split("\n");
      found.forEach((m, k) => {
        out += lines[k] + "\n";
        for (const text of m.warnings) out += `      warning: ${text}\n`;
        for (const text of m.notes) out += `      note: ${text}\n`;
      });
      return out + after;
    });
  });
}
