// `vvm memory doctor [KEY]`: check one memory, or every memory under the root, whole; --fix repairs what
// can be repaired under the lock and records it in the ledger (runtime/memory/doctor.ts, maintain.ts).
// Exit 0 when no problem is left, 1 when one is (or the memory does not exist).
import path from "node:path";
import { beforeLongSync, displayPath, EXIT, type CliIO } from "../io.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import type { Finding } from "../../runtime/memory/doctor.ts";
import { removalsLeft, type RemovalLeft } from "../../runtime/memory/inspect.ts";
import { assertProjectRootReal, BindingError, escapeKey, unescapeKey, type MemoryLocation } from "../../runtime/memory/keys.ts";
import type { Doctored } from "../../runtime/memory/maintain.ts";
import { parseMeta } from "../../runtime/memory/state.ts";
import { cutShort, emit, existing, label, memoryCommand, notAnRmFolder, toolOptions, where, type WriteFlags } from "./memory.ts";

export type DoctorFlags = WriteFlags & { fix?: boolean };

const finding = (f: Finding) => ({ code: f.code, severity: f.problem ? "problem" : "note", message: f.message, fix: f.fix });

function report(d: Doctored, known: boolean, io: CliIO) {
  const left = d.after.findings.filter((f) => f.problem);
  return {
    json: {
      key: known ? d.after.loc.key : null,
      scope: d.after.loc.scope,
      dir: d.after.loc.dir,
      entries: d.after.entries,
      ledger_bytes: d.after.ledgerBytes,
      healthy: left.length === 0,
      findings: d.after.findings.map(finding),
      fixed: d.fixed.map(finding),
      entry: d.entry,
      said: d.said,
      fix_refused: d.refused,
    },
    text: () => {
      const loc = d.after.loc;
      const name = known ? label(loc) : `memory directory ${path.basename(loc.dir)} (key unknown)`;
      const notes = d.after.findings.length - left.length;
      let out = `${name} (${displayPath(loc.dir, io)}): ${left.length === 0 ? "healthy" : `${left.length} problem${left.length === 1 ? "" : "s"}`}${notes > 0 ? `, ${notes} note${notes === 1 ? "" : "s"}` : ""}\n`;
      const repaired = d.fixed.filter((f) => f.problem);
      const tidied = d.fixed.filter((f) => !f.problem);
      if (repaired.length > 0) {
        out += `  fixed ${repaired.length} (recorded in the ledger as entry ${d.entry}):\n`;
        for (const f of repaired) out += `    ${f.message}\n`;
      }
      if (tidied.length > 0) {
        out += `  tidied ${tidied.length} (notes: temporary or derived files, as the next continue call would; not recorded):\n`;
        for (const f of tidied) out += `    ${f.message}\n`;
      }
      for (const s of d.said) out += `  the store: ${s}\n`;
      if (d.refused !== null) out += `  --fix could not run: ${d.refused}\n`;
      for (const f of left) out += `  problem: ${f.message}\n      ${f.fix === null ? "fix by hand" : `--fix will ${f.fix}`}\n`;
      for (const f of d.after.findings.filter((x) => !x.problem)) out += `  note: ${f.message}\n`;
      return out;
    },
    healthy: left.length === 0,
  };
}

/** The key a memory directory holds: its name decoded, or meta.json's key when that key escapes to the name. */
async function keyOf(name: string, dir: string): Promise<string | null> {
  const key = unescapeKey(name);
  if (key !== null) return key;
  try {
    const meta = parseMeta((await nodeFs.readFile(path.join(dir, "meta.json"))) ?? Buffer.from(""));
    return typeof meta?.key === "string" && escapeKey(meta.key) === name ? meta.key : null;
  } catch {
    return null;
  }
}

export function memoryDoctor(key: string | undefined, flags: DoctorFlags, io: CliIO): Promise<number> {
  return memoryCommand(io, async () => {
    const { doctorMemory, finishRemovals, memoryNames, ToolError } = await import("../../runtime/memory/maintain.ts");
    const opts = toolOptions("doctor", flags, io);
    const fix = flags.fix === true;
    const doctor = async (loc: MemoryLocation, fixing: boolean) => {
      const d = await doctorMemory(loc, fixing, opts);
      // a Ctrl-C stopped --fix (while it waited for the lock, say): one line and exit 130, as restore and forget say it
      if (d.refused !== null && io.signal.aborted) throw new ToolError(d.refused, "refused");
      return d;
    };
    if (key !== undefined) {
      const loc = await existing(key, flags, io);
      // --fix writes under the lock: a Ctrl-C then stops it cleanly, never at once
      if (!fix) beforeLongSync(io);
      const r = report(await doctor(loc, fix), true, io);
      emit(io, flags, r.json, r.text);
      return r.healthy ? EXIT.ok : EXIT.missing;
    }
    const w = where(flags, io);
    // a project's root that is a link is not gone through: its memories could be the user's own (keys.ts)
    try {
      assertProjectRootReal(w.scope, w.root);
    } catch (err) {
      if (err instanceof BindingError) throw new ToolError(err.message, "refused");
      throw err;
    }
    const reports: ReturnType<typeof report>[] = [];
    const unreadable: { dir: string; problem: string }[] = [];
    for (const name of await memoryNames(w.root)) {
      // a Ctrl-C while --fix changed a memory: that one was completed and is reported; the next is not begun
      if (fix && io.signal.aborted) break;
      const dir = path.join(w.root, name);
      const k = await keyOf(name, dir);
      const loc: MemoryLocation = { scope: w.scope, key: k ?? name, root: w.root, dir };
      if (!fix) beforeLongSync(io);
      try {
        // a memory whose key is unknown is examined, never fixed: meta.json would be written with a wrong key
        reports.push(report(await doctor(loc, fix && k !== null), k !== null, io));
      } catch (err) {
        if (!(err instanceof ToolError) || io.signal.aborted) throw err;
        unreadable.push({ dir, problem: err.message });
      }
    }
    // what an rm killed part-way left aside: the files the user meant to remove, still on disk
    const left = await removalsLeft(w.root, nodeFs);
    // (finishRemovals finishes every leftover of one memory; none is begun after a Ctrl-C)
    const finishing = fix && !io.signal.aborted;
    if (finishing) for (const name of new Set(left.map((r) => r.name))) await finishRemovals({ scope: w.scope, key: name, root: w.root, dir: path.join(w.root, name) }, opts.warn);
    const removals: { r: RemovalLeft; finished: boolean; folder: boolean }[] = [];
    // (a link or a file there is no rm's: --fix leaves it, as ls says)
    for (const r of left) {
      const st = await nodeFs.inspect(r.path);
      removals.push({ r, finished: finishing && st === null, folder: st?.type === "dir" });
    }
    const healthy = unreadable.length === 0 && reports.every((r) => r.healthy) && removals.every((r) => r.finished);
    const cutShortJson = removals.map(({ r, finished }) => ({ key: r.key, dir: path.basename(r.path), finished }));
    emit(io, flags, { scope: w.scope, root: w.root, healthy, memories: reports.map((r) => r.json), unreadable, removals_cut_short: cutShortJson }, () => {
      let out = reports.length + unreadable.length + removals.length === 0 ? `no memories in ${displayPath(w.root, io)} (${w.scope} scope)\n` : "";
      for (const r of reports) out += r.text();
      for (const u of unreadable) out += `memory directory ${path.basename(u.dir)}: cannot be checked: ${u.problem}\n`;
      for (const { r, finished, folder } of removals) {
        if (finished) out += `${cutShort(r)}: finished (removed)\n`;
        else if (finishing) out += `problem: ${cutShort(r)}\n      --fix could not remove it: remove it by hand (the warning on stderr says why)\n`;
        else if (!folder) out += `problem: ${notAnRmFolder(r)}\n      remove it by hand (--fix finishes only what an rm left)\n`;
        else out += `problem: ${cutShort(r)}\n      --fix will finish removing it\n`;
      }
      return out;
    });
    return healthy ? EXIT.ok : EXIT.missing;
  }, flags.fix ? "change" : "read");
}
