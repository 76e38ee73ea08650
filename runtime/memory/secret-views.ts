// The normalised view of a patch that the secret rules scan besides the raw text (spec/memory.md §8):
// a secret hidden by an invisible character, a look-alike letter, a line wrap, a split between two
// retain items or a base64/hex encoding reads as itself here. Each character remembers the raw offset
// it came from, so a finding still names its field and line.

export interface View {
  text: string;
  /** the raw offset a character of `text` came from */
  origin: (i: number) => number;
  /** `text` from here on is rejoined runs (up to `decodedFrom`), then decoded base64/hex */
  rejoinedFrom: number;
  decodedFrom: number;
}

// format characters (zero-width, bidi controls, soft hyphen, tags) and the Hangul fillers that render blank
const INVISIBLE = /[\p{Cf}\u115F\u1160\u3164\uFFA0]/u;
const MARKS = /\p{M}/gu;
// Cyrillic, Greek and other letters that look like Latin ones; NFKD does not fold these
const LOOKALIKES = new Map<string, string>();
for (const [c, latin] of "АAВBЕEЅSІIЈJКKМMНHОOРPСCТTХXУYҮYԚQԜWаaеeіiјjоoрpсcуyхxѕsԁdһhԛqԝwӏlүyкkɡgıiȷjΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΥYΧXαaιiκkνvοoρpυuχxϲcϳjօoսu".match(/../g) as string[]) LOOKALIKES.set(c, latin);
// character classes as lookup tables: these loops run over every patch
const table = (chars: string) => {
  const t = new Uint8Array(128);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  return (code: number) => code < 128 && t[code] === 1;
};
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const isToken = table(ALNUM + "+/=_.~-");
const isBase64 = table(ALNUM + "+/_-");
/** a line break (with the indentation and quote markers around it) between two token runs this long together is rejoined */
const JOIN_MIN = 16;
/** a longer run is no piece of a wrapped or split token (a retain item holds 500 characters) */
const JOIN_MAX = 512;
/** base64 (either alphabet) or hex runs at least this long are decoded */
const DECODE_MIN = 24;
/** bounds on decoding: how deep (base64 inside base64), how many runs, how many bytes in all */
const DECODE_DEPTH = 2;
const DECODE_RUNS = 256;
const DECODE_BYTES = 64 * 1024;

/** Invisible characters dropped, look-alikes and compatibility forms folded to ASCII; `origin` null when nothing changed. */
function fold(raw: string): { text: string; origin: number[] | null } {
  if (!/[\u0080-\uffff]/.test(raw)) return { text: raw, origin: null };
  let text = "";
  const origin: number[] = [];
  for (let i = 0; i < raw.length; ) {
    const ch = String.fromCodePoint(raw.codePointAt(i) as number);
    let out = ch;
    if (ch.charCodeAt(0) >= 0x80) out = INVISIBLE.test(ch) ? "" : (LOOKALIKES.get(ch) ?? ch.normalize("NFKD").replace(MARKS, ""));
    text += out;
    for (let k = 0; k < out.length; k++) origin.push(i);
    i += ch.length;
  }
  return { text, origin };
}

const runStart = (text: string, end: number) => {
  while (end > 0 && isToken(text.charCodeAt(end - 1))) end--;
  return end;
};
const runEnd = (text: string, start: number, is = isToken) => {
  while (start < text.length && is(text.charCodeAt(start))) start++;
  return start;
};

/** [start, end) of each base64/hex run long enough to decode, with up to two `=` of padding. */
function base64Runs(text: string): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < text.length; i++) {
    if (!isBase64(text.charCodeAt(i))) continue;
    let end = runEnd(text, i, isBase64);
    if (end - i >= DECODE_MIN) {
      const body = end;
      while (end < text.length && end - body < 2 && text[end] === "=") end++;
      runs.push([i, end]);
    }
    i = end;
  }
  return runs;
}

/**
 * Token runs broken by line breaks (a wrap, or the seam between two parts of the patch), rejoined: each
 * chain of runs with and without its first and last run, since those may be a word before the token
 * or the start of the next line, which would glue onto the token and hide where it begins or ends.
 */
function rejoined(text: string): [number, number][][] {
  const variants: [number, number][][] = [];
  let chain: [number, number][] = [];
  const flush = () => {
    const last = chain.length - 1;
    for (const [a, b] of [[0, last], [1, last], [0, last - 1], [1, last - 1]]) if (b > a) variants.push(chain.slice(a, b + 1));
    chain = [];
  };
  for (const m of text.matchAll(/[ \t]*(?:\r?\n[ \t>]*)+/g)) {
    const end = (m.index as number) + m[0].length;
    const before: [number, number] = [runStart(text, m.index as number), m.index as number];
    const after: [number, number] = [end, runEnd(text, end)];
    const lengths = [before[1] - before[0], after[1] - after[0]];
    if (Math.min(...lengths) === 0 || Math.max(...lengths) > JOIN_MAX || lengths[0] + lengths[1] < JOIN_MIN) {
      flush();
      continue;
    }
    // a chain goes on while the line between two breaks is one run
    const prev = chain.at(-1);
    if (!prev || prev[0] !== before[0] || prev[1] !== before[1]) {
      flush();
      chain.push(before);
    }
    chain.push(after);
  }
  flush();
  return variants;
}

/** The text a base64 or hex run stands for, when it is mostly printable ASCII. */
function decode(run: string): string | null {
  const bytes = /^(?:[0-9a-fA-F]{2})+$/.test(run) ? Buffer.from(run, "hex") : Buffer.from(run, "base64");
  if (bytes.length < 12) return null;
  let unprintable = 0;
  for (const b of bytes) {
    if ((b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0a || b === 0x0d) continue;
    if (++unprintable > bytes.length * 0.05) return null;
  }
  return bytes.toString("latin1");
}

/** The view of `raw`; its text is empty when folding, rejoining and decoding found nothing to add. */
export function normalisedView(raw: string): View {
  const folded = fold(raw);
  const base = (i: number) => (folded.origin ? folded.origin[i] : i);
  // the folded text only when it differs from the raw text, which is scanned anyway
  let text = folded.origin ? folded.text : "";
  // then pieces, each after a blank line, each with its own offset map
  const pieces: { from: number; at: (k: number) => number }[] = [];
  const append = (piece: string, at: (k: number) => number) => {
    pieces.push({ from: text.length, at });
    text += "\n\n" + piece;
  };
  const origin = (i: number) => {
    for (let p = pieces.length - 1; p >= 0; p--) if (i >= pieces[p].from) return pieces[p].at(Math.max(0, i - pieces[p].from - 2));
    return base(i);
  };
  let layer = [{ text: folded.text, at: base }];
  const rejoinedFrom = text.length;
  for (const runs of rejoined(folded.text)) {
    const at = (k: number) => {
      for (const [a, b] of runs) {
        if (k < b - a) return base(a + k);
        k -= b - a;
      }
      return base(runs[runs.length - 1][1] - 1);
    };
    const piece = runs.map(([a, b]) => folded.text.slice(a, b)).join("");
    append(piece, at);
    layer.push({ text: piece, at });
  }
  const decodedFrom = text.length;
  // breadth first: runs of the folded and rejoined text, then runs inside what they decoded to
  let runs = 0;
  let bytes = 0;
  for (let depth = 0; depth < DECODE_DEPTH && layer.length > 0; depth++) {
    const next: typeof layer = [];
    for (const seg of layer) {
      for (const [a, b] of base64Runs(seg.text)) {
        if (++runs > DECODE_RUNS || bytes > DECODE_BYTES) break;
        const plain = decode(seg.text.slice(a, b));
        if (plain === null) continue;
        bytes += plain.length;
        const at = seg.at(a);
        append(plain, () => at);
        next.push({ text: plain, at: () => at });
      }
    }
    layer = next;
  }
  return { text, origin, rejoinedFrom, decodedFrom };
}
