// JSON text into VVM values, with the line and column of the first problem. Shared by `json(text)` in the
// standard library and by `vvm run --input/--arg`. JSON.parse would do the parsing, but its messages name
// neither the line nor (on every Node version) the position, and its objects would need a second pass into Maps.
import { showChar } from "../grammar/index.ts";
import type { Value, VObject } from "./values.ts";

/** Objects and lists nested deeper than this are refused: deeper values would overflow later recursive walks. */
export const JSON_MAX_DEPTH = 1000;

type JsonResult =
  | { ok: true; value: Value }
  /** `problem` names what was expected and what was found; line and column (1-based, UTF-16 units) say where */
  | { ok: false; problem: string; line: number; column: number };

interface JsonOptions {
  /**
   * Accept one Markdown code fence around the whole text (```` ```json ```` … ```` ``` ````), as models often
   * wrap the JSON they were asked for. Positions still count from the start of the text.
   */
  fenced?: boolean;
  /**
   * Refuse a field name given twice in one object, rather than keep its last value: for text a person wrote
   * (`vvm run --input`, `--arg`), where the second value would silently replace the first.
   */
  uniqueFields?: boolean;
}

/** Parse JSON text: `null` is unit, objects are Maps in key order (a repeated key keeps its first place and last value). */
export function parseJson(text: string, opts: JsonOptions = {}): JsonResult {
  let start = 0;
  let end = text.length;
  if (text.charCodeAt(0) === 0xfeff) start = 1; // a byte-order mark from an editor
  if (opts.fenced) {
    const inner = fenceBody(text, start);
    if (inner) [start, end] = inner;
  }
  const p = new Parser(text, start, end, opts.uniqueFields === true);
  try {
    p.skipSpace();
    if (p.pos >= end) throw new Problem(start === 0 && end === text.length && text.trim() === "" ? "the text is empty: expected a JSON value" : "expected a JSON value, found the end of the text", p.pos);
    const value = p.value();
    p.skipSpace();
    if (p.pos < end) throw new Problem(`unexpected ${p.found()} after the JSON value (the text must hold one value)`, p.pos);
    return { ok: true, value };
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    const { line, column } = position(text, err.offset);
    return { ok: false, problem: err.message, line, column };
  }
}

/** The offsets inside a code fence that wraps the whole text (after leading and before trailing blanks), or null. */
function fenceBody(text: string, from: number): [number, number] | null {
  const m = /^\s*```[A-Za-z0-9_-]*[ \t]*\r?\n/.exec(text.slice(from));
  if (!m) return null;
  const close = /\r?\n[ \t]*```\s*$/.exec(text);
  if (!close || close.index < from + m[0].length - 1) return null;
  return [from + m[0].length, close.index];
}

export function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

class Problem {
  constructor(
    readonly message: string,
    readonly offset: number,
  ) {}
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Words longer than this are not quoted in messages. */
const LONGEST_QUOTED = 24;
/** How much of a word a message looks at. */
const WORD_READ = 40;

class Parser {
  pos: number;
  private depth = 0;

  constructor(
    private readonly text: string,
    start: number,
    private readonly end: number,
    private readonly uniqueFields = false,
  ) {
    this.pos = start;
  }

  skipSpace(): void {
    const t = this.text;
    while (this.pos < this.end) {
      const c = t.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.pos++;
      else return;
    }
  }

  /** What stands at the current position, for messages: a word (quoted when short), a quoted character, or the end. */
  found(at = this.pos): string {
    if (at >= this.end) return "the end of the text";
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(at, Math.min(this.end, at + WORD_READ)));
    if (word) {
      const w = word[0];
      // a long word is more likely a token than a typo (a credentials file given by mistake): never quoted
      if (w.length > LONGEST_QUOTED) return `a word of ${w.length === WORD_READ ? `${WORD_READ} or more` : w.length} characters`;
      const hint = w === "True" || w === "False" ? ` (JSON writes ${w.toLowerCase()})` : w === "None" || w === "undefined" ? " (JSON writes null)" : "";
      return `'${w}'${hint}`;
    }
    const ch = String.fromCodePoint(this.text.codePointAt(at)!);
    return ch === "'" ? "a single quote (JSON strings use double quotes)" : showChar(ch);
  }

  value(): Value {
    const t = this.text;
    const c = t.charCodeAt(this.pos);
    switch (c) {
      case 0x7b: // {
        return this.object();
      case 0x5b: // [
        return this.list();
      case QUOTE:
        return this.string();
      case 0x74: // t
        return this.word("true", true);
      case 0x66: // f
        return this.word("false", false);
      case 0x6e: // n
        return this.word("null", null);
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
        throw new Problem(`expected a JSON value, found ${this.found()}`, this.pos);
    }
  }

  private word(w: string, v: Value): Value {
    if (this.text.startsWith(w, this.pos) && !/[A-Za-z0-9_]/.test(this.text[this.pos + w.length] ?? "")) {
      this.pos += w.length;
      return v;
    }
    throw new Problem(`expected a JSON value, found ${this.found()}`, this.pos);
  }

  private enter(open: number): void {
    if (++this.depth > JSON_MAX_DEPTH) throw new Problem(`objects and lists nested deeper than ${JSON_MAX_DEPTH} levels are not supported`, open);
  }

  private object(): VObject {
    const open = this.pos;
    this.enter(open);
    this.pos++;
    const out: VObject = new Map();
    this.skipSpace();
    if (this.text.charCodeAt(this.pos) === 0x7d && this.pos < this.end) {
      this.pos++;
      this.depth--;
      return out;
    }
    for (;;) {
      if (this.text.charCodeAt(this.pos) !== QUOTE || this.pos >= this.end) {
        throw new Problem(`expected a field name in double quotes, found ${this.found()}${this.unclosed("{", open)}`, this.pos);
      }
      const keyAt = this.pos;
      const key = this.string();
      if (this.uniqueFields && out.has(key)) throw new Problem(`the field ${JSON.stringify(key)} is given twice in this object`, keyAt);
      this.skipSpace();
      if (this.text.charCodeAt(this.pos) !== 0x3a || this.pos >= this.end) {
        throw new Problem(`expected ':' after the field name ${JSON.stringify(key)}, found ${this.found()}${this.unclosed("{", open)}`, this.pos);
      }
      this.pos++;
      this.skipSpace();
      if (this.pos >= this.end) throw new Problem(`expected a value for the field ${JSON.stringify(key)}, found the end of the text${this.unclosed("{", open)}`, this.pos);
      out.set(key, this.value());
      this.skipSpace();
      const c = this.pos < this.end ? this.text.charCodeAt(this.pos) : -1;
      if (c === 0x7d) {
        this.pos++;
        this.depth--;
        return out;
      }
      if (c !== 0x2c) throw new Problem(`expected ',' or '}' after the field ${JSON.stringify(key)}, found ${this.found()}${this.unclosed("{", open)}`, this.pos);
      this.pos++;
      this.skipSpace();
      if (this.text.charCodeAt(this.pos) === 0x7d && this.pos < this.end) {
        throw new Problem("expected a field name after ',', found '}' (JSON allows no trailing comma)", this.pos);
      }
    }
  }

  private list(): Value[] {
    const open = this.pos;
    this.enter(open);
    this.pos++;
    const out: Value[] = [];
    this.skipSpace();
    if (this.text.charCodeAt(this.pos) === 0x5d && this.pos < this.end) {
      this.pos++;
      this.depth--;
      return out;
    }
    for (;;) {
      if (this.pos >= this.end) throw new Problem(`expected a JSON value, found the end of the text${this.unclosed("[", open)}`, this.pos);
      out.push(this.value());
      this.skipSpace();
      const c = this.pos < this.end ? this.text.charCodeAt(this.pos) : -1;
      if (c === 0x5d) {
        this.pos++;
        this.depth--;
        return out;
      }
      if (c !== 0x2c) throw new Problem(`expected ',' or ']' after a list item, found ${this.found()}${this.unclosed("[", open)}`, this.pos);
      this.pos++;
      this.skipSpace();
      if (this.text.charCodeAt(this.pos) === 0x5d && this.pos < this.end) {
        throw new Problem("expected a JSON value after ',', found ']' (JSON allows no trailing comma)", this.pos);
      }
    }
  }

  /** At the end of the text, say which bracket is still open. */
  private unclosed(bracket: string, open: number): string {
    if (this.pos < this.end) return "";
    const { line, column } = position(this.text, open);
    return ` ('${bracket}' at line ${line}, column ${column} is never closed)`;
  }

  private string(): string {
    const t = this.text;
    const open = this.pos;
    let i = ++this.pos;
    // checked here, decoded by JSON.parse when it holds an escape: building the text escape by escape
    // made a rope of one piece per escape (16 million `\n` took 9 s and a gigabyte)
    let escaped = false;
    for (;;) {
      if (i >= this.end) {
        const { line, column } = position(t, open);
        throw new Problem(`the string that starts at line ${line}, column ${column} is never closed`, open);
      }
      const c = t.charCodeAt(i);
      if (c === QUOTE) {
        this.pos = i + 1;
        return escaped ? (JSON.parse(t.slice(open, i + 1)) as string) : t.slice(open + 1, i);
      }
      if (c < 0x20) {
        const esc = c === 0x0a ? "\\n" : c === 0x09 ? "\\t" : c === 0x0d ? "\\r" : `\\u${c.toString(16).padStart(4, "0")}`;
        throw new Problem(`a string cannot hold the control character U+${c.toString(16).toUpperCase().padStart(4, "0")}: write it as ${esc}`, i);
      }
      if (c !== BACKSLASH) {
        i++;
        continue;
      }
      escaped = true;
      const e = i + 1 < this.end ? t[i + 1] : "";
      if (e === "u") {
        if (!/^[0-9A-Fa-f]{4}$/.test(t.slice(i + 2, i + 6)) || i + 6 > this.end) throw new Problem("expected four hex digits after \\u", i);
        i += 6;
      } else if (e !== "" && '"\\/bfnrt'.includes(e)) {
        i += 2;
      } else {
        throw new Problem(e === "" ? "a string ends with a lone backslash" : `unknown escape '\\${e}' in a string (JSON knows \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)`, i);
      }
    }
  }

  private number(): number {
    const start = this.pos;
    const m = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
    m.lastIndex = start;
    const r = m.exec(this.text);
    const len = r ? r[0].length : 0;
    if (!r || start + len > this.end || len === 0 || r[0] === "-") {
      throw new Problem(`expected a number after '-', found ${this.found(start + 1)}`, start + 1);
    }
    const next = start + len < this.end ? this.text[start + len]! : "";
    if (r[1] === "0" && /[0-9]/.test(next)) throw new Problem("a number cannot start with 0 followed by more digits", start);
    // (a '.' or 'e' after a fraction or exponent that was read whole is not the start of one: it is text after the number)
    if (next === "." && r[2] === undefined && r[3] === undefined) throw new Problem(`expected a digit after '.', found ${this.found(start + len + 1)}`, start + len + 1);
    if ((next === "e" || next === "E") && r[3] === undefined) throw new Problem(`expected the exponent's digits, found ${this.found(start + len + 1)}`, start + len + 1);
    const n = Number(r[0]);
    const shown = r[0].length > 40 ? r[0].slice(0, 40) + "…" : r[0];
    if (!Number.isFinite(n)) throw new Problem(`the number ${shown} is too large`, start);
    // an id such as 12345678901234567890 would silently become 12345678901234567000; an integer a number
    // holds exactly (2^60), or as JSON.stringify writes one (36031261649790970), is read as it is
    if (r[2] === undefined && r[3] === undefined && !Number.isSafeInteger(n) && String(n) !== r[0] && BigInt(r[0]) !== BigInt(n)) {
      throw new Problem(`the integer ${shown} cannot be held exactly (a number holds every integer up to 9007199254740991, and only some beyond); write it as a string`, start);
    }
    this.pos = start + len;
    return n;
  }
}
