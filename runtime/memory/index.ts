// Persistent agent memory: digest.md + ledger.jsonl + meta.json per (scope, key), behind the
// MemoryPort the call layer uses. spec/memory.md describes the behaviour; this file is the order
// of operations: resolve → lock → recover → load → (model call) → strip → validate → apply → unlock.
import path from "node:path";
import type { MemoryMode, MemoryPort, MemoryProvenance, MemorySession } from "../memory-port.ts";
import { makeError, type Value, type VObject } from "../values.ts";
import { isOrphanName, nodeFs, NOT_REGULAR, type MemoryFs, type ReadHandle } from "./fsio.ts";
import { BindingError, resolveBinding, sha256, verifyContainment, type MemoryLocation } from "./keys.ts";
import { LEDGER_VERSION, MAX_SEQ, scanTail, serializeEntry, wholeTail, type LedgerEntry, type Provenance, type TailCache } from "./ledger.ts";
import { acquire, DEFAULT_STALE_MS, type HeldLock } from "./lock.ts";
import { digestFile, extractBlocks, MAX_DIGEST_FILE_BYTES, MAX_RETAIN_CHARS, MAX_RETAIN_ITEMS, parseDigest, parsePatch, unusableDigest, type ParsedDigest, type Patch } from "./patch.ts";
import { scanSecrets, type Finding } from "./secrets.ts";

export interface MemoryStoreOptions {
  /** directory of the entry program: `project` scope and relative `path`s resolve against it */
  entryDir: string;
  homeDir: string;
  /** longest wait for a key's lock before the call returns `error(kind="locked")` */
  lockTimeoutMs: number;
  /** token budget for retained facts in the Memory Context */
  budgetTokens: number;
  warn: (message: string) => void;
  /** how a program's path appears in warnings (the CLI: relative to the working directory) */
  showPath?: (file: string) => string;
  /** age after which a lock left by a dead process is taken over (default 10 s, at least 2 s) */
  staleMs?: number;
  /** file layer; tests substitute one that fails */
  fs?: MemoryFs;
}

export type MemoryStore = MemoryPort & { close(): Promise<void> };

const SCHEMA_VERSION = 1;
/** Most ledger bytes read from the end per call, however long the ledger grows. */
const MAX_SCAN_BYTES = 1024 * 1024;
/** Rough characters per token, for the retained-facts budget. */
const CHARS_PER_TOKEN = 4;
const EMPTY_HASH = sha256("");

interface Meta {
  schema: number;
  key: string;
  scope: string;
  created_at: string;
  last_used_at: string;
  last_mode: MemoryMode;
  digest_sha256: string;
  /** bumped by every apply; a writer that finds a different value than it loaded refuses to write */
  generation: number;
  /** the ledger's last sequence number, a fallback when no entry is readable near its end */
  last_seq: number;
}

/** A write that must not happen; the message says why and that memory is unchanged. */
class Refused extends Error {}

/** digest.md changed after the commit re-read it and before the new digest was renamed into place. */
class SavedDuringCommit extends Error {}

/** An error's code and, when it has one, the memory file it concerns (never a whole path). */
function code(err: unknown): string {
  const e = err as NodeJS.ErrnoException | null;
  if (e?.code === NOT_REGULAR) return e.message;
  if (e?.code && e.path) return `${e.code}, ${path.basename(e.path)}`;
  return e?.code ?? e?.message ?? String(err);
}

export function createMemoryStore(opts: MemoryStoreOptions): MemoryStore {
  const fs = opts.fs ?? nodeFs;
  const staleMs = Math.max(2000, opts.staleMs ?? DEFAULT_STALE_MS);
  const retainChars = Math.max(0, Math.floor(opts.budgetTokens * CHARS_PER_TOKEN));
  const sessions = new Set<Session>();
  const reported = new Set<string>();
  /** parsed ledger tails, reused while the ledger's bytes are unchanged (see scanTail) */
  const tails = new Map<string, TailCache>();

  class Session implements MemorySession {
    private done = false;
    constructor(
      readonly context: string | null,
      private readonly mode: MemoryMode,
      private readonly loc: MemoryLocation,
      private readonly prov: MemoryProvenance,
      private readonly lock: HeldLock | null,
      private readonly state: State | null,
    ) {}

    async complete(replyText: string): Promise<string> {
      const { visible, blocks } = extractBlocks(replyText);
      if (this.done) return visible;
      this.done = true;
      try {
        if (this.mode === "continue" && this.state !== null) await applyReply(this.loc, this.prov, this.state, this.lock, blocks);
      } catch (err) {
        warnAt(this.loc, this.prov, err instanceof Refused ? err.message : `memory not updated: ${code(err)}`);
      } finally {
        await this.finish();
      }
      return visible;
    }

    async release(): Promise<void> {
      if (this.done) return;
      this.done = true;
      await this.finish();
    }

    private async finish() {
      sessions.delete(this);
      await this.lock?.release();
    }
  }

  interface State {
    parsed: ParsedDigest;
    hash: string;
    meta: Meta | null;
    ledgerSize: number;
    seq: number;
    /** the memory directory's real path when the call opened it; every commit checks it again */
    realDir: string | null;
  }

  /** digest.md as a commit last read it: the open file (null: there was none) and the hash of its content. */
  interface Watch {
    handle: ReadHandle | null;
    hash: string;
  }

  const paths = (loc: MemoryLocation) => ({
    digest: path.join(loc.dir, "digest.md"),
    ledger: path.join(loc.dir, "ledger.jsonl"),
    meta: path.join(loc.dir, "meta.json"),
  });

  function label(loc: MemoryLocation) {
    return `memory ${loc.scope}:${JSON.stringify(loc.key)}`;
  }

  function warnAt(loc: MemoryLocation, prov: MemoryProvenance | null, message: string) {
    const where = prov ? `${(opts.showPath ?? String)(prov.site.path)}:${prov.site.span.line}: ` : "";
    opts.warn(`${where}${label(loc)}: ${message}`);
  }

  function provenance(p: MemoryProvenance): Provenance {
    return { program: p.site.path, line: p.site.span.line, agent: p.agentName, model: p.model, mode: p.mode };
  }

  /**
   * digest.md parsed, and the hash the ledger records for it. A file over the size cap, or something
   * that is not a regular file (a link, a directory, a FIFO that would block), is unusable and never
   * read; its stand-in hash names what was found, so a later change still shows as an edit. One open
   * both classifies the file and reads it. With `watch`, a usable file is kept open for the commit.
   */
  async function readDigest(loc: MemoryLocation, watch = false): Promise<{ parsed: ParsedDigest; hash: string; watch: Watch | null }> {
    const unusable = (reason: string) => ({ parsed: unusableDigest(reason), hash: sha256(reason), watch: null });
    let h: ReadHandle | null;
    try {
      h = await fs.openRead(paths(loc).digest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === NOT_REGULAR) return unusable((err as Error).message);
      throw err;
    }
    if (h === null) return { parsed: parseDigest(null), hash: EMPTY_HASH, watch: { handle: null, hash: EMPTY_HASH } };
    let kept = false;
    try {
      if (h.size > MAX_DIGEST_FILE_BYTES) return unusable(`digest.md is ${h.size} bytes, over the ${MAX_DIGEST_FILE_BYTES}-byte cap`);
      const raw = await h.read(0, h.size);
      const hash = sha256(raw);
      kept = watch;
      return { parsed: parseDigest(raw), hash, watch: watch ? { handle: h, hash } : null };
    } finally {
      if (!kept) await h.close();
    }
  }

  async function readMeta(loc: MemoryLocation): Promise<Meta | null> {
    let raw: Buffer | null;
    try {
      raw = await fs.readFile(paths(loc).meta);
    } catch (err) {
      // derived, so never a reason to refuse a call: a directory or FIFO in its place is ignored like bad JSON
      warnOnce(loc, "meta", `meta.json cannot be read (${code(err)}); it is ignored and rebuilt on the next update`);
      return null;
    }
    if (raw === null) return null;
    try {
      const m = JSON.parse(raw.toString("utf8")) as Meta;
      // the numbers feed new sequence numbers and the writers' generation check: whole and finite, or ignored
      const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
      if (typeof m !== "object" || m === null || !count(m.generation) || !count(m.last_seq) || typeof m.digest_sha256 !== "string") throw new Error("shape");
      return m;
    } catch {
      warnOnce(loc, "meta", "meta.json is not valid; it is rebuilt on the next update");
      return null;
    }
  }

  function warnOnce(loc: MemoryLocation, what: string, message: string) {
    const id = `${loc.dir}\0${what}`;
    if (reported.has(id)) return;
    reported.add(id);
    warnAt(loc, null, message);
  }

  /** Read everything a call needs; in `continue`, first repair what a crash or a hand edit left behind. */
  async function load(loc: MemoryLocation, prov: MemoryProvenance, writing: boolean, realDir: string | null): Promise<{ state: State; retains: string[] }> {
    const p = paths(loc);
    if (writing) {
      // the lock is ours now: the directory checked at open must still be the one we locked
      await checkDir(loc, realDir);
      await removeOrphans(loc);
    }
    let { parsed, hash } = await readDigest(loc);
    const meta = await readMeta(loc);
    let scan = await scanTail(fs, p.ledger, retainChars, MAX_SCAN_BYTES, tails);
    if (writing && scan.tornBytes > 0) {
      const whole = await wholeTail(fs, p.ledger, scan.size, scan.tornBytes);
      if (whole !== null && whole.seq > (scan.last?.seq ?? 0)) {
        // a whole entry missing only its line break: keep it (below, a torn fragment is cut off instead)
        await fs.append(p.ledger, Buffer.from("\n"));
        scan = await scanTail(fs, p.ledger, retainChars, MAX_SCAN_BYTES, tails);
        warnAt(loc, prov, `repaired ledger.jsonl: added the missing line break after entry ${whole.seq}`);
      }
    }
    for (const off of scan.badLines) {
      warnOnce(loc, `bad@${off}`, `ledger.jsonl has an unreadable or out-of-sequence line at byte ${off}; it is kept as is and skipped`);
    }
    if (parsed.unusable) warnOnce(loc, `unusable:${hash}`, `${parsed.unusable}; the digest is not injected and cannot be replaced by a patch until it is fixed by hand`);
    for (const note of parsed.notes) warnOnce(loc, `note:${hash}:${note}`, note);
    // The ledger numbers itself: one more than its last readable entry. meta.json's count only stands in
    // when the ledger has lines but none readable near its end; an empty (or deleted) ledger starts at 1.
    const seq = scan.last?.seq ?? (scan.size > 0 ? (meta?.last_seq ?? 0) : 0);
    const state: State = { parsed, hash, meta, ledgerSize: scan.size, seq, realDir };
    if (!writing) return { state, retains: scan.retains };

    const prv = provenance(prov);
    if (scan.tornBytes > 0) {
      // an append cut short by a crash: keep every complete line and put a repair entry where the
      // fragment was, in one step that either completes or leaves the fragment as it is (disk full)
      const at = scan.size - scan.tornBytes;
      const e = entry(state, "repair", { reason: `removed ${scan.tornBytes} bytes of an incomplete last line (interrupted write)`, provenance: prv });
      const line = serializeEntry(e);
      try {
        await fs.replaceTail(p.ledger, at, line);
      } catch (err) {
        throw new Refused(`could not repair the incomplete last line of ledger.jsonl (${code(err)}); memory unchanged`);
      }
      state.ledgerSize = at + line.length;
      state.seq = e.seq;
      warnAt(loc, prov, `repaired ledger.jsonl: removed an incomplete last line (${scan.tornBytes} bytes)`);
    }
    const last = scan.last;
    const known = last?.digest_after ?? meta?.digest_sha256 ?? EMPTY_HASH;
    if (hash !== known) {
      // meta.json is written after digest.md: when it already records this entry's result, the update
      // finished and digest.md was changed since (a person restoring the old digest), not left half-done
      const finished = meta !== null && meta.last_seq >= (last?.seq ?? 0) && meta.digest_sha256 === last?.digest_after;
      const content = !finished && last?.kind === "patch" && last.digest_before === hash ? await rollForward(parsed, last) : null;
      if (content !== null && last !== null) {
        // the ledger has the patch but the crash came before digest.md was replaced: finish it, under
        // the same rules as any patch (a checked directory, never through a link)
        await checkDir(loc, state.realDir);
        await fs.writeAtomic(p.digest, content, true);
        parsed = parseDigest(Buffer.from(content, "utf8"));
        hash = last.digest_after;
        Object.assign(state, { parsed, hash });
        await append(loc, state, entry(state, "repair", { reason: `completed the interrupted update of entry ${last.seq}`, provenance: prv }));
        warnAt(loc, prov, `completed an interrupted memory update (ledger entry ${last.seq})`);
      } else {
        await recordExternalEdit(loc, state, prv, known);
      }
    }
    return { state, retains: scan.retains };
  }

  /**
   * The digest.md an interrupted patch entry would have written, or null when it must not be written:
   * the current digest is unusable (a link, a FIFO, too large: nothing the model saw), or the entry's
   * digest would be refused as a patch today (limits, front matter, a secret), or it does not hash to
   * what the entry says.
   */
  async function rollForward(parsed: ParsedDigest, last: LedgerEntry): Promise<string | null> {
    if (parsed.unusable || typeof last.digest !== "string") return null;
    const verdict = parsePatch(JSON.stringify({ digest: last.digest }), true, parsed.settings.digestLimit);
    if (!verdict.ok) return null;
    const content = digestFile(parsed, last.digest);
    if (sha256(content) !== last.digest_after) return null;
    if ((await scanSecrets(last.digest, [])).length > 0) return null;
    return content;
  }

  /** Temporary files of writers killed mid-write; only this store's own names, under the lock. */
  async function removeOrphans(loc: MemoryLocation) {
    for (const name of await fs.list(loc.dir)) {
      if (isOrphanName(name)) await fs.remove(path.join(loc.dir, name));
    }
  }

  /** The directory must still be the one the call opened, inside its root: checked before every commit. */
  async function checkDir(loc: MemoryLocation, expected: string | null) {
    let real: string | null;
    try {
      real = await verifyContainment(loc);
    } catch (err) {
      throw new Refused(`${err instanceof BindingError ? err.message : code(err)}; patch not applied`);
    }
    if (real === null) throw new Refused("the memory directory was removed during the call; patch not applied");
    if (real !== expected) throw new Refused(`the memory directory now resolves to ${real}, not ${expected} (moved or replaced during the call); patch not applied`);
  }

  async function recordExternalEdit(loc: MemoryLocation, state: State, prv: Provenance, before: string, why = "digest.md was changed outside the runtime") {
    const { parsed } = state;
    let digest: string | undefined = parsed.body;
    let reason = why;
    if (parsed.unusable) {
      digest = undefined;
      reason += ` (content not recorded: ${parsed.unusable})`;
    } else {
      const found = await scanSecrets(parsed.body, []);
      if (found.length > 0) {
        digest = undefined;
        reason += ` (content not recorded: ${describeFindings(found)})`;
        warnAt(loc, null, `digest.md appears to contain a secret (${describeFindings(found)}); it is still injected because a person wrote it`);
      }
    }
    const e = entry(state, "external_edit", { reason, provenance: prv, digest_before: before });
    if (digest !== undefined) e.digest = digest;
    await append(loc, state, e);
  }

  function entry(state: State, kind: LedgerEntry["kind"], extra: Partial<LedgerEntry>): LedgerEntry {
    if (state.seq >= MAX_SEQ) throw new Refused(`ledger.jsonl's last entry has sequence number ${state.seq}, the highest there is; memory unchanged`);
    return {
      v: LEDGER_VERSION,
      ts: new Date().toISOString(),
      seq: state.seq + 1,
      kind,
      retain: [],
      digest_before: state.hash,
      digest_after: state.hash,
      provenance: null,
      ...extra,
    };
  }

  /** Append one entry as one write + fsync. A failed append is cut back to the previous size. */
  async function append(loc: MemoryLocation, state: State, e: LedgerEntry): Promise<void> {
    const line = serializeEntry(e);
    const file = paths(loc).ledger;
    try {
      await fs.append(file, line);
    } catch (err) {
      try {
        const size = await fs.size(file);
        if (size !== null && size > state.ledgerSize) await fs.truncate(file, state.ledgerSize);
      } catch {
        // the torn tail is repaired under the lock on the next call
      }
      throw new Refused(`could not append to ledger.jsonl (${code(err)}); memory unchanged`);
    }
    state.ledgerSize += line.length;
    state.seq = e.seq;
  }

  async function guard(loc: MemoryLocation, lock: HeldLock | null, state: State) {
    const lost = lock?.compromised();
    if (lost) throw new Refused(`the memory lock was lost during the call (${lost}); patch not applied`);
    await checkDir(loc, state.realDir);
    const meta = await readMeta(loc);
    const ledgerSize = await fs.size(paths(loc).ledger);
    if ((meta?.generation ?? 0) !== (state.meta?.generation ?? 0)) {
      throw new Refused(`another writer updated this memory during the call (generation ${meta?.generation ?? 0}, expected ${state.meta?.generation ?? 0}); patch not applied`);
    }
    if ((ledgerSize ?? 0) !== state.ledgerSize) throw new Refused("ledger.jsonl changed during the call (another writer?); patch not applied");
  }

  async function writeMeta(loc: MemoryLocation, state: State, mode: MemoryMode) {
    const now = new Date().toISOString();
    const meta: Meta = {
      schema: SCHEMA_VERSION,
      key: loc.key,
      scope: loc.scope,
      created_at: state.meta?.created_at ?? now,
      last_used_at: now,
      last_mode: mode,
      digest_sha256: state.hash,
      generation: (state.meta?.generation ?? 0) + 1,
      last_seq: state.seq,
    };
    try {
      // meta.json is derived (the ledger and digest.md are authoritative), so no fsync
      await fs.writeAtomic(paths(loc).meta, JSON.stringify(meta, null, 2) + "\n", false);
      state.meta = meta;
    } catch (err) {
      warnAt(loc, null, `meta.json not updated (${code(err)}); digest and ledger are complete and it is rebuilt on the next call`);
    }
  }

  async function reject(loc: MemoryLocation, prov: MemoryProvenance, state: State, lock: HeldLock | null, reason: string) {
    warnAt(loc, prov, `patch rejected, memory unchanged: ${reason}`);
    await guard(loc, lock, state);
    await append(loc, state, entry(state, "rejected", { reason, provenance: provenance(prov) }));
    await writeMeta(loc, state, prov.mode);
  }

  /**
   * Read digest.md again just before committing. When it changed since the call loaded it, the edit is
   * recorded (an external_edit entry) and `edited` is true; otherwise `watch` holds the file open so the
   * commit can tell whether anyone saves into it from now on.
   */
  async function reread(loc: MemoryLocation, prov: MemoryProvenance, state: State, lock: HeldLock | null): Promise<{ edited: boolean; watch: Watch | null }> {
    await guard(loc, lock, state);
    const { parsed, hash, watch } = await readDigest(loc, true);
    if (hash === state.hash) return { edited: false, watch };
    await watch?.handle?.close();
    const before = state.hash;
    state.parsed = parsed;
    state.hash = hash;
    await recordExternalEdit(loc, state, provenance(prov), before);
    warnAt(loc, prov, "digest.md was edited during the call; the edit is recorded in the ledger and kept");
    return { edited: true, watch: null };
  }

  /** Whether digest.md is no longer the file, with the content, that `watch` holds. */
  async function savedSince(loc: MemoryLocation, watch: Watch): Promise<boolean> {
    const ino = await fs.identity(paths(loc).digest);
    if (watch.handle === null) return ino !== null;
    if (ino !== watch.handle.ino) return true;
    return sha256(await watch.handle.readNow(MAX_DIGEST_FILE_BYTES + 1)) !== watch.hash;
  }

  /**
   * After the new digest was renamed into place: a person who saved into the old file in place (an
   * editor writing through the handle it had open) after the last check wrote into a file that is no
   * longer digest.md. Their save wins: it is put back as digest.md and recorded as an external_edit.
   * True when such a save was found.
   */
  async function keepLateSave(loc: MemoryLocation, prov: MemoryProvenance, state: State, watch: Watch, ours: { ino: number; seq: number }): Promise<boolean> {
    if (watch.handle === null) return false;
    const raw = await watch.handle.readNow(MAX_DIGEST_FILE_BYTES + 1);
    const hash = sha256(raw);
    if (hash === watch.hash) return false;
    watch.hash = hash;
    const file = paths(loc).digest;
    let note = "";
    try {
      ours.ino = await fs.writeAtomic(file, raw, true, async () => {
        if ((await fs.identity(file)) !== ours.ino) throw new SavedDuringCommit();
      });
    } catch (err) {
      // digest.md was replaced yet again: that newer file stays, and the next call records it
      note = err instanceof SavedDuringCommit ? "; digest.md was replaced again since, and that file is kept" : `; it could not be put back (${code(err)})`;
    }
    const before = state.hash;
    state.parsed = parseDigest(raw);
    state.hash = hash;
    await recordExternalEdit(loc, state, provenance(prov), before, `digest.md was saved by hand while entry ${ours.seq} was committed; the save replaces that entry's digest${note}`);
    warnAt(loc, prov, `digest.md was saved by hand while the memory update was committed; the save is kept and recorded in the ledger (entry ${state.seq})`);
    return true;
  }

  async function applyReply(loc: MemoryLocation, prov: MemoryProvenance, state: State, lock: HeldLock | null, blocks: { body: string; closed: boolean }[]) {
    if (blocks.length === 0) {
      await guard(loc, lock, state);
      await writeMeta(loc, state, prov.mode);
      return;
    }
    if (blocks.length > 1) {
      return reject(loc, prov, state, lock, `${blocks.length} vvm-memory blocks in one reply; exactly one is accepted, so none was applied`);
    }
    const verdict = parsePatch(blocks[0].body, blocks[0].closed, state.parsed.settings.digestLimit);
    if (!verdict.ok) return reject(loc, prov, state, lock, verdict.reason);
    const patch = verdict.patch;
    const found = await scanSecrets(patch.digest, patch.retain);
    if (found.length > 0) return reject(loc, prov, state, lock, `likely secret found: ${describeFindings(found)}`);
    // A save that lands between the last check and the rename sends the commit round again; the second
    // round sees the save as an edit and keeps it. The bound only matters against a flood of saves.
    for (let round = 0; ; round++) {
      const { edited, watch } = await reread(loc, prov, state, lock);
      try {
        if (await commit(loc, prov, state, lock, patch, edited || round >= 3, watch)) return;
      } finally {
        await watch?.handle?.close();
      }
    }
  }

  /** Apply a valid patch; false when a person saved digest.md during the commit (nothing was applied). */
  async function commit(loc: MemoryLocation, prov: MemoryProvenance, state: State, lock: HeldLock | null, patch: Patch, edited: boolean, watch: Watch | null): Promise<boolean> {
    const notes: string[] = [];
    // people edit digest.md even while a call runs: record that edit, and keep it rather than
    // overwrite it with a digest written by a model that never saw it
    let newDigest = patch.digest !== undefined && patch.digest !== state.parsed.body ? patch.digest : undefined;
    if (newDigest !== undefined && edited) {
      notes.push("digest rewrite refused: digest.md was edited by hand during the call");
      newDigest = undefined;
    }
    if (newDigest !== undefined && state.parsed.settings.readOnly) {
      notes.push("digest rewrite refused: digest.md is read_only (front matter)");
      newDigest = undefined;
    }
    if (newDigest !== undefined && state.parsed.unusable) {
      notes.push(`digest rewrite refused: ${state.parsed.unusable}`);
      newDigest = undefined;
    }
    if (newDigest === undefined && patch.retain.length === 0) {
      if (notes.length > 0) await reject(loc, prov, state, lock, notes.join("; "));
      else await writeMeta(loc, state, prov.mode);
      return true;
    }
    if (notes.length > 0) warnAt(loc, prov, notes.join("; ") + " (retain items kept)");

    const content = newDigest !== undefined ? digestFile(state.parsed, newDigest) : null;
    const after = content !== null ? sha256(content) : state.hash;
    const e = entry(state, "patch", { retain: patch.retain, provenance: provenance(prov), digest_after: after });
    if (newDigest !== undefined) e.digest = newDigest;
    if (notes.length > 0) e.reason = notes.join("; ");

    // guard() ran inside reread; only the lock flag can have changed since (no I/O in between
    // except that function's own append)
    const lost = lock?.compromised();
    if (lost) throw new Refused(`the memory lock was lost during the call (${lost}); patch not applied`);
    const sizeBefore = state.ledgerSize;
    await append(loc, state, e);
    if (content === null || watch === null) {
      await writeMeta(loc, state, prov.mode);
      return true;
    }
    const ours = { ino: 0, seq: e.seq };
    const lostNow = lock?.compromised();
    if (lostNow) throw new Refused(`the memory lock was lost before digest.md was written (${lostNow}); ledger entry ${e.seq} is completed by the next call`);
    try {
      ours.ino = await fs.writeAtomic(paths(loc).digest, content, true, async () => {
        await checkDir(loc, state.realDir);
        if (await savedSince(loc, watch)) throw new SavedDuringCommit();
      });
    } catch (err) {
      // withdraw the entry so ledger and digest agree; if even that fails, the next call rolls forward
      // (or, when a person saved meanwhile, records their save: it no longer matches digest_before)
      try {
        await fs.truncate(paths(loc).ledger, sizeBefore);
        state.ledgerSize = sizeBefore;
        state.seq = e.seq - 1;
      } catch {
        throw new Refused(`could not write digest.md (${code(err)}); ledger entry ${e.seq} is completed by the next call`);
      }
      if (err instanceof SavedDuringCommit) return false;
      if (err instanceof Refused) throw err;
      throw new Refused(`could not write digest.md (${code(err)}); memory unchanged`);
    }
    state.hash = after;
    state.parsed = parseDigest(Buffer.from(content, "utf8"));
    await keepLateSave(loc, prov, state, watch, ours);
    await writeMeta(loc, state, prov.mode);
    // once more after the meta write: an editor's write can trail its open by a moment
    if (await keepLateSave(loc, prov, state, watch, ours)) await writeMeta(loc, state, prov.mode);
    return true;
  }

  function buildContext(loc: MemoryLocation, state: State, retainsNewestFirst: string[], mode: MemoryMode): string {
    const { parsed } = state;
    const limit = parsed.settings.digestLimit;
    const out: string[] = [`<memory scope="${loc.scope}" key=${JSON.stringify(loc.key)}>`, "## Digest"];
    if (parsed.unusable) out.push(`(not shown: ${parsed.unusable})`);
    else out.push(parsed.body.trim() === "" ? "(empty)" : parsed.body.replace(/\s+$/, ""));
    if (retainsNewestFirst.length > 0) {
      out.push("", "## Retained facts (oldest first)");
      for (let i = retainsNewestFirst.length - 1; i >= 0; i--) out.push(`- ${retainsNewestFirst[i].replace(/\s*\n\s*/g, " ")}`);
    }
    out.push(
      "",
      "## Memory Update Protocol",
      "This memory persists between calls. To change it, end your reply with exactly one fenced block:",
      "```vvm-memory",
      `{"digest": "<the complete new digest; it replaces the current one>", "retain": ["<a short, self-contained fact worth recalling later>"]}`,
      "```",
      `Both keys are optional; leave the block out when nothing should change. Limits: digest ${limit} characters; at most ${MAX_RETAIN_ITEMS} retain items of ${MAX_RETAIN_CHARS} characters. Never store secrets (keys, tokens, passwords): a patch containing one is rejected whole. The block is removed from your reply; patches are ignored in dry_run calls.`,
    );
    if (mode === "dry_run") out.push("This call is read-only (dry_run): any vvm-memory block is ignored and nothing is saved.");
    else if (parsed.settings.readOnly) out.push("The digest is read-only: a new digest is refused; retain items are still saved.");
    else if (parsed.unusable) out.push("The digest cannot be replaced until a person fixes digest.md; retain items are still saved.");
    out.push("</memory>");
    return out.join("\n");
  }

  const fresh = (): MemorySession => ({
    context: null,
    complete: async (reply) => extractBlocks(reply).visible,
    release: async () => {},
  });

  return {
    async open(memory: Value, prov: MemoryProvenance, signal: AbortSignal): Promise<MemorySession | VObject> {
      const { mode } = prov;
      let loc: MemoryLocation;
      try {
        loc = resolveBinding(memory, opts.entryDir, opts.homeDir);
      } catch (err) {
        if (err instanceof BindingError) return makeError("rejected", `invalid memory binding on agent ${prov.agentName}: ${err.message}`);
        throw err;
      }
      if (mode === "fresh") return fresh();
      const writing = mode === "continue";
      let realDir: string | null;
      try {
        // mkdir -p succeeds on an existing symlink, so containment is checked once the path exists
        if (writing) await fs.mkdirp(loc.dir);
        else if ((await fs.size(loc.dir)) === null) {
          // dry_run on a memory that does not exist yet: nothing to read, nothing to lock
          const state: State = { parsed: parseDigest(null), hash: EMPTY_HASH, meta: null, ledgerSize: 0, seq: 0, realDir: null };
          return new Session(buildContext(loc, state, [], mode), mode, loc, prov, null, null);
        }
        realDir = await verifyContainment(loc);
      } catch (err) {
        if (err instanceof BindingError) return makeError("rejected", `${label(loc)}: ${err.message}`);
        return makeError("rejected", `${label(loc)}: cannot use ${loc.dir} (${code(err)})`);
      }
      const got = await acquire(loc.dir, opts.lockTimeoutMs, staleMs, signal);
      if (!got.ok) {
        switch (got.reason) {
          case "timeout":
            return makeError("locked", `${label(loc)} is in use by another call or process; gave up after waiting ${opts.lockTimeoutMs} ms (--lock-timeout)`);
          case "aborted":
            return makeError("locked", `${label(loc)}: interrupted while waiting for its lock`);
          case "error":
            return makeError("rejected", `${label(loc)}: cannot lock ${loc.dir} (${code(got.error)})`);
          default: {
            const never: never = got;
            return never;
          }
        }
      }
      try {
        const { state, retains } = await load(loc, prov, writing, realDir);
        const session = new Session(buildContext(loc, state, retains, mode), mode, loc, prov, got.lock, state);
        sessions.add(session);
        return session;
      } catch (err) {
        await got.lock.release();
        if (err instanceof Refused) return makeError("rejected", `${label(loc)}: ${err.message}`);
        return makeError("rejected", `${label(loc)}: cannot load memory (${code(err)})`);
      }
    },
    async close() {
      for (const s of [...sessions]) await s.release();
    },
  };
}

function describeFindings(found: Finding[]): string {
  const parts = found.map((f) => `${f.ruleId.replace("@secretlint/secretlint-rule-", "")}/${f.messageId} in ${f.field} line ${f.line}`);
  return [...new Set(parts)].join(", ");
}
