// The `summary` of a ref value: derived by the runtime from the reply itself (its first sentences),
// never asked of the model, so every binding has one and no reply format is imposed (spec/state.md §3).
import { scanTexts, type Finding } from "../memory/secrets.ts";
import { cutText } from "../text.ts";

/** A summary holds at most this many sentences ... */
const SENTENCES = 3;
/** ... and at most this many characters. */
export const SUMMARY_CHARS = 280;
/** A summary in state.md's binding index is cut shorter, so the file stays small on long runs. */
export const INDEX_CHARS = 80;

/**
 * The first one to three sentences of a reply, on one line: markdown markers at line starts (headings,
 * bullets, quotes) and fence or rule lines left out, white space collapsed, cut at a word past 280
 * characters. An empty reply has the empty summary.
 */
export function summarize(reply: string): string {
  const prose = reply
    .slice(0, 8 * SUMMARY_CHARS)
    .split(/\r?\n/)
    .filter((l) => !/^\s*(```|~~~|---+\s*$|\*\*\*+\s*$)/.test(l))
    .map((l) => l.replace(/^\s*(#{1,6}\s+|[-*+]\s+|>\s*|\d+[.)]\s+)/, ""))
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  // the end of the third sentence, or of the last one that fits
  let end = 0;
  let count = 0;
  for (const m of prose.matchAll(/[.!?]+(?=\s|$)/g)) {
    const after = m.index + m[0].length;
    if (after > SUMMARY_CHARS) break;
    end = after;
    if (++count === SENTENCES) break;
  }
  // no sentence end within the bound: the text cut at a word
  return end === 0 ? cut(prose, SUMMARY_CHARS) : prose.slice(0, end);
}

/**
 * How much of a long name state.md works from (a name= may be a whole document from the program's data, and
 * scanning all of a 2 MB one took ~250 ms a call): its cell is made of the first CELL_SOURCE characters, and
 * the secret scan reads the first CELL_SCAN, so a secret that starts in what the cell can show is read whole.
 */
const CELL_SOURCE = 4096;
export const CELL_SCAN = 4 * CELL_SOURCE;

/** What a text's cell in state.md is made of: the text, or its first CELL_SOURCE characters and ` …`. */
export function cellSource(text: string): string {
  return text.length <= CELL_SOURCE ? text : `${cutText(text, CELL_SOURCE)} …`;
}

/** What state.md shows in place of a name or summary that looks like it holds a secret. */
export const WITHHELD = "(withheld: looks like a secret)";

/**
 * Groups of texts (a binding's name and summary) as state.md may hold them: each text the memory store's
 * detectors flag is WITHHELD (state.md never holds a secret; the binding file keeps the reply whole). All
 * groups go through one scan, each checked as if alone (scanTexts).
 */
export async function withoutSecrets(groups: string[][]): Promise<string[][]> {
  let findings: Finding[][];
  try {
    findings = await scanTexts(groups);
  } catch {
    // the scanner could not run (its rules failed to load): nothing unchecked goes into state.md
    return groups.map((texts) => texts.map(() => WITHHELD));
  }
  return groups.map((texts, k) => {
    const flagged = new Set(findings[k].map((f) => f.field));
    return texts.map((t, i) => (flagged.has(`retain[${i}]`) ? WITHHELD : t));
  });
}

/** Text as one markdown table cell: controls (bidi ones too) and line breaks become spaces, pipes are escaped, at most `max` characters. */
export function tableCell(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex -- dropping control characters is the point
  return cut(text.replace(/[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, " ").replace(/\s+/g, " ").trim(), max).replace(/\\/g, "\\\\").replace(/\|/g, "\\|");
}

function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  const head = cutText(s, max - 1);
  const space = head.lastIndexOf(" ");
  return (space > max / 2 ? head.slice(0, space) : head) + "…";
}
