// `vvm memory restore KEY SEQ`: the digest as it was after entry SEQ becomes current again, as a `restore`
// entry written under the memory's lock like an agent's patch (runtime/memory/maintain.ts does the work).
import { vvmLine } from "../printable.ts";
import { EXIT, type CliIO } from "../io.ts";
import { emit, existing, label, memoryCommand, seqArg, toolOptions, type WriteFlags } from "./memory.ts";

export type RestoreFlags = WriteFlags & { force?: boolean };

export function memoryRestore(key: string, seqText: string, flags: RestoreFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const seq = seqArg(seqText, "SEQ");
    const loc = await existing(key, flags, io);
    const { restoreDigest } = await import("../../runtime/memory/maintain.ts");
    const r = await restoreDigest(loc, seq, flags.force === true, toolOptions("restore", flags, io));
    const { outcome } = r;
    const from = `the digest of entry ${r.version}${r.version !== r.requested ? ` (the version in effect after entry ${r.requested})` : ""}`;
    const json = {
      key: loc.key,
      scope: loc.scope,
      requested: r.requested,
      version: r.version,
      restored: outcome.applied,
      entry: outcome.seq,
      unchanged: !outcome.applied && outcome.seq === null,
      notes: outcome.notes,
      chars: r.body.length,
    };
    if (!outcome.applied && outcome.seq !== null) {
      // refused at the last moment (a person saved digest.md meanwhile): the ledger records it
      io.stderr.write(vvmLine(`${label(loc)}: ${from} was not restored (${outcome.notes.join("; ")}); entry ${outcome.seq} records it, and digest.md keeps the person's save`));
      return EXIT.missing;
    }
    return emit(io, flags, json, () => {
      if (!outcome.applied) return `${label(loc)}: ${from} is the current digest already; nothing written\n`;
      const notes = outcome.notes.length > 0 ? ` (${outcome.notes.join("; ")})` : "";
      return `${label(loc)}: restored ${from}, ${r.body.length} characters, as entry ${outcome.seq}${notes}\n`;
    });
  }, "change");
}
