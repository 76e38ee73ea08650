// Reading run directories back (`vvm runs`): the runs under a project, a run's state.md parsed, a binding's
// text. A run directory is untrusted (anyone can copy one in): nothing here follows a symbolic link, and
// only names of the run-id and binding-id forms are looked at.
import { lstatSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { nodeFs } from "../memory/fsio.ts";
import { BINDING_ID, NAME_CHARS, RUN_ID, RUNS_DIR } from "./run-dir.ts";
import { cellSource, tableCell } from "./summary.ts";

/** state.md is read up to this size (the runtime keeps it far smaller). */
const STATE_CAP = 16 * 2 ** 20;

/** A run as `vvm runs ls` and `prune` see it: state.md's header and how many bindings its index lists. */
export interface RunSummary {
  id: string;
  dir: string;
  program: string | null;
  started: string | null;
  updated: string | null;
  /** as state.md says; null when state.md is missing or unreadable, or has no Status line */
  status: string | null;
  /** whether there is a readable state.md (a status of null may be its missing Status line) */
  stateRead: boolean;
  bindingCount: number;
}

/** A run whole, as `vvm runs show` and `cat` read it. */
export interface RunInfo extends RunSummary {
  bindings: { name: string; binding: string; summary: string }[];
  trace: string[];
}

/** `<project>/.vvm/runs`, or null when there is none (or it or `.vvm` is not a real directory: a link is never followed). */
export function runsRoot(project: string): string | null {
  const root = path.join(project, RUNS_DIR);
  return realDirectory(path.dirname(root)) && realDirectory(root) ? root : null;
}

/**
 * The runs under a project, oldest first (by the run id's second, then state.md's Started). One state.md at
 * a time, and of each only the header is parsed and the index rows counted: a project can hold many runs,
 * and a copied-in state.md can be as large as the cap.
 */
export async function listRuns(project: string): Promise<RunSummary[]> {
  const root = runsRoot(project);
  if (root === null) return [];
  const ids = readdirSync(root).filter((n) => RUN_ID.test(n) && realDirectory(path.join(root, n))).sort();
  const out: RunSummary[] = [];
  for (const id of ids) {
    const dir = path.join(root, id);
    const raw = await readState(dir);
    const info: RunSummary = { id, dir, program: null, started: null, updated: null, status: null, stateRead: raw !== null, bindingCount: 0 };
    if (raw !== null) {
      // the header is the file's first lines
      readHeader(info, raw.subarray(0, HEADER_BYTES).toString("utf8").split("\n"));
      for (let at = raw.indexOf(ROW); at >= 0; at = raw.indexOf(ROW, at + ROW.length)) info.bindingCount++;
    }
    out.push(info);
  }
  // Run ids sort by their second only, then by their random part: two runs started within one second are put
  // in order by the time their state.md gives to the millisecond, so `prune --keep` never keeps the older.
  // A run whose Started cannot be read (or lies outside its id's second: edited by hand) goes last in its second.
  const within = (r: RunSummary) => {
    const t = r.started === null ? NaN : Date.parse(r.started);
    const second = Date.parse(idTime(r.id));
    return t >= second && t < second + 1000 ? t - second : 1000;
  };
  const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return out.sort((a, b) => order(a.id.slice(0, 15), b.id.slice(0, 15)) || within(a) - within(b) || order(a.id, b.id));
}

/** `20260127-143052-…` as an ISO time (UTC): when the run started, to the second. */
export function idTime(id: string): string {
  return `${id.slice(0, 4)}-${id.slice(4, 6)}-${id.slice(6, 8)}T${id.slice(9, 11)}:${id.slice(11, 13)}:${id.slice(13, 15)}Z`;
}

/** How far into state.md its header lies (the runtime writes four short lines after the title). */
const HEADER_BYTES = 64 * 1024;
/** The start of every row of the binding index (a pipe inside a cell is escaped). */
const ROW = Buffer.from(" | bindings/b");

/** state.md's bytes up to the cap; null when it is missing, a link or anything but a regular file. */
async function readState(dir: string): Promise<Buffer | null> {
  try {
    const fh = await nodeFs.openRead(path.join(dir, "state.md"));
    if (fh === null) return null;
    try {
      return await fh.readNow(STATE_CAP);
    } finally {
      await fh.close();
    }
  } catch {
    return null; // said as "no state"
  }
}

function readHeader(info: RunSummary, lines: string[]): void {
  for (const line of lines) {
    if (line.startsWith("## ")) return;
    const header = /^(Program|Started|Updated|Status): (.*)$/.exec(line);
    if (header) info[header[1]!.toLowerCase() as "program" | "started" | "updated" | "status"] = header[2]!;
  }
}

/** One run by its id or a prefix that names one run alone; a message when there is none or several. */
export async function findRun(project: string, idOrPrefix: string): Promise<RunInfo | string> {
  const root = runsRoot(project);
  if (root === null) return `no runs under ${path.join(project, RUNS_DIR)}`;
  const ids = readdirSync(root).filter((n) => RUN_ID.test(n) && n.startsWith(idOrPrefix) && realDirectory(path.join(root, n)));
  if (ids.length === 0) return `no run ${idOrPrefix} under ${root}`;
  if (ids.length > 1 && !ids.includes(idOrPrefix)) return `${idOrPrefix} names ${ids.length} runs (${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}); give more of the id`;
  return readRun(path.join(root, ids.includes(idOrPrefix) ? idOrPrefix : ids[0]!));
}

export async function readRun(dir: string): Promise<RunInfo> {
  const raw = await readState(dir);
  const info: RunInfo = { id: path.basename(dir), dir, program: null, started: null, updated: null, status: null, stateRead: raw !== null, bindingCount: 0, bindings: [], trace: [] };
  if (raw === null) return info;
  const lines = raw.toString("utf8").split("\n");
  readHeader(info, lines);
  let section = "";
  for (const line of lines) {
    if (line.startsWith("## ")) section = line.slice(3).trim();
    const row = /^\| (.*?) \| bindings\/(b\d{6,})\.md \| (.*) \|$/.exec(line);
    if (row && section === "Binding Index") info.bindings.push({ name: unescapeCell(row[1]!), binding: row[2]!, summary: unescapeCell(row[3]!) });
    if (section === "Execution Trace" && line.startsWith("- ")) info.trace.push(line.slice(2));
  }
  info.bindingCount = info.bindings.length;
  return info;
}

/** The largest binding file `vvm runs cat` prints. */
const MAX_SHOWN_BINDING_BYTES = 64 * 2 ** 20;

/**
 * A binding's text, by binding id (`b000001`) or by name (the latest binding of that name); a message
 * when there is no such binding or it cannot be read.
 */
export async function readBinding(run: RunInfo, nameOrId: string): Promise<{ binding: string; name: string | null; text: string; others: number } | string> {
  const byId = BINDING_ID.test(nameOrId);
  // a name is found as state.md holds it: one line, cut to 60 characters
  const shown = unescapeCell(tableCell(cellSource(nameOrId), NAME_CHARS));
  const rows = byId ? run.bindings.filter((b) => b.binding === nameOrId) : run.bindings.filter((b) => b.name === nameOrId || b.name === shown);
  if (!byId && rows.length === 0) return `run ${run.id} has no binding named ${nameOrId}`;
  const binding = byId ? nameOrId : rows[rows.length - 1]!.binding;
  const name = rows[rows.length - 1]?.name ?? null;
  const others = byId ? 0 : rows.length - 1;
  if (!realDirectory(path.join(run.dir, "bindings"))) return `run ${run.id}: bindings is not a folder of the run (a link is never followed)`;
  try {
    const h = await nodeFs.openRead(path.join(run.dir, "bindings", `${binding}.md`));
    if (h === null) return `run ${run.id} has no binding file ${binding}.md`;
    try {
      // shown whole or not at all: a file a cloned repository ships can be any size
      if (h.size > MAX_SHOWN_BINDING_BYTES) return `${binding}.md is ${h.size.toLocaleString("en")} bytes, more than vvm runs cat shows (${MAX_SHOWN_BINDING_BYTES / 2 ** 20} MiB): read ${path.join(run.dir, "bindings", `${binding}.md`)} itself`;
      return { binding, name, text: (await h.read(0, h.size)).toString("utf8"), others };
    } finally {
      await h.close();
    }
  } catch (err) {
    return `cannot read ${binding}.md (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
}

/** A run left as it is because its folder, `.vvm/runs` or `.vvm` is no longer a real directory (gone, or swapped for a link). */
export class NotRemoved extends Error {}

/** Remove a run directory: its entries are removed, never followed (links included). Throws NotRemoved when it is not one. */
export function removeRun(run: RunSummary): void {
  // the run, .vvm/runs and .vvm are all real directories: a link anywhere there would take the removal elsewhere
  const root = path.dirname(run.dir);
  if (!realDirectory(run.dir) || !realDirectory(root) || !realDirectory(path.dirname(root))) {
    throw new NotRemoved("its folder, .vvm/runs or .vvm is no longer a real directory (removed, or replaced by a link); nothing was removed");
  }
  rmSync(run.dir, { recursive: true, force: true });
}

function realDirectory(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

function unescapeCell(s: string): string {
  return s.replace(/\\([\\|])/g, "$1");
}
