// `vvm memory doctor`: a memory checked whole, without the lock and without writing: every ledger line,
// the digest against the ledger and meta.json, the lock, leftover files, links where regular files
// belong, oversized files, the recall index. Each finding says whether `--fix` (maintain.ts: the store's
// own recovery under the lock, then derived files rebuilt) repairs it or a person must. spec/memory.md §13.
import path from "node:path";
import { indexState } from "./fact-index.ts";
import { isOrphanName, type MemoryFs } from "./fsio.ts";
import { settledLook } from "./inspect.ts";
import type { MemoryLocation } from "./keys.ts";
import { ENTRY_KINDS, ForwardLines, MAX_ENTRY_BYTES, parseEntry, SequenceCheck, type LedgerEntry } from "./ledger.ts";
import { DEFAULT_STALE_MS, holderName, judgeLock } from "./lock.ts";
import { MAX_DIGEST_FILE_BYTES } from "./patch.ts";
import { digestState, KEEP_REPLACED_MS, MAX_META_BYTES, parseMeta, readDigestFile, REPLACED, type Meta } from "./state.ts";

/** One thing found. A `problem` is wrong; anything else is a note worth knowing. */
export interface Finding {
  code: string;
  problem: boolean;
  message: string;
  /** the derived file (meta.json, recall.jsonl) `--fix` removes and writes afresh */
  remove?: "meta.json" | "recall.jsonl";
  /** what `--fix` does about it; null when a person must (the message says how) */
  fix: string | null;
}

export interface Examination {
  loc: MemoryLocation;
  findings: Finding[];
  /** the last readable entry's seq (0: none), and the ledger's size in bytes */
  entries: number;
  ledgerBytes: number;
}

/** Files the runtime keeps in a memory directory. */
const MEMORY_FILES = ["digest.md", "ledger.jsonl", "meta.json", "recall.jsonl", "lock"];

const problem = (code: string, message: string, fix: string | null): Finding => ({ code, problem: true, message, fix });
const note = (code: string, message: string, fix: string | null = null): Finding => ({ code, problem: false, message, fix });

/**
 * The memory at `loc` examined; its directory must exist and have been checked to lie inside its root.
 * `key`: what recall.jsonl should be signed with (null: the user has none yet, so no index can be trusted).
 * `lockIsOurs`: the caller holds the memory's lock (`doctor --fix`), so the lock is not judged and every
 * temporary file is a leftover.
 */
export async function examine(loc: MemoryLocation, fs: MemoryFs, key: Buffer | null, { now = Date.now(), lockIsOurs = false } = {}): Promise<Examination> {
  const found: Finding[] = [];
  const file = (name: string) => path.join(loc.dir, name);
  const names = await fs.list(loc.dir);

  // links, hard links, directories and FIFOs where the runtime's own regular files belong
  const usable = new Map<string, boolean>();
  for (const name of MEMORY_FILES) {
    const st = await fs.inspect(file(name));
    usable.set(name, st === null || (st.type === "file" && st.nlink === 1));
    if (st === null || (st.type === "file" && st.nlink === 1)) continue;
    if (name === "lock") continue; // judged below, as a call judges it
    const what = st.type === "link" ? "a symbolic link" : st.type === "dir" ? "a directory" : st.type === "file" ? `a file with ${st.nlink} names (hard links)` : "not a regular file (a FIFO, a socket or a device)";
    const derived = name === "meta.json" || name === "recall.jsonl";
    const f = problem(
        "not-regular",
        `${name} is ${what}; it is never read or written through${derived ? "" : name === "digest.md" ? ", so the digest is not injected and no patch replaces it" : ", so every continue call on this memory fails"}`,
      derived && st.type !== "dir" ? `remove that name (never following it) and write ${name} afresh` : derived ? `remove it if it is an empty directory and write ${name} afresh` : null,
    );
    if (derived) f.remove = name;
    found.push(f);
  }

  // oversized files
  const digestSt = await fs.inspect(file("digest.md"));
  if (digestSt?.type === "file" && digestSt.size > MAX_DIGEST_FILE_BYTES) found.push(problem("oversized", `digest.md is ${digestSt.size} bytes, over the ${MAX_DIGEST_FILE_BYTES}-byte cap: it is not injected and never replaced`, null));
  const metaSt = await fs.inspect(file("meta.json"));
  const metaTooBig = metaSt?.type === "file" && metaSt.size > MAX_META_BYTES;
  if (metaTooBig) found.push({ ...problem("oversized", `meta.json is ${metaSt.size} bytes, far more than the runtime writes`, "remove it and write meta.json afresh"), remove: "meta.json" });

  // every ledger line
  const ledger = await readLedger(fs, file("ledger.jsonl"), usable.get("ledger.jsonl") !== false, found);

  // digest.md against the ledger and meta.json
  const digest = usable.get("digest.md") ? await readDigestFile(fs, file("digest.md")) : null;
  if (digest?.parsed.unusable && !(digestSt !== null && digestSt.type === "file" && digestSt.size > MAX_DIGEST_FILE_BYTES)) {
    found.push(problem("digest-unusable", `${digest.parsed.unusable}: the digest is not injected and no patch replaces it until a person fixes digest.md`, null));
  }
  for (const n of digest?.parsed.notes ?? []) found.push(problem("digest-settings", `digest.md: ${n}`, null));
  let meta: Meta | null = null;
  if (usable.get("meta.json") && !metaTooBig) {
    const raw = await fs.readFile(file("meta.json"));
    if (raw !== null) {
      meta = parseMeta(raw);
      if (meta === null) found.push(problem("meta-invalid", "meta.json is not valid (a torn write, or edited)", "write meta.json afresh from digest.md and the ledger"));
    } else if (ledger.last !== null) found.push(problem("meta-missing", "meta.json is missing", "write it from digest.md and the ledger"));
  }
  if (digest !== null && ledger.readable) {
    const state = digestState(digest.hash, ledger.last, meta);
    switch (state.kind) {
      case "clean":
        break;
      case "interrupted":
        found.push(problem("digest-interrupted", `the update of entry ${state.seq} was cut short: digest.md is still the digest before it`, `complete it from the entry (a repair entry), as the next continue call would`));
        break;
      case "edited":
        found.push(problem("digest-edited", `digest.md does not match the ledger (changed by hand${state.after === null ? "" : ` after entry ${state.after}`}): the ledger does not explain it yet`, `record it as an external_edit entry${digest.parsed.unusable ? " (without its content: it is unusable)" : ""}, as the next continue call would`));
        break;
      default: {
        const never: never = state;
        return never;
      }
    }
    if (meta !== null) {
      const behind: string[] = [];
      // an edit not recorded yet is reported above: meta.json cannot know it either
      if (meta.digest_sha256 !== digest.hash && state.kind === "clean") behind.push(`its digest_sha256 is not digest.md's`);
      if (ledger.last !== null && meta.last_seq !== ledger.last.seq) behind.push(`its last_seq is ${meta.last_seq}, the ledger's last entry ${ledger.last.seq}`);
      if (typeof meta.key === "string" && meta.key !== loc.key) behind.push(`it names the key ${JSON.stringify(meta.key)}`);
      if (behind.length > 0) found.push(problem("meta-stale", `meta.json is out of step: ${behind.join("; ")}`, "write meta.json afresh"));
    }
  }

  // the lock
  const lock = lockIsOurs ? null : judgeLock(file("lock"), DEFAULT_STALE_MS, now);
  if (lock !== null) {
    const who = lock.holder?.pid != null ? holderName(lock.holder) : "a holder it does not name";
    if (lock.stale === "gone") found.push(problem("lock-stale", `a stale lock: ${who} holds it and no longer runs`, "take it over, as the next call would"));
    else if (lock.stale === "old") found.push(problem("lock-stale", `a stale lock: held by ${who}, not refreshed for over ${DEFAULT_STALE_MS / 1000} s`, "take it over, as the next call would"));
    else found.push(note("lock-held", `in use: the lock is held by ${who}${lock.holder?.since ? ` since ${lock.holder.since}` : ""}`));
  }

  // leftovers, and files that are not the runtime's
  for (const name of names.sort()) {
    if (MEMORY_FILES.includes(name)) continue;
    if (isOrphanName(name)) {
      if (lock === null || lock.stale !== null) found.push(problem("orphan", `${name} was left by an interrupted write`, "remove it, as the next continue call would"));
      else found.push(note("orphan", `${name}: a temporary file, most likely the write in progress of the call that holds the lock`));
      continue;
    }
    if (REPLACED.test(name)) {
      const st = await fs.inspect(file(name));
      if (st !== null && now - st.mtimeMs > KEEP_REPLACED_MS) found.push(note("replaced", `${name}: a digest.md a commit replaced, kept in case a person saves into it`, "look at it once more and remove it, as the next continue call would"));
      continue;
    }
    found.push(note("unknown-file", `${name} is not a file the runtime keeps here; it is left alone`));
  }

  // the recall index
  if (ledger.readable && usable.get("recall.jsonl")) {
    const idx = await indexState({ fs, ledger: file("ledger.jsonl"), index: file("recall.jsonl"), ledgerSize: ledger.size, key });
    switch (idx.state) {
      case "damaged":
        found.push(problem("recall", idx.detail ?? "recall.jsonl is damaged", "rebuild it from the ledger"));
        break;
      case "stale":
        found.push(problem("recall", "recall.jsonl does not match ledger.jsonl (rewritten or cut since it was built)", "rebuild it from the ledger"));
        break;
      case "foreign":
        // a shared project's index, signed by a teammate's runtime: derived, and rebuilt without harm
        found.push(note("recall", "recall.jsonl is not signed for this memory with your key (another user's runtime wrote it, or it was changed since); the next continue call rebuilds it", "rebuild it from the ledger"));
        break;
      case "unchecked":
        found.push(note("recall", "recall.jsonl cannot be checked: there is no usable key in ~/.vvm/recall.key (a continue call makes one where none is; a link, folder or other file there is left to a person)"));
        break;
      case "missing":
        if (ledger.last !== null) found.push(note("recall", "recall.jsonl is not built yet (the next continue call builds it)", "build it from the ledger"));
        break;
      case "ok":
        break;
      default: {
        const never: never = idx.state;
        throw new Error(`unknown index state ${String(never)}`);
      }
    }
  }
  return { loc, findings: found, entries: ledger.last?.seq ?? 0, ledgerBytes: ledger.size };
}

/** What a commit in progress looks like from outside: a line being appended, digest.md, meta.json or recall.jsonl behind the ledger. */
const MID_COMMIT = new Set(["torn-tail", "digest-interrupted", "digest-edited", "meta-stale", "meta-invalid", "recall"]);

/**
 * `examine` without the lock, taken again while the files change under it or a call that holds the lock has the
 * memory looking half-way through a commit (MID_COMMIT), as `ls` and `show` do (settledLook, inspect.ts).
 */
export function examineSettled(loc: MemoryLocation, fs: MemoryFs, key: Buffer | null, signal: AbortSignal): Promise<Examination> {
  const busy = (found: Examination) => found.findings.some((f) => f.code === "lock-held") && found.findings.some((f) => f.problem && MID_COMMIT.has(f.code));
  return settledLook(fs, loc.dir, signal, () => examine(loc, fs, key), busy);
}

/** Skipped ledger lines a report names one by one. */
const MAX_NAMED_LINES = 10;

/** Every line of the ledger, oldest first: unreadable, out-of-sequence and over-long lines, a torn tail, seq gaps, breaks in the hash chain, kinds of a later release. */
async function readLedger(fs: MemoryFs, file: string, regular: boolean, found: Finding[]): Promise<{ readable: boolean; size: number; last: LedgerEntry | null }> {
  if (!regular) return { readable: false, size: 0, last: null };
  const h = await fs.openRead(file);
  if (h === null) return { readable: true, size: 0, last: null };
  const check = new SequenceCheck();
  let last: LedgerEntry | null = null;
  let chained: LedgerEntry | null = null;
  const reported = { chain: 0, gaps: 0, kinds: new Set<string>() };
  // the first lines that are skipped are named one by one, the rest counted (a damaged ledger can hold hundreds of thousands)
  let skipped = 0;
  const skip = (message: string) => {
    if (skipped++ < MAX_NAMED_LINES) found.push(problem("ledger-line", message, null));
  };
  try {
    const lines = new ForwardLines(h, MAX_ENTRY_BYTES);
    for await (const batch of lines) {
      for (const { start, length, bytes } of batch) {
        if (bytes === null) {
          skip(`ledger.jsonl: the line at byte ${start} is ${length} bytes, longer than any entry; it is skipped`);
          continue;
        }
        const e = parseEntry(bytes);
        if (e === null) {
          skip(`ledger.jsonl: the line at byte ${start} is not a ledger entry; it is kept and skipped (remove or mend it by hand)`);
          continue;
        }
        const prev = last;
        if (!check.accept(e)) {
          skip(`ledger.jsonl: the entry at byte ${start} (seq ${e.seq}) is out of sequence after entry ${prev?.seq ?? "?"}; it is kept and skipped`);
          continue;
        }
        if (prev !== null && e.seq !== prev.seq + 1 && reported.gaps++ < 10) found.push(note("seq-gap", `ledger.jsonl: entries ${prev.seq + 1}–${e.seq - 1} are missing (lines deleted by hand?)`));
        // a repair entry records the digest as recovery found it, before a hand edit is recorded: outside the chain
        if (e.kind !== "repair") {
          if (chained !== null && typeof e.digest_before === "string" && e.digest_before !== chained.digest_after && reported.chain++ < 10) {
            found.push(note("chain", `ledger.jsonl: entry ${e.seq} starts from a digest that entry ${chained.seq} did not leave (lines deleted or edited by hand?)`));
          }
          chained = e;
        }
        if (!(ENTRY_KINDS as readonly string[]).includes(e.kind) && !reported.kinds.has(e.kind)) {
          reported.kinds.add(e.kind);
          found.push(note("unknown-kind", `ledger.jsonl: entries of kind ${JSON.stringify(e.kind)}, which this release does not know, are read for their hashes only`));
        }
        last = e;
      }
    }
    if (skipped > MAX_NAMED_LINES) found.push(problem("ledger-line", `ledger.jsonl: ${skipped - MAX_NAMED_LINES} more lines are skipped as above (${skipped} in all)`, null));
    if (lines.tornBytes > 0) found.push(problem("torn-tail", `ledger.jsonl ends with ${lines.tornBytes} bytes of an incomplete line (an interrupted write)`, "replace them with a repair entry, as the next continue call would"));
    return { readable: true, size: h.size, last };
  } finally {
    await h.close();
  }
}

/** A finding's identity, to tell which findings a fix removed. */
export const findingId = (f: Finding) => `${f.code}\0${f.message}`;
