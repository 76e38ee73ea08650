// JSON Schema patterns on RE2. A schema's `pattern` (and `patternProperties`) is tested against the model's
// reply, which is untrusted: with JavaScript's backtracking engine, `^(a+)+$` and a reply of forty `a`s and a
// `!` would stall the run for hours, the event loop with it (so not even Ctrl-C gets through). RE2 runs in
// time linear in the text. It has no lookaround and no backreferences: a pattern that needs them is refused
// when the schema is compiled. Where the two syntaxes read the same pattern differently, the pattern is
// rewritten so that RE2 means what JSON Schema (ECMA-262) means.
import { RE2JS } from "re2js";

/** ECMA-262's white space and line terminators (`\s`): RE2's `\s` is ASCII only. */
const SPACE = "\\t\\n\\x{0B}\\f\\r\\x{FEFF}\\p{Z}";
/** What ECMA-262's `.` leaves out (RE2's leaves out only `\n`). */
const LINE_END = "\\n\\r\\x{2028}\\x{2029}";

/**
 * `pattern` (valid ECMA-262) in RE2's syntax with ECMA-262's meaning: `\uXXXX` (a surrogate pair as the one
 * character it encodes), `\u{…}` and `\cX` become `\x{…}`, as does `[\b]` (backspace); `\s`, `\S` and `.` get
 * ECMA-262's Unicode white space and line terminators; `[]` (nothing) and `[^]` (anything) are spelled as RE2
 * can read them. Everything else is left for RE2 to read or refuse. Inside a class, `\S` keeps RE2's ASCII
 * reading (a class cannot hold a negated set): it differs only on Unicode white space.
 */
function toRe2(pattern: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[i + 1] ?? "";
      const hex = /^u(?:([0-9A-Fa-f]{4})(?:\\u([0-9A-Fa-f]{4}))?|\{([0-9A-Fa-f]+)\})/.exec(pattern.slice(i + 1, i + 16));
      const control = /^c[A-Za-z]/.test(pattern.slice(i + 1, i + 3));
      if (hex !== null) {
        const [all, first, second, braced] = hex;
        const high = first === undefined ? null : parseInt(first, 16);
        const low = second === undefined ? null : parseInt(second, 16);
        if (high !== null && low !== null && high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
          // RE2 reads the reply as code points: a pair means the one character it encodes
          out += `\\x{${(((high - 0xd800) << 10) + (low - 0xdc00) + 0x10000).toString(16)}}`;
          i += all.length;
        } else {
          out += `\\x{${first ?? braced}}`;
          i += first !== undefined ? 5 : all.length;
        }
      } else if (control) {
        out += `\\x{${(pattern.charCodeAt(i + 2) % 32).toString(16)}}`;
        i += 2;
      } else if (next === "b" && inClass) {
        out += "\\x{8}";
        i++;
      } else if (next === "s") {
        out += inClass ? SPACE : `[${SPACE}]`;
        i++;
      } else if (next === "S" && !inClass) {
        out += `[^${SPACE}]`;
        i++;
      } else {
        out += c + next;
        i++;
      }
    } else if (inClass) {
      if (c === "]") inClass = false;
      // a `[` in a class is itself in ECMA-262; RE2 would read `[:alpha:]` as a named class
      out += c === "[" ? "\\[" : c;
    } else if (c === "[") {
      // ECMA-262: `[]` matches nothing and `[^]` anything; RE2 would read the `]` as a member
      if (pattern.startsWith("[]", i)) {
        out += "[^\\x{0}-\\x{10FFFF}]";
        i++;
      } else if (pattern.startsWith("[^]", i)) {
        out += "(?s:.)";
        i += 2;
      } else {
        inClass = true;
        out += c;
      }
    } else if (c === ".") {
      out += `[^${LINE_END}]`;
    } else {
      out += c;
    }
  }
  return out;
}

/**
 * ajv's regular-expression engine (its `code.regExp` option): compiles a schema's pattern with RE2, or
 * throws a message that names it. A pattern is searched for in the text, as JSON Schema says.
 */
export function linearRegExp(pattern: string): { test: (s: string) => boolean; toString: () => string } {
  try {
    // JSON Schema's patterns are ECMA-262's: RE2's own syntax ((?i), \A, [[:alpha:]]) is not accepted either.
    // Compiling runs nothing, so a pattern that would backtrack costs nothing here.
    new RegExp(pattern, "u");
  } catch (err) {
    throw new Error(`pattern ${JSON.stringify(pattern)} is not a regular expression (${(err as Error).message})`, { cause: err });
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(toRe2(pattern));
  } catch (err) {
    throw new Error(
      `pattern ${JSON.stringify(pattern)} cannot be run in time linear in the reply (RE2: ${(err as Error).message}); RE2 has no lookaround, no backreferences, no repetition count over 1000, and names Unicode properties as \\p{L} or \\p{Greek}`,
      { cause: err },
    );
  }
  // ajv keeps one compiled pattern per toString(): the pattern's own text tells them apart
  return { test: (s) => re.matcher(s).find(), toString: () => pattern };
}
// ajv's type asks for the code that would build the engine in standalone output, which is never generated here
linearRegExp.code = "linearRegExp";
