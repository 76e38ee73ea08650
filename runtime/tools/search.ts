// search_files runs the model's regular expression in a worker thread: a pattern that backtracks for
// minutes (`(a+)+$`) would otherwise freeze the whole runtime, Ctrl-C included. The worker is terminated
// when the search takes too long or the call is cancelled. The files are chosen (and permission-checked)
// by the caller; the worker only reads them, opening each real path without following a link.
import { Worker } from "node:worker_threads";

interface SearchLimits {
  maxMatches: number;
  /** characters of a matching line shown */
  maxLineChars: number;
  /** larger files are skipped (and counted) */
  maxFileBytes: number;
  timeoutMs: number;
}

interface SearchMatch {
  shown: string;
  line: number;
  text: string;
}

interface SearchResult {
  matches: SearchMatch[];
  /** more matches than maxMatches */
  truncated: boolean;
  skippedLarge: number;
  skippedBinary: number;
}

type SearchEnd = { ok: true; result: SearchResult } | { ok: false; why: "timeout" | "aborted" | "failed"; message: string };

// Plain JavaScript, evaluated as the worker's script (so it survives bundling: no file to find at run time).
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { files, source, maxMatches, maxLineChars, maxFileBytes } = workerData;
const re = new RegExp(source);
const decoder = new TextDecoder("utf-8", { fatal: true });
const matches = [];
let truncated = false, skippedLarge = 0, skippedBinary = 0;
const flags = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW || 0) | (fs.constants.O_NONBLOCK || 0);
// sandbox.ts openedAt, which this script cannot import: the file open is the one the walk resolved, not one
// a folder swapped for a link since then leads to
function openedAt(fd, real, st) {
  let named = null;
  try { named = fs.readlinkSync("/proc/self/fd/" + fd); } catch {}
  if (named !== null) return named === real;
  const now = fs.lstatSync(real, { throwIfNoEntry: false });
  return now !== undefined && now.ino === st.ino && now.dev === st.dev;
}
outer: for (const f of files) {
  let fd;
  try { fd = fs.openSync(f.real, flags); } catch { continue; }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || !openedAt(fd, f.real, st)) continue;
    if (st.size > maxFileBytes) { skippedLarge++; continue; }
    const buf = Buffer.alloc(st.size);
    let n = 0;
    while (n < st.size) { const r = fs.readSync(fd, buf, n, st.size - n, n); if (r === 0) break; n += r; }
    const bytes = buf.subarray(0, n);
    if (bytes.subarray(0, 8192).includes(0)) { skippedBinary++; continue; }
    let text;
    try { text = decoder.decode(bytes); } catch { skippedBinary++; continue; }
    const lines = text.split("\\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].endsWith("\\r") ? lines[i].slice(0, -1) : lines[i];
      if (!re.test(line)) continue;
      if (matches.length >= maxMatches) { truncated = true; break outer; }
      // a cut never splits a surrogate pair (half a character is refused by the API)
      const cutAt = line.length > maxLineChars && line.charCodeAt(maxLineChars - 1) >= 0xd800 && line.charCodeAt(maxLineChars - 1) <= 0xdbff ? maxLineChars - 1 : maxLineChars;
      const shown = line.length > maxLineChars ? line.slice(0, cutAt) + " …" : line;
      matches.push({ shown: f.shown, line: i + 1, text: shown });
    }
  } finally { fs.closeSync(fd); }
}
parentPort.postMessage({ matches, truncated, skippedLarge, skippedBinary });
`;

export function searchFiles(files: { real: string; shown: string }[], source: string, limits: SearchLimits, signal: AbortSignal): Promise<SearchEnd> {
  return new Promise<SearchEnd>((resolve) => {
    let settled = false;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { files, source, maxMatches: limits.maxMatches, maxLineChars: limits.maxLineChars, maxFileBytes: limits.maxFileBytes },
      // a file read whole stays well inside this; a runaway pattern or file cannot take the runtime's memory
      resourceLimits: { maxOldGenerationSizeMb: 256 + Math.ceil((limits.maxFileBytes * 4) / 2 ** 20) },
      stdout: true,
      stderr: true,
    });
    const end = (r: SearchEnd) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      void worker.terminate();
      resolve(r);
    };
    const timer = setTimeout(
      () => end({ ok: false, why: "timeout", message: `the search stopped after ${Math.round(limits.timeoutMs / 1000)}s without finishing (a regular expression that backtracks too much, or too many files); narrow the pattern or simplify the query` }),
      limits.timeoutMs,
    );
    const onAbort = () => end({ ok: false, why: "aborted", message: "the search was stopped: the call was cancelled or ran out of time" });
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (m: SearchResult) => end({ ok: true, result: m }));
    worker.once("error", (e) => end({ ok: false, why: "failed", message: `the search failed: ${e.message}` }));
    worker.once("exit", (code) => end({ ok: false, why: "failed", message: `the search ended without a result (worker exit ${code})` }));
  });
}
