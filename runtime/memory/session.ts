// One call's hold on a memory: the transaction. Under the lock the store took, a session recovers what a
// crash or a hand edit left (continue only), builds the Memory Context, and after the reply guards,
// applies or rejects the patch, and releases the lock. spec/memory.md §3–§7 describe the behaviour.
import { syncFacts, type FactIndex, type SyncOptions } from "./fact-index.ts";
import { factLine } from "./recall.ts";
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { MemoryMode, MemoryReport, MemoryProvenance, MemorySession } from "../memory-port.ts";
import { isOrphanName, NOT_REGULAR, type MemoryFs, type ReadHandle } from "./fsio.ts";
import { currentRealDir, sha256, type MemoryLocation } from "./keys.ts";
import { describeBadLines, ForwardLines, LEDGER_VERSION, MAX_ENTRY_BYTES, MAX_SEQ, scanTail, serializeEntry, wholeTail, type FactRef, type LedgerEntry, type Provenance, type TailCache, type ToolProvenance } from "./ledger.ts";
import type { HeldLock } from "./lock.ts";
import { digestFile, extractBlocks, MAX_DIGEST_FILE_BYTES, parseDigest, parsePatch, type ParsedDigest, type Patch } from "./patch.ts";
import { memoryContext } from "./prompt.ts";
import { scanSecrets, type Finding } from "./secrets.ts";
import { digestState, EMPTY_HASH, KEEP_REPLACED_MS, MAX_SCAN_BYTES, parseMeta, readDigestFile, recalledFacts, REPLACED, type Meta } from "./state.ts";

const SCHEMA_VERSION = 1;

const replacedName = (hash: string) => `digest.md.${hash.slice(0, 16)}.${randomBytes(4).toString("hex")}.prev`;
/** The most replaced files kept at once: a burst of commits must not make every call read hundreds. */
const MAX_REPLACED = 4;

/** A replaced file's name and when its content last changed. */
interface Replaced {
  name: string;
  mtimeMs: number;
  /** inode, size and modification time: the same again means not written since (see settleReplaced) */
  seen: string;
}

/** What the sessions of one store share. */
export interface StoreShared {
  fs: MemoryFs;
  /** character budget for retained facts in the Memory Context */
  retainChars: number;
  /** parsed ledger tails, reused while the ledger's bytes are unchanged (see scanTail) */
  tails: Map<string, TailCache>;
  /** recall indexes, by recall.jsonl path (see syncFacts) */
  facts: Map<string, FactIndex>;
  /** what recall.jsonl is signed with (index-key.ts), made when `create` and there is none; null: none to be had */
  indexKey: (create: boolean) => Buffer | null;
  /** by memory directory: the replaced digests found unchanged, with what identified them then (see settleReplaced) */
  replacedChecked: Map<string, Map<string, string>>;
  /** open sessions, released when the store closes */
  sessions: Set<Session>;
  /** a warning about this memory, prefixed with the call's program and line when known */
  warn(loc: MemoryLocation, prov: MemoryProvenance | null, message: string): void;
  /** the same warning at most once per store */
  warnOnce(loc: MemoryLocation, what: string, message: string): void;
}

/** A write that must not happen; the message says why and that memory is unchanged. */
export class Refused extends Error {}

/** digest.md changed after the commit re-read it and before the new digest was renamed into place. */
class SavedDuringCommit extends Error {}

/** Why a restore is refused over an unusable digest.md (`why`: what makes it unusable). */
export const unusableRefusal = (why: string) => `${why}; its content is in no ledger entry, so it is never replaced: fix or move it by hand first; memory unchanged`;

/** The rename was abandoned for a reason that leaves the ledger as it is (`reason` is what to report). */
class Abandoned extends Error {
  constructor(readonly reason: unknown) {
    super("abandoned");
  }
}

/** How a valid patch is recorded: an agent's patch, or `vvm memory restore` putting an earlier digest back. */
type Change = { kind: "patch" } | { kind: "restore"; restoredFrom: number; force: boolean };

/** What became of a change: whether its digest was put in place, the entry that records it (null: none), and notes on refused parts. */
export interface Outcome {
  applied: boolean;
  seq: number | null;
  notes: string[];
}

/** digest.md as a commit last read it: the open file (null: there was none) and the hash of its content. */
interface Watch {
  handle: ReadHandle | null;
  hash: string;
}

/** An error's code and, when it has one, the memory file it concerns (never a whole path). */
export function code(err: unknown): string {
  const e = err as NodeJS.ErrnoException | null;
  if (e?.code === NOT_REGULAR) return e.message;
  if (e?.code && e.path) return `${e.code}, ${path.basename(e.path)}`;
  return e?.code ?? e?.message ?? String(err);
}

export class Session implements MemorySession {
  context: string | null = null;
  private done = false;
  // what the call loaded, kept current by every write it makes
  private parsed: ParsedDigest = parseDigest(null);
  private hash = EMPTY_HASH;
  private meta: Meta | null = null;
  private ledgerSize = 0;
  private seq = 0;
  private readonly fs: MemoryFs;
  /** old replaced digests being removed (settleReplaced) */
  private readonly removals: Promise<void>[] = [];
  private readonly files: { digest: string; ledger: string; meta: string; recall: string };
  /** the facts the Memory Context shows, as `seq:index` (memory_search leaves them out) */
  private shown = new Set<string>();
  readonly report: MemoryReport;
  /** the entries opening the memory wrote (its recovery: a repair, a hand edit of digest.md recorded) */
  readonly recovered: { seq: number; kind: "repair" | "external_edit" }[] = [];

  /**
   * A session on a memory; `lock` is held (null only for a dry_run on a memory that does not exist yet)
   * and `realDir` is the directory's real path when the store checked it. `actor` is the agent's call, or
   * the `vvm memory` command (a tool) that holds the memory: a tool's session writes as a `continue` call
   * does, with the command as the provenance of every entry it writes (maintain.ts).
   */
  constructor(
    readonly shared: StoreShared,
    readonly loc: MemoryLocation,
    private readonly actor: MemoryProvenance | ToolProvenance,
    private readonly lock: HeldLock | null,
    private readonly realDir: string | null,
    /** the call's task and input, for relevance recall */
    private readonly query: string,
  ) {
    this.fs = shared.fs;
    this.files = {
      digest: path.join(loc.dir, "digest.md"),
      ledger: path.join(loc.dir, "ledger.jsonl"),
      meta: path.join(loc.dir, "meta.json"),
      recall: path.join(loc.dir, "recall.jsonl"),
    };
    this.report = { scope: loc.scope, key: loc.key, mode: this.mode, lock_wait_ms: 0, facts_shown: 0, facts_hidden: 0, context_chars: 0, result: "none", seq: null, reason: null };
  }

  private get mode(): MemoryMode {
    return "tool" in this.actor ? "continue" : this.actor.mode;
  }

  /** The call's provenance, null for a tool (warnings then carry no program and line). */
  private get call(): MemoryProvenance | null {
    return "tool" in this.actor ? null : this.actor;
  }

  /** Read everything the call needs and build the Memory Context; in `continue`, first repair what a crash or a hand edit left behind. */
  async load(): Promise<void> {
    if (this.lock === null) {
      this.context = memoryContext(this.loc, this.parsed, { shown: [], hidden: 0 }, this.mode);
      return;
    }
    const writing = this.mode === "continue";
    const { fs, files } = this;
    let replaced: Replaced[] = [];
    if (writing) {
      // the lock is ours now: the directory checked at open must still be the one we locked
      await this.checkDir();
      const names = await fs.list(this.loc.dir);
      await this.removeOrphans(names);
      replaced = await this.replacedFiles(names);
    }
    const digest = await this.readDigest();
    this.parsed = digest.parsed;
    this.hash = digest.hash;
    this.meta = await this.readMeta();
    let scan = await scanTail(fs, files.ledger, MAX_SCAN_BYTES, this.shared.tails);
    if (writing && scan.tornBytes > 0) {
      const whole = await wholeTail(fs, files.ledger, scan.size, scan.tornBytes);
      if (whole !== null && whole.seq > (scan.last?.seq ?? 0)) {
        // a whole entry missing only its line break: keep it (below, a torn fragment is cut off instead)
        await fs.append(files.ledger, Buffer.from("\n"));
        scan = await scanTail(fs, files.ledger, MAX_SCAN_BYTES, this.shared.tails);
        this.warn(`repaired ledger.jsonl: added the missing line break after entry ${whole.seq}`);
      }
    }
    if (scan.badLines.length > 0) {
      const n = scan.badLines.length;
      // once per store while the newest stays the newest (the scan lists them newest first): the scan's window
      // moves on as the ledger grows, so the oldest and the count change without any new damage
      this.shared.warnOnce(this.loc, `bad@${scan.badLines[0]}`, `ledger.jsonl has ${describeBadLines(scan.badLines)}; ${n === 1 ? "it is" : "they are"} kept as is and skipped`);
    }
    const { parsed, hash } = this;
    if (parsed.unusable) this.shared.warnOnce(this.loc, `unusable:${hash}`, `${parsed.unusable}; the digest is not injected and cannot be replaced by a patch until it is fixed by hand`);
    for (const note of parsed.notes) this.shared.warnOnce(this.loc, `note:${hash}:${note}`, note);
    // The ledger numbers itself: one more than its last readable entry. meta.json's count only stands in
    // when the ledger has lines but none readable near its end; an empty (or deleted) ledger starts at 1.
    this.seq = scan.last?.seq ?? (scan.size > 0 ? (this.meta?.last_seq ?? 0) : 0);
    this.ledgerSize = scan.size;
    if (writing) {
      await this.recover(scan.size, scan.tornBytes, scan.last);
      await this.settleReplaced(replaced);
    }
    const facts = await recalledFacts({ ...this.recallSync(writing), settings: this.parsed.settings, query: this.query, budgetChars: this.shared.retainChars });
    this.context = memoryContext(this.loc, this.parsed, facts, this.mode);
    this.shown = new Set(facts.shown.map((f) => `${f.seq}:${f.i}`));
    Object.assign(this.report, { facts_shown: facts.shown.length, facts_hidden: facts.hidden, context_chars: this.context.length });
  }

  /** How this session brings the recall index up to date (written to recall.jsonl when `persist`). */
  private recallSync(persist: boolean): SyncOptions {
    return {
      fs: this.fs,
      ledger: this.files.ledger,
      index: this.files.recall,
      ledgerSize: this.ledgerSize,
      cache: this.shared.facts,
      persist,
      key: this.shared.indexKey(persist),
      warn: (m) => this.shared.warnOnce(this.loc, `recall:${m}`, m),
    };
  }

  async complete(replyText: string): Promise<string> {
    const { visible, blocks } = extractBlocks(replyText);
    if (this.done) return visible;
    this.done = true;
    try {
      if (this.mode === "continue" && this.lock !== null) await this.applyReply(blocks);
    } catch (err) {
      const why = err instanceof Refused ? err.message : `memory not updated: ${code(err)}`;
      Object.assign(this.report, { result: "refused", seq: null, reason: why });
      this.warn(why);
    } finally {
      await this.finish();
    }
    return visible;
  }

  async search(query: string): Promise<string[]> {
    // (no lock: a dry_run of a memory that does not exist yet, which holds nothing)
    if (this.lock === null || this.done) return [];
    // the index load() brought up to date, from the shared cache; the ledger has not moved since (the lock is held)
    const { search } = await syncFacts(this.recallSync(false));
    const out: string[] = [];
    for (const k of search.search(query)) {
      const f = search.facts[k];
      if (!search.removed.has(k) && !this.shown.has(`${f.seq}:${f.i}`)) out.push(factLine(f));
    }
    return out;
  }

  async release(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.finish();
  }

  private async finish() {
    this.shared.sessions.delete(this);
    // a replaced digest that failed to go is found and removed again by a later call
    await Promise.all(this.removals);
    await this.lock?.release();
  }

  private warn(message: string) {
    this.shared.warn(this.loc, this.call, message);
  }

  private provenance(): Provenance {
    if ("tool" in this.actor) return { tool: this.actor.tool, user: this.actor.user };
    const p = this.actor;
    return { program: p.site.path, line: p.site.span.line, agent: p.agentName, model: p.model, mode: p.mode };
  }

  /** A torn tail, then a digest.md that differs from what the ledger last produced. */
  private async recover(size: number, tornBytes: number, last: LedgerEntry | null) {
    const { fs, files, meta } = this;
    if (tornBytes > 0) {
      // an append cut short by a crash: keep every complete line and put a repair entry where the
      // fragment was, in one step that either completes or leaves the fragment as it is (disk full)
      const at = size - tornBytes;
      const e = this.entry("repair", { reason: `removed ${tornBytes} bytes of an incomplete last line (interrupted write)`, provenance: this.provenance() });
      const line = serializeEntry(e);
      try {
        await fs.replaceTail(files.ledger, at, line);
      } catch (err) {
        throw new Refused(`could not repair the incomplete last line of ledger.jsonl (${code(err)}); memory unchanged`);
      }
      this.ledgerSize = at + line.length;
      this.seq = e.seq;
      this.recovered.push({ seq: e.seq, kind: "repair" });
      this.warn(`repaired ledger.jsonl: removed an incomplete last line (${tornBytes} bytes)`);
    }
    const state = digestState(this.hash, last, meta);
    if (state.kind === "clean") return;
    const content = state.kind === "interrupted" && last !== null ? await this.rollForward(last) : null;
    if (content === null || last === null) {
      await this.recordExternalEdit(state.known);
      this.recovered.push({ seq: this.seq, kind: "external_edit" });
      return;
    }
    // the ledger has the patch but the crash came before digest.md was replaced: finish it, under
    // the same rules as any patch (a checked directory, never through a link)
    await this.checkDir();
    await this.replaceDigest(content, this.hash);
    this.parsed = parseDigest(Buffer.from(content, "utf8"));
    this.hash = last.digest_after;
    await this.append(this.entry("repair", { reason: `completed the interrupted update of entry ${last.seq}`, provenance: this.provenance() }));
    this.recovered.push({ seq: this.seq, kind: "repair" });
    this.warn(`completed an interrupted memory update (ledger entry ${last.seq})`);
  }

  /**
   * The digest.md an interrupted patch entry would have written, or null when it must not be written:
   * the current digest is unusable (a link, a FIFO, too large: nothing the model saw), or the entry's
   * digest would be refused as a patch today (limits, front matter, a secret), or it does not hash to
   * what the entry says.
   */
  private async rollForward(last: LedgerEntry): Promise<string | null> {
    const { parsed } = this;
    if (parsed.unusable || typeof last.digest !== "string") return null;
    const verdict = parsePatch(JSON.stringify({ digest: last.digest }), true, parsed.settings.digestLimit);
    if (!verdict.ok) return null;
    const content = digestFile(parsed, last.digest);
    if (sha256(content) !== last.digest_after) return null;
    if ((await scanSecrets(last.digest, [])).length > 0) return null;
    return content;
  }

  /** Temporary files of writers killed mid-write; only the store's own names, under the lock. */
  private async removeOrphans(names: string[]) {
    for (const name of names) {
      if (isOrphanName(name)) await this.fs.remove(path.join(this.loc.dir, name));
    }
  }

  /**
   * The files earlier commits replaced (REPLACED). A name that is still digest.md's own second name (a
   * crash came between the link and the rename) is removed at once: digest.md must have one name.
   */
  private async replacedFiles(inDir: string[]): Promise<Replaced[]> {
    const names = inDir.filter((n) => REPLACED.test(n));
    if (names.length === 0) return [];
    const current = (await this.fs.identity(this.files.digest))?.ino;
    const kept: Replaced[] = [];
    for (const name of names) {
      const file = path.join(this.loc.dir, name);
      const id = await this.fs.identity(file);
      if (current !== undefined && id?.ino === current) await this.fs.remove(file);
      else kept.push({ name, mtimeMs: id?.mtimeMs ?? 0, seen: id === null ? "" : `${id.ino}:${id.size}:${id.mtimeMs}` });
    }
    // newest first (settleReplaced keeps only the first MAX_REPLACED for long)
    return kept.sort((a, b) => b.mtimeMs - a.mtimeMs);
  }

  /**
   * A replaced file whose content no longer matches its name was saved into after the commit that
   * replaced it: the save is recorded as an external_edit and becomes digest.md again (a person's save
   * wins, as during a commit). A replaced file is removed once it has not changed for KEEP_REPLACED_MS,
   * so an editor that stalls between opening the file and writing it still finds its save kept; only
   * the MAX_REPLACED newest are kept that long (older ones are checked one last time and removed).
   * A file this store found unchanged is read again only once its inode, size or modification time
   * moved, and always before it is removed: a save that even leaves those as they were is still kept.
   */
  private async settleReplaced(files: Replaced[]) {
    const { dir } = this.loc;
    const checked = this.shared.replacedChecked.get(dir);
    const unchanged = new Map<string, string>();
    for (const [i, { name, mtimeMs, seen }] of files.entries()) {
      const file = path.join(dir, name);
      const age = i < MAX_REPLACED ? Date.now() - mtimeMs : KEEP_REPLACED_MS;
      if (age < KEEP_REPLACED_MS && seen !== "" && checked?.get(name) === seen) {
        unchanged.set(name, seen);
        continue;
      }
      let raw: Buffer | null = null;
      try {
        raw = await this.fs.readFile(file);
      } catch {
        // a link or a FIFO put there: not a file of ours, removed like one
      }
      if (raw !== null && raw.length <= MAX_DIGEST_FILE_BYTES && !sha256(raw).startsWith(REPLACED.exec(name)![1])) {
        const before = this.hash;
        const hash = sha256(raw);
        await this.replaceDigest(raw, before);
        this.parsed = parseDigest(raw);
        this.hash = hash;
        await this.recordExternalEdit(before, "digest.md was saved by hand into the file an earlier commit had just replaced; the save is kept");
        this.warn("digest.md was saved by hand just as an earlier memory update replaced it; the save is kept and recorded in the ledger");
        if (age < KEEP_REPLACED_MS) {
          await this.fs.rename(file, path.join(this.loc.dir, replacedName(hash)));
          continue;
        }
      }
      // removed while the model answers; finish() waits for it before the lock is released
      if (raw === null || age >= KEEP_REPLACED_MS) this.removals.push(this.fs.remove(file).catch(() => {}));
      else if (seen !== "") unchanged.set(name, seen);
    }
    if (unchanged.size > 0) this.shared.replacedChecked.set(dir, unchanged);
    else this.shared.replacedChecked.delete(dir);
  }

  /**
   * Put `content` in place as digest.md (a fresh file renamed over it). The file it replaces, whose
   * content should hash to `currentHash`, keeps a second name (REPLACED). `check` runs right before the
   * second name is given and the rename made, and may throw to abandon both. Resolves to the new
   * file's inode and the replaced file's second name (null when there was no digest.md).
   */
  private async replaceDigest(content: string | Buffer, currentHash: string, check?: () => Promise<void>): Promise<{ ino: number; replaced: string | null }> {
    let replaced: string | null = null;
    try {
      const ino = await this.fs.writeAtomic(this.files.digest, content, async () => {
        await check?.();
        const name = path.join(this.loc.dir, replacedName(currentHash));
        try {
          await this.fs.link(this.files.digest, name);
          replaced = name;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        }
      });
      return { ino, replaced };
    } catch (err) {
      // the rename did not happen: digest.md must not keep a second name
      if (replaced !== null) await this.fs.remove(replaced);
      throw err;
    }
  }

  /** The directory must still be the one the call opened, inside its root: checked before every commit. */
  private async checkDir() {
    let real: string | null;
    try {
      real = currentRealDir(this.loc);
    } catch (err) {
      throw new Refused(`${code(err)}; patch not applied`);
    }
    if (real === null) throw new Refused("the memory directory was removed during the call; patch not applied");
    if (real !== this.realDir) throw new Refused(`the memory directory now resolves to ${real}, not ${this.realDir} (moved or replaced during the call); patch not applied`);
  }

  /**
   * digest.md parsed, and the hash the ledger records for it. A file over the size cap, or something
   * that is not a regular file (a link, a directory, a FIFO that would block), is unusable and never
   * read; its stand-in hash names what was found, so a later change still shows as an edit. One open
   * both classifies the file and reads it. With `watch`, a usable file is kept open for the commit.
   */
  private async readDigest(watch = false): Promise<{ parsed: ParsedDigest; hash: string; watch: Watch | null }> {
    const { parsed, hash, size, handle } = await readDigestFile(this.fs, this.files.digest, watch);
    // no digest.md: a commit watches for one appearing; an unusable one is never replaced
    return { parsed, hash, watch: size === null && !parsed.unusable ? { handle: null, hash } : handle !== null ? { handle, hash } : null };
  }

  private async readMeta(): Promise<Meta | null> {
    let raw: Buffer | null;
    try {
      raw = await this.fs.readFile(this.files.meta);
    } catch (err) {
      // derived, so never a reason to refuse a call: a directory or FIFO in its place is ignored like bad JSON
      this.shared.warnOnce(this.loc, "meta", `meta.json cannot be read (${code(err)}); it is ignored and rebuilt on the next update`);
      return null;
    }
    // empty: created by a writer killed before its first write (a creation is open, then write)
    if (raw === null || raw.length === 0) return null;
    const meta = parseMeta(raw);
    if (meta === null) this.shared.warnOnce(this.loc, "meta", "meta.json is not valid; it is rebuilt on the next update");
    return meta;
  }

  private async recordExternalEdit(before: string, why = "digest.md was changed outside the runtime") {
    const { parsed } = this;
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
        this.shared.warn(this.loc, null, `digest.md appears to contain a secret (${describeFindings(found)}); it is still injected because a person wrote it`);
      }
    }
    const e = this.entry("external_edit", { reason, provenance: this.provenance(), digest_before: before });
    if (digest !== undefined) e.digest = digest;
    await this.append(e);
  }

  private entry(kind: LedgerEntry["kind"], extra: Partial<LedgerEntry>): LedgerEntry {
    if (this.seq >= MAX_SEQ) throw new Refused(`ledger.jsonl's last entry has sequence number ${this.seq}, the highest there is; memory unchanged`);
    return {
      v: LEDGER_VERSION,
      ts: new Date().toISOString(),
      seq: this.seq + 1,
      kind,
      retain: [],
      digest_before: this.hash,
      digest_after: this.hash,
      provenance: null,
      ...extra,
    };
  }

  /** Append one entry as one write + fsync. A failed append is cut back to the previous size. */
  private async append(e: LedgerEntry): Promise<void> {
    const line = serializeEntry(e);
    const file = this.files.ledger;
    try {
      await this.fs.append(file, line);
    } catch (err) {
      try {
        const size = await this.fs.size(file);
        if (size !== null && size > this.ledgerSize) await this.fs.truncate(file, this.ledgerSize);
      } catch {
        // the torn tail is repaired under the lock on the next call
      }
      throw new Refused(`could not append to ledger.jsonl (${code(err)}); memory unchanged`);
    }
    this.ledgerSize += line.length;
    this.seq = e.seq;
  }

  private async guard() {
    const lost = this.lock?.compromised();
    if (lost) throw new Refused(`the memory lock was lost during the call (${lost}); patch not applied`);
    await this.checkDir();
    const meta = await this.readMeta();
    const ledgerSize = await this.fs.size(this.files.ledger);
    if ((meta?.generation ?? 0) !== (this.meta?.generation ?? 0)) {
      throw new Refused(`another writer updated this memory during the call (generation ${meta?.generation ?? 0}, expected ${this.meta?.generation ?? 0}); patch not applied`);
    }
    if ((ledgerSize ?? 0) !== this.ledgerSize) throw new Refused("ledger.jsonl changed during the call (another writer?); patch not applied");
  }

  private async writeMeta() {
    const now = new Date().toISOString();
    const meta: Meta = {
      schema: SCHEMA_VERSION,
      key: this.loc.key,
      scope: this.loc.scope,
      created_at: this.meta?.created_at ?? now,
      // a `vvm memory` command looks after a memory; it does not use it
      last_used_at: this.call === null ? (this.meta?.last_used_at ?? now) : now,
      last_mode: this.call === null ? (this.meta?.last_mode ?? this.mode) : this.mode,
      digest_sha256: this.hash,
      generation: (this.meta?.generation ?? 0) + 1,
      last_seq: this.seq,
    };
    try {
      // meta.json is derived (the ledger and digest.md are authoritative): written in place, no fsync;
      // a torn one is invalid, ignored and rebuilt
      await this.fs.overwrite(this.files.meta, JSON.stringify(meta, null, 2) + "\n");
      this.meta = meta;
    } catch (err) {
      this.shared.warn(this.loc, null, `meta.json not updated (${code(err)}); digest and ledger are complete and it is rebuilt on the next call`);
    }
  }

  private async reject(reason: string, what: Change["kind"] = "patch") {
    this.warn(`${what === "restore" ? "restore refused" : "patch rejected"}, memory unchanged: ${reason}`);
    await this.guard();
    await this.append(this.entry("rejected", { reason, provenance: this.provenance() }));
    Object.assign(this.report, { result: "rejected", seq: this.seq, reason });
    await this.writeMeta();
  }

  /**
   * Read digest.md again just before committing. When it changed since the call loaded it, the edit is
   * recorded (an external_edit entry) and `edited` is true; otherwise `watch` holds the file open so the
   * commit can tell whether anyone saves into it from now on.
   */
  private async reread(): Promise<{ edited: boolean; watch: Watch | null }> {
    await this.guard();
    const { parsed, hash, watch } = await this.readDigest(true);
    if (hash === this.hash) return { edited: false, watch };
    await watch?.handle?.close();
    const before = this.hash;
    this.parsed = parsed;
    this.hash = hash;
    await this.recordExternalEdit(before);
    this.warn("digest.md was edited during the call; the edit is recorded in the ledger and kept");
    return { edited: true, watch: null };
  }

  /** Whether digest.md is no longer the file, with the content, that `watch` holds. */
  private async savedSince(watch: Watch): Promise<boolean> {
    const ino = (await this.fs.identity(this.files.digest))?.ino ?? null;
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
  private async keepLateSave(watch: Watch, ours: { ino: number; seq: number; replaced: string | null }): Promise<boolean> {
    if (watch.handle === null) return false;
    const raw = await watch.handle.readNow(MAX_DIGEST_FILE_BYTES + 1);
    const hash = sha256(raw);
    if (hash === watch.hash) return false;
    watch.hash = hash;
    const file = this.files.digest;
    let note = "";
    try {
      ours.ino = (
        await this.replaceDigest(raw, this.hash, async () => {
          if ((await this.fs.identity(file))?.ino !== ours.ino) throw new SavedDuringCommit();
        })
      ).ino;
    } catch (err) {
      // digest.md was replaced yet again: that newer file stays, and the next call records it
      note = err instanceof SavedDuringCommit ? "; digest.md was replaced again since, and that file is kept" : `; it could not be put back (${code(err)})`;
    }
    const before = this.hash;
    this.parsed = parseDigest(raw);
    this.hash = hash;
    await this.recordExternalEdit(before, `digest.md was saved by hand while entry ${ours.seq} was committed; the save replaces that entry's digest${note}`);
    if (ours.replaced !== null) {
      // recorded now: the replaced file's name follows its content, so the next call does not record it again
      const renamed = path.join(this.loc.dir, replacedName(hash));
      await this.fs.rename(ours.replaced, renamed);
      ours.replaced = renamed;
    }
    this.warn(`digest.md was saved by hand while the memory update was committed; the save is kept and recorded in the ledger (entry ${this.seq})`);
    return true;
  }

  private async applyReply(blocks: { body: string; closed: boolean }[]) {
    if (blocks.length === 0) {
      await this.guard();
      await this.writeMeta();
      this.report.result = "unchanged";
      return;
    }
    if (blocks.length > 1) return this.reject(`${blocks.length} vvm-memory blocks in one reply; exactly one is accepted, so none was applied`);
    const verdict = parsePatch(blocks[0].body, blocks[0].closed, this.parsed.settings.digestLimit);
    if (!verdict.ok) return this.reject(verdict.reason);
    const patch = verdict.patch;
    const found = await scanSecrets(patch.digest, patch.retain);
    if (found.length > 0) return this.reject(`likely secret found: ${describeFindings(found)}`);
    const done = await this.applyPatch(patch, { kind: "patch" });
    // a patch refused whole (its new digest refused, no retain) was recorded by reject()
    if (this.report.result === "rejected") return;
    // an entry without a new digest still kept the patch's retain items
    Object.assign(this.report, { result: done.seq !== null ? "applied" : "unchanged", seq: done.seq, reason: done.notes.length > 0 ? done.notes.join("; ") : null });
  }

  /** Apply a valid, scanned patch (or a restore) with its guards, until it is applied or refused. */
  private async applyPatch(patch: Patch, change: Change): Promise<Outcome> {
    // A save that lands between the last check and the rename sends the commit round again; the second
    // round sees the save as an edit and keeps it. The bound only matters against a flood of saves.
    for (let round = 0; ; round++) {
      const { edited, watch } = await this.reread();
      try {
        const done = await this.commit(patch, edited || round >= 3, watch, change);
        if (done !== null) return done;
      } finally {
        await watch?.handle?.close();
      }
    }
  }

  /** Apply a valid patch; null when a person saved digest.md during the commit (nothing was applied). */
  private async commit(patch: Patch, edited: boolean, watch: Watch | null, change: Change): Promise<Outcome | null> {
    const notes: string[] = [];
    // people edit digest.md even while a call runs: record that edit, and keep it rather than
    // overwrite it with a digest written by a model that never saw it
    let newDigest = patch.digest !== undefined && patch.digest !== this.parsed.body ? patch.digest : undefined;
    if (newDigest !== undefined && edited) {
      notes.push("digest rewrite refused: digest.md was edited by hand during the call");
      newDigest = undefined;
    }
    const forced = change.kind === "restore" && change.force;
    if (newDigest !== undefined && this.parsed.settings.readOnly && !forced) {
      notes.push("digest rewrite refused: digest.md is read_only (front matter)");
      newDigest = undefined;
    }
    if (newDigest !== undefined && this.parsed.unusable) {
      notes.push(`digest rewrite refused: ${this.parsed.unusable}`);
      newDigest = undefined;
    }
    if (newDigest === undefined && patch.retain.length === 0) {
      if (notes.length > 0) await this.reject(notes.join("; "), change.kind);
      else await this.writeMeta();
      return { applied: false, seq: notes.length > 0 ? this.seq : null, notes };
    }
    if (notes.length > 0) this.warn(notes.join("; ") + " (retain items kept)");

    const content = newDigest !== undefined ? digestFile(this.parsed, newDigest) : null;
    const after = content !== null ? sha256(content) : this.hash;
    const e = this.entry(change.kind, { retain: patch.retain, provenance: this.provenance(), digest_after: after });
    if (newDigest !== undefined) e.digest = newDigest;
    if (change.kind === "restore") {
      e.restored_from = change.restoredFrom;
      if (forced && this.parsed.settings.readOnly) notes.push("digest.md is read_only (front matter); restored anyway (--force)");
    }
    if (notes.length > 0) e.reason = notes.join("; ");

    // guard() ran inside reread; only the lock flag can have changed since (no I/O in between
    // except that function's own append)
    const lost = this.lock?.compromised();
    if (lost) throw new Refused(`the memory lock was lost during the call (${lost}); patch not applied`);
    const sizeBefore = this.ledgerSize;
    if (content === null || watch === null) {
      await this.append(e);
      await this.writeMeta();
      return { applied: false, seq: e.seq, notes };
    }
    // The ledger line and the new digest's temporary file are written and fsynced side by side (one
    // fsync's wait instead of two); the rename waits for both, so digest.md never shows a version the
    // ledger does not explain, even after a power loss.
    const appended = this.append(e).then(
      () => null,
      (err: unknown) => err,
    );
    const ours: { ino: number; seq: number; replaced: string | null } = { ino: 0, seq: e.seq, replaced: null };
    try {
      Object.assign(
        ours,
        await this.replaceDigest(content, watch.hash, async () => {
          const failed = await appended;
          // the append cut itself back: memory unchanged
          if (failed !== null) throw new Abandoned(failed);
          const lostNow = this.lock?.compromised();
          // another writer may own the ledger now: it must not be cut back
          if (lostNow) throw new Abandoned(new Refused(`the memory lock was lost before digest.md was written (${lostNow}); ledger entry ${e.seq} is completed by the next call`));
          await this.checkDir();
          if (await this.savedSince(watch)) throw new SavedDuringCommit();
        }),
      );
    } catch (err) {
      if (err instanceof Abandoned) throw err.reason;
      // the temporary file failed before the rename was due: the append may still be under way
      const failed = await appended;
      if (failed !== null) throw failed;
      // withdraw the entry so ledger and digest agree; if even that fails, the next call rolls forward
      // (or, when a person saved meanwhile, records their save: it no longer matches digest_before)
      try {
        await this.fs.truncate(this.files.ledger, sizeBefore);
        this.ledgerSize = sizeBefore;
        this.seq = e.seq - 1;
      } catch {
        throw new Refused(`could not write digest.md (${code(err)}); ledger entry ${e.seq} is completed by the next call`);
      }
      if (err instanceof SavedDuringCommit) return null;
      if (err instanceof Refused) throw err;
      throw new Refused(`could not write digest.md (${code(err)}); memory unchanged`);
    }
    this.hash = after;
    this.parsed = parseDigest(Buffer.from(content, "utf8"));
    await this.keepLateSave(watch, ours);
    await this.writeMeta();
    // once more after the meta write: an editor's write can trail its open by a moment
    if (await this.keepLateSave(watch, ours)) await this.writeMeta();
    return { applied: true, seq: e.seq, notes };
  }

  // What the `vvm memory` commands that write do through a session (maintain.ts). Each runs under the
  // lock, after load() recovered what a crash or a hand edit left, and with a tool's provenance.

  /** The memory's files. */
  get paths(): Readonly<Session["files"]> {
    return this.files;
  }

  /** The ledger's last entry's sequence number (0: none). */
  get lastSeq(): number {
    return this.seq;
  }

  /** digest.md as loaded (after recovery, and after any restore since). */
  get digest(): ParsedDigest {
    return this.parsed;
  }

  /**
   * `vvm memory restore`: make `body`, the digest of entry `from`, current again. It passes a patch's
   * checks (limits, no front matter, the secret scan) and commits as a patch does (§7); digest.md's front
   * matter stays as it is. Refused while digest.md is unusable, and while it is read_only unless `force`.
   * A body that is the current one already writes nothing (`seq` null).
   */
  async restore(body: string, from: number, force: boolean): Promise<Outcome> {
    const { parsed } = this;
    if (parsed.unusable) throw new Refused(unusableRefusal(parsed.unusable));
    const verdict = parsePatch(JSON.stringify({ digest: body }), true, parsed.settings.digestLimit);
    if (!verdict.ok) throw new Refused(`the digest of entry ${from} cannot be restored (${verdict.reason}); memory unchanged`);
    const found = await scanSecrets(body, []);
    if (found.length > 0) throw new Refused(`the digest of entry ${from} appears to contain a secret (${describeFindings(found)}); not restored, memory unchanged`);
    if (body === parsed.body) {
      await this.guard();
      await this.writeMeta();
      return { applied: false, seq: null, notes: [] };
    }
    if (parsed.settings.readOnly && !force) throw new Refused("digest.md is read_only (front matter): --force restores it anyway; memory unchanged");
    return this.applyPatch({ digest: body, retain: [] }, { kind: "restore", restoredFrom: from, force });
  }

  /**
   * `vvm memory forget`: append a `forget` entry naming `refs`, then bring recall.jsonl up to date, so the
   * facts are gone from recall at once. Resolves to the entry's seq.
   */
  async forget(refs: FactRef[]): Promise<number> {
    await this.guard();
    const e = this.entry("forget", { forgotten: refs, provenance: this.provenance() });
    await this.append(e);
    await this.writeMeta();
    await syncFacts(this.recallSync(true));
    return e.seq;
  }

  /**
   * `vvm memory forget --purge`: rewrite the whole ledger, each line passed through `scrub` (which returns
   * the same buffer when it changes nothing), with a `forget` entry naming `refs` at its end, to a fresh
   * temporary file that is fsynced and renamed over ledger.jsonl under a commit's guards; the directory is
   * fsynced after, so the old ledger does not come back. Sequence numbers are kept. recall.jsonl is then
   * rebuilt (the ledger is a new file). Refused, with memory unchanged, for a line longer than any entry
   * (it cannot be checked) and when nothing would change.
   */
  async purge(scrub: (line: Buffer, purgeSeq: number) => Buffer, refs: FactRef[], reason: string): Promise<{ seq: number; rewritten: number }> {
    await this.guard();
    const e = this.entry("forget", { forgotten: refs, purge: true, reason, provenance: this.provenance() });
    const h = await this.fs.openRead(this.files.ledger);
    if (h === null) throw new Refused("ledger.jsonl is gone; nothing to purge");
    let rewritten = 0;
    let size = 0;
    try {
      if (h.size !== this.ledgerSize) throw new Refused("ledger.jsonl changed (another writer?); nothing purged");
      const lines = new ForwardLines(h, MAX_ENTRY_BYTES);
      const NL = Buffer.from("\n");
      const next = async function* (): AsyncGenerator<Buffer> {
        for await (const batch of lines) {
          const out: Buffer[] = [];
          for (const line of batch) {
            if (line.bytes === null) throw new Refused(`ledger.jsonl has a line of ${line.length} bytes at byte ${line.start}, longer than any entry, which a purge cannot check: remove it by hand first; memory unchanged`);
            const scrubbed = scrub(line.bytes, e.seq);
            if (scrubbed !== line.bytes) rewritten++;
            out.push(scrubbed, NL);
            size += scrubbed.length + 1;
          }
          yield Buffer.concat(out);
        }
        // load() repaired a torn tail under this lock: one now is a writer that does not take it
        if (lines.tornBytes > 0) throw new Refused("ledger.jsonl ends with an incomplete line (another writer?); nothing purged");
        // the purge's own entry (its reason, the user in its provenance) may hold the text as well
        const own = serializeEntry(e);
        const ownLine = own.subarray(0, own.length - 1);
        const scrubbedOwn = scrub(ownLine, e.seq);
        const last = scrubbedOwn === ownLine ? own : Buffer.concat([scrubbedOwn, NL]);
        size += last.length;
        yield last;
      };
      await this.fs.writeAtomic(
        this.files.ledger,
        next(),
        async () => {
          if (rewritten === 0 && refs.length === 0) throw new Refused("nothing in the ledger holds that text; nothing purged");
          const lost = this.lock?.compromised();
          if (lost) throw new Refused(`the memory lock was lost (${lost}); nothing purged`);
          await this.checkDir();
          if ((await this.fs.size(this.files.ledger)) !== this.ledgerSize) throw new Refused("ledger.jsonl changed during the purge (another writer?); nothing purged");
          // the index holds the facts' text and is rebuilt below without fsyncs (it is derived): the old one goes
          // now, so the directory's fsync after this rename makes its removal last too, and a power loss
          // cannot bring it back
          await this.fs.remove(this.files.recall);
        },
        { syncDir: true },
      );
    } finally {
      await h.close();
    }
    this.ledgerSize = size;
    this.seq = e.seq;
    await this.writeMeta();
    await syncFacts(this.recallSync(true));
    return { seq: e.seq, rewritten };
  }

  /**
   * Remove the files commits replaced (`digest.md.<hash>.<random>.prev`, §5) whose content `drop` says
   * must go (a purge: they may hold the text). load() has already put back any save made into one.
   */
  async dropReplaced(drop: (content: Buffer | null) => boolean): Promise<string[]> {
    const removed: string[] = [];
    for (const name of await this.fs.list(this.loc.dir)) {
      if (!REPLACED.test(name)) continue;
      const file = path.join(this.loc.dir, name);
      let raw: Buffer | null = null;
      try {
        raw = await this.fs.readFile(file);
      } catch {
        // a link or a FIFO under our name: not a file of ours, removed like one
      }
      if (!drop(raw)) continue;
      await this.fs.remove(file);
      removed.push(name);
    }
    return removed;
  }

  /**
   * `vvm memory doctor --fix`: a derived file (meta.json, recall.jsonl) that cannot be used as it is (a
   * link, a hard link, a directory or FIFO, an oversized file) is unlinked, never followed, and written
   * afresh: meta.json from digest.md and the ledger, recall.jsonl from the ledger.
   */
  async rebuildDerived(remove: ("meta.json" | "recall.jsonl")[]): Promise<void> {
    await this.guard();
    for (const name of remove) {
      try {
        await this.fs.remove(path.join(this.loc.dir, name));
      } catch (err) {
        // a directory with something in it: not ours to empty
        this.warn(`${name} could not be removed (${code(err)}); it is left as it is`);
      }
    }
    if (remove.includes("meta.json")) this.meta = null;
    await syncFacts(this.recallSync(true));
    await this.writeMeta();
  }

  /** Append a `repair` entry saying what a `vvm memory` command did; resolves to its seq. */
  async recordRepair(reason: string): Promise<number> {
    await this.guard();
    const e = this.entry("repair", { reason, provenance: this.provenance() });
    await this.append(e);
    await this.writeMeta();
    return e.seq;
  }
}

function describeFindings(found: Finding[]): string {
  // the view tells a person why text that looks harmless was refused (an invisible character, base64)
  const parts = found.map((f) => `${f.ruleId.replace("@secretlint/secretlint-rule-", "")}/${f.messageId} in ${f.field} line ${f.line}${f.view === "raw" ? "" : ` (${f.view} text)`}`);
  return [...new Set(parts)].join(", ");
}
