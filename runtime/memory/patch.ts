// The `vvm-memory` channel: find and strip fenced blocks, parse and check a patch, and split
// digest.md into its front matter (per-memory settings) and the body that is injected.
// js-yaml rather than the yaml package the script and test files use: digest.md's front matter comes from
// a cloned repository or a model's patch, and js-yaml stops nesting at 100 levels before its recursion
// goes deep, where the yaml package recurses until the stack runs out (about 800 levels)
import { CORE_SCHEMA, load } from "js-yaml";
import { hasLoneSurrogate } from "../text.ts";

export const DEFAULT_DIGEST_LIMIT = 12_000;
export const MAX_RETAIN_ITEMS = 20;
export const MAX_RETAIN_CHARS = 500;
/** A front-matter `digest_limit` may lower or raise the default, never beyond this. */
const MAX_DIGEST_LIMIT = 100_000;

interface Extracted {
  /** the reply with every vvm-memory block removed */
  visible: string;
  /** block bodies, in order; `closed` false when the reply ended inside the block */
  blocks: { body: string; closed: boolean }[];
}

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$/;

/**
 * Whether YAML text may hold an alias (`*name` where a node starts): outside quoted scalars and comments, a
 * `*` first on a line or after `- `, `? `, `: `, `[`, `{` or `,`. So `"see *notes*"`, `a*b` and `see *this*`
 * hold none; a plain scalar with `, *x` in it is read as holding one (quote it). Not yaml's lexer: loading
 * that library cost the first memory call of a run 10–15 ms.
 */
function hasAlias(yaml: string): boolean {
  if (!yaml.includes("*")) return false;
  const bare = yaml.replace(/"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|(?:^|[ \t])#[^\n]*/gm, "");
  return /(?:^|[[{,]|[-?:][ \t])[ \t]*\*[^\s,[\]{}]/m.test(bare);
}

/**
 * Strip every fenced block whose info string is `vvm-memory` (CommonMark fences: ``` or ~~~, three
 * or more, closed by a fence of the same character at least as long). Blocks quoted inside another
 * fenced block are content, not patches.
 */
export function extractBlocks(text: string): Extracted {
  if (!text.includes("vvm-memory")) return { visible: text, blocks: [] };
  // a byte-order mark would keep a fence on the first line from being seen
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const lines = text.split(/(?<=\n)/);
  const kept: string[] = [];
  const blocks: Extracted["blocks"] = [];
  let fence: { ch: string; len: number; memory: boolean; body: string[] } | null = null;
  // right after a removed block, a blank line that would double the blank line before it is dropped;
  // nothing else in the reply changes
  let seam = false;
  // whether the last line kept is blank, kept up to date rather than tested again at each seam: a reply of
  // one long blank line and thousands of blocks trimmed that line once per block (780 KB: 5.4 s)
  let lastBlank = true;
  const keep = (line: string) => {
    kept.push(line);
    lastBlank = line.trim() === "";
  };
  for (const line of lines) {
    const bare = line.replace(/\r?\n$/, "");
    if (seam) {
      seam = false;
      if (lastBlank && line.trim() === "") continue;
    }
    if (fence === null) {
      const m = FENCE.exec(bare);
      if (m && !(m[1][0] === "`" && m[2].includes("`"))) {
        fence = { ch: m[1][0], len: m[1].length, memory: m[2] === "vvm-memory", body: [] };
        if (!fence.memory) keep(line);
        continue;
      }
      keep(line);
      continue;
    }
    const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(bare);
    if (close && close[1][0] === fence.ch && close[1].length >= fence.len) {
      if (fence.memory) {
        blocks.push({ body: fence.body.join(""), closed: true });
        seam = true;
      } else keep(line);
      fence = null;
      continue;
    }
    if (fence.memory) fence.body.push(line);
    else keep(line);
  }
  if (fence?.memory) blocks.push({ body: fence.body.join(""), closed: false });
  if (blocks.length === 0) return { visible: text, blocks };
  return { visible: kept.join("").trim(), blocks };
}

export interface Patch {
  digest?: string;
  retain: string[];
}

/** A reason a patch was refused. Never quotes the patch: it may hold the very secret being refused. */
type Verdict = { ok: true; patch: Patch } | { ok: false; reason: string };

export function parsePatch(body: string, closed: boolean, digestLimit: number): Verdict {
  if (!closed) return { ok: false, reason: "the vvm-memory block is not closed (no closing ``` fence)" };
  let x: unknown;
  try {
    x = JSON.parse(body);
  } catch (err) {
    // V8's message may quote the input; keep only the position
    const pos = /position (\d+)/.exec(String((err as Error).message));
    return { ok: false, reason: `the vvm-memory block is not valid JSON${pos ? ` (error at character ${pos[1]})` : ""}` };
  }
  if (typeof x !== "object" || x === null || Array.isArray(x)) {
    return { ok: false, reason: `the vvm-memory block must be a JSON object, got ${x === null ? "null" : Array.isArray(x) ? "an array" : typeof x}` };
  }
  const o = x as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => k !== "digest" && k !== "retain");
  if (unknown.length > 0) {
    // key names are echoed only when short, lower-case words (a typo such as "digests"), so neither a secret
    // used as a key (AKIA…, sk-ant-…) nor a sentence such as hunter2_is_the_password reaches the ledger
    const shown = unknown.map((k) => (/^[a-z_]{1,20}$/.test(k) ? `"${k}"` : "(a key not shown)"));
    return { ok: false, reason: `unknown key${unknown.length > 1 ? "s" : ""} ${shown.join(", ")} in the vvm-memory block (allowed: digest, retain)` };
  }
  // JSON.parse keeps a key's last value: a block giving "retain" twice is as ambiguous as two blocks
  const twice = topLevelKeys(body).find((k, i, all) => all.indexOf(k) !== i);
  if (twice !== undefined) return { ok: false, reason: `"${twice}" is given twice in the vvm-memory block; which one was meant is unknowable, so none was applied` };
  const patch: Patch = { retain: [] };
  if ("digest" in o) {
    const d = o.digest;
    if (typeof d !== "string") return { ok: false, reason: `"digest" must be a string, got ${jsonType(d)}` };
    if (d.length > digestLimit) return { ok: false, reason: `"digest" is ${d.length} characters; the limit is ${digestLimit}` };
    if (d.includes("\0")) return { ok: false, reason: `"digest" contains a NUL character` };
    // half a surrogate pair, which a JSON escape (`\ud83d`) can spell: UTF-8 cannot hold it, so digest.md would get
    // U+FFFD while the ledger kept the escape
    if (hasLoneSurrogate(d)) return { ok: false, reason: `"digest" contains an unpaired surrogate (half of a character such as an emoji)` };
    // Judged exactly as digest.md is read (a BOM dropped first): a settings block is refused, while a
    // Markdown rule or a title between two rules is ordinary text the model may write back.
    const judged = parseDigest(Buffer.from(d, "utf8"));
    if (judged.prefix !== "") return { ok: false, reason: `"digest" must not begin with front matter (settings in digest.md are edited by hand only)` };
    // a block between two rules that YAML cannot read (or that holds an alias) would make digest.md unusable
    if (judged.unusable?.startsWith("digest.md front matter")) return { ok: false, reason: `"digest" would leave digest.md unusable: ${judged.unusable}` };
    patch.digest = d;
  }
  if ("retain" in o) {
    const r = o.retain;
    if (!Array.isArray(r)) return { ok: false, reason: `"retain" must be a list of strings, got ${jsonType(r)}` };
    if (r.length > MAX_RETAIN_ITEMS) return { ok: false, reason: `"retain" has ${r.length} items; the limit is ${MAX_RETAIN_ITEMS}` };
    for (let i = 0; i < r.length; i++) {
      const item = r[i] as unknown;
      if (typeof item !== "string") return { ok: false, reason: `retain[${i}] must be a string, got ${jsonType(item)}` };
      if (item.trim() === "") return { ok: false, reason: `retain[${i}] is ${item === "" ? "empty" : "blank (only whitespace)"}` };
      if (item.length > MAX_RETAIN_CHARS) return { ok: false, reason: `retain[${i}] is ${item.length} characters; the limit is ${MAX_RETAIN_CHARS}` };
      if (item.includes("\0")) return { ok: false, reason: `retain[${i}] contains a NUL character` };
      if (hasLoneSurrogate(item)) return { ok: false, reason: `retain[${i}] contains an unpaired surrogate (half of a character such as an emoji)` };
    }
    patch.retain = r as string[];
  }
  return { ok: true, patch };
}

/** The keys of the object that valid JSON text holds, in order, a key given twice listed twice. */
function topLevelKeys(json: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let keyNext = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === "\\" ? 2 : 1;
      if (depth === 1 && keyNext) keys.push(JSON.parse(json.slice(i, j + 1)) as string);
      keyNext = false;
      i = j;
    } else if (c === "{" || c === "[") {
      depth++;
      keyNext = depth === 1;
    } else if (c === "}" || c === "]") depth--;
    else if (c === "," && depth === 1) keyNext = true;
  }
  return keys;
}

function jsonType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "an object" : typeof v;
}

export const RECALL_MODES = ["relevant", "recent"] as const;
export type RecallMode = (typeof RECALL_MODES)[number];
/** Share of the facts budget kept for the newest facts when recall is `relevant`. */
const DEFAULT_RECENT_SHARE = 0.5;

export interface DigestSettings {
  digestLimit: number;
  readOnly: boolean;
  /** how retained facts are chosen for the Memory Context */
  recall: RecallMode;
  /** with `relevant` recall, the share of the budget that goes to the newest facts first (0 to 1) */
  recentShare: number;
}

const defaultSettings = (): DigestSettings => ({ digestLimit: DEFAULT_DIGEST_LIMIT, readOnly: false, recall: "relevant", recentShare: DEFAULT_RECENT_SHARE });
const KNOWN_SETTINGS = ["digest_limit", "read_only", "recall", "recent_share"];

export interface ParsedDigest {
  /** the front matter block exactly as written (delimiters included), "" when none */
  prefix: string;
  /** what is injected */
  body: string;
  settings: DigestSettings;
  /** why the digest cannot be used (binary, not UTF-8, too large, bad front matter), or null */
  unusable: string | null;
  /** problems worth a warning that still leave the digest usable */
  notes: string[];
}

/** Hard cap on what is read for injection, independent of the front-matter limit. */
export const MAX_DIGEST_FILE_BYTES = 1024 * 1024;

/** A digest.md that is not used, and why. */
export function unusableDigest(reason: string): ParsedDigest {
  return { prefix: "", body: "", settings: defaultSettings(), unusable: reason, notes: [] };
}

export function parseDigest(raw: Buffer | null): ParsedDigest {
  const out: ParsedDigest = { prefix: "", body: "", settings: defaultSettings(), unusable: null, notes: [] };
  if (raw === null || raw.length === 0) return out;
  if (raw.length > MAX_DIGEST_FILE_BYTES) return unusableDigest(`digest.md is ${raw.length} bytes, over the ${MAX_DIGEST_FILE_BYTES}-byte cap`);
  if (raw.includes(0)) {
    out.unusable = "digest.md contains NUL bytes (binary file?)";
    return out;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
  } catch {
    out.unusable = "digest.md is not valid UTF-8";
    return out;
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const fm = splitFrontMatter(text);
  let data: unknown = null;
  if (fm !== null) {
    // Settings never need an alias, and js-yaml turns an alias used as a key into text each time it meets
    // it: a 20 KB block of aliased keys took 15 s (a hostile repository's digest.md, or a model's patch)
    if (hasAlias(fm.yaml)) {
      out.unusable = "digest.md front matter uses a YAML alias (*name); settings never need one";
      return out;
    }
    try {
      // plain YAML 1.2 data (the core schema: no dates, no custom types); a block that is empty or only
      // comments loads as null, which counts as an empty mapping
      data = load(fm.yaml, { schema: CORE_SCHEMA }) ?? {};
    } catch (err) {
      out.unusable = `digest.md front matter is not valid YAML (${firstLine((err as Error).message)})`;
      return out;
    }
  }
  // Settings are a mapping, or nothing at all (`---` twice). Anything else between two `---` lines is
  // Markdown: a title between two rules, and a `# heading` there too (YAML reads it as a comment: an
  // empty mapping, above — so an empty mapping counts only when the block is empty or `{}`).
  const isMapping = typeof data === "object" && data !== null && !Array.isArray(data);
  const yaml = fm?.yaml.trim();
  const settingsBlock = fm !== null && isMapping && (Object.keys(data as object).length > 0 || yaml === "" || yaml === "{}");
  if (!settingsBlock) {
    out.body = text;
  } else {
    out.prefix = fm.prefix;
    out.body = fm.body;
    const settings = data as Record<string, unknown>; // a mapping: settingsBlock says so
    for (const k of Object.keys(settings)) {
      if (!KNOWN_SETTINGS.includes(k)) out.notes.push(`front matter setting '${k}' is not known (${KNOWN_SETTINGS.join(", ")}); it is ignored`);
    }
    if (Object.hasOwn(settings, "digest_limit")) {
      const n = settings.digest_limit;
      if (typeof n === "number" && Number.isInteger(n) && n > 0 && n <= MAX_DIGEST_LIMIT) out.settings.digestLimit = n;
      else out.notes.push(`front matter digest_limit must be an integer from 1 to ${MAX_DIGEST_LIMIT}; using ${DEFAULT_DIGEST_LIMIT}`);
    }
    if (Object.hasOwn(settings, "read_only")) {
      if (typeof settings.read_only === "boolean") out.settings.readOnly = settings.read_only;
      else {
        out.notes.push("front matter read_only must be true or false; treating the digest as read-only");
        out.settings.readOnly = true;
      }
    }
    if (Object.hasOwn(settings, "recall")) {
      const r = settings.recall;
      if ((RECALL_MODES as readonly unknown[]).includes(r)) out.settings.recall = r as RecallMode;
      else out.notes.push(`front matter recall must be ${RECALL_MODES.join(" or ")}; using relevant`);
    }
    if (Object.hasOwn(settings, "recent_share")) {
      const n = settings.recent_share;
      if (typeof n === "number" && n >= 0 && n <= 1) out.settings.recentShare = n;
      else out.notes.push(`front matter recent_share must be a number from 0 to 1; using ${DEFAULT_RECENT_SHARE}`);
    }
  }
  if (out.body.length > out.settings.digestLimit) {
    out.unusable = `the digest is ${out.body.length} characters, over its limit of ${out.settings.digestLimit}`;
  }
  return out;
}

/** digest.md's new content: the existing front matter as written (ended by a line break if it had none), then `body`. */
export function digestFile(parsed: ParsedDigest, body: string): string {
  if (parsed.prefix === "" || parsed.prefix.endsWith("\n")) return parsed.prefix + body;
  return parsed.prefix + "\n" + body;
}

/**
 * Front matter: an opening `---` line, then the lines up to the first line that is `---` alone (trailing
 * spaces allowed). `prefix` runs through that closing line and its line end, so a new body written after
 * it never joins the delimiter; a line such as `----` closes nothing. Null when there is no such block.
 */
function splitFrontMatter(text: string): { prefix: string; yaml: string; body: string } | null {
  const open = /^---[ \t]*\r?\n/.exec(text);
  if (!open) return null;
  const start = open[0].length;
  for (let i = start; i < text.length; ) {
    const nl = text.indexOf("\n", i);
    const end = nl < 0 ? text.length : nl + 1;
    if (/^---[ \t]*\r?$/.test(text.slice(i, nl < 0 ? end : nl))) return { prefix: text.slice(0, end), yaml: text.slice(start, i), body: text.slice(end) };
    i = end;
  }
  return null;
}

function firstLine(s: string): string {
  return s.split("\n")[0].slice(0, 120);
}
