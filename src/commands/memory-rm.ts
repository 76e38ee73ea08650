// `vvm memory rm KEY`: remove a memory's whole directory, after a person confirms it on a terminal
// (--yes instead, anywhere else), under the memory's lock (runtime/memory/maintain.ts does the work).
import { vvmLine } from "../printable.ts";
import { displayPath, EXIT, UsageError, type CliIO } from "../io.ts";
import type { Inspection } from "../../runtime/memory/inspect.ts";
import { emit, inspectKey, label, locate, memoryCommand, MissingMemory, size, toolOptions, type WriteFlags } from "./memory.ts";

export type RmFlags = WriteFlags & { yes?: boolean };

export function memoryRm(key: string, flags: RmFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const { finishRemovals, removeMemory } = await import("../../runtime/memory/maintain.ts");
    const opts = toolOptions("rm", flags, io);
    let i: Inspection;
    try {
      i = await inspectKey(key, flags, io);
    } catch (err) {
      if (!(err instanceof MissingMemory)) throw err;
      // no memory, but what an earlier rm of it took aside and left (killed part-way): that rm is finished
      const loc = locate(key, flags, io);
      const finished = await finishRemovals(loc, opts.warn);
      if (finished === 0) throw err;
      return emit(io, flags, { key: loc.key, scope: loc.scope, dir: loc.dir, removed: [], bytes: 0, finished }, () => `finished ${finished === 1 ? "a removal" : `${finished} removals`} of ${label(loc)} cut short earlier (${displayPath(loc.dir, io)} was already gone)\n`);
    }
    const loc = i.loc;
    if (!flags.yes) {
      if (io.ask === undefined) throw new UsageError(`vvm memory rm asks before it removes a memory, and there is no terminal to ask on: pass --yes to remove ${label(loc)} without asking`);
      const entries = i.ledger.last?.seq ?? i.meta?.last_seq ?? 0;
      const answer = await io.ask(`Remove ${label(loc)} (${displayPath(loc.dir, io)}: ${entries} ledger ${entries === 1 ? "entry" : "entries"}, digest ${size(i.digest.size ?? 0)}) and all its history? This cannot be undone. [y/N] `);
      if (!/^\s*y(es)?\s*$/i.test(answer ?? "")) {
        io.stderr.write(vvmLine(`${label(loc)} not removed`));
        // Ctrl-C at the question is an interruption, not an answer
        return io.signal.aborted ? EXIT.interrupted : EXIT.missing;
      }
    }
    const r = await removeMemory(loc, opts);
    const files = r.files.filter((f) => f !== ".");
    const json = { key: loc.key, scope: loc.scope, dir: loc.dir, removed: files, bytes: r.bytes, finished: r.finished };
    return emit(io, flags, json, () => {
      let out = `removed ${label(loc)} (${displayPath(loc.dir, io)}): ${files.length} file${files.length === 1 ? "" : "s"}, ${size(r.bytes)}\n`;
      if (r.finished > 0) out += `(and finished ${r.finished === 1 ? "a removal" : `${r.finished} removals`} of it cut short earlier)\n`;
      return out;
    });
  }, "change");
}
