// Decoding of string literals (JSON escapes, E005) and splitting of templates into parts (E052, E010).
import type { Span, Template, TemplatePart } from "./ast.ts";
import { diagnostic, type CappedDiagnostics } from "./diagnostics.ts";
import { RESERVED_WORDS } from "./tokens.ts";

const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  '"': '"',
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

/** Where a literal's text starts in the source (the quote or backtick itself). */
interface Origin {
  line: number;
  col: number;
}

/**
 * Line/column of positions inside a literal's text `raw`, which starts at `origin`. Positions are asked for in
 * increasing order, so the cursor only walks forward: linear even for a huge template full of placeholders.
 */
class Positions {
  private index = 0;
  private line: number;
  private col: number;

  constructor(
    private readonly raw: string,
    private readonly origin: Origin,
  ) {
    this.line = origin.line;
    this.col = origin.col;
  }

  at(i: number): { line: number; col: number } {
    if (i < this.index) {
      this.index = 0;
      this.line = this.origin.line;
      this.col = this.origin.col;
    }
    for (; this.index < i; this.index++) {
      if (this.raw.charCodeAt(this.index) === 10) {
        this.line++;
        this.col = 1;
      } else {
        this.col++;
      }
    }
    return { line: this.line, col: this.col };
  }

  span(from: number, to: number): Span {
    const a = this.at(from);
    const b = this.at(to);
    return { line: a.line, col: a.col, endLine: b.line, endCol: b.col };
  }
}

/**
 * The value of a `"..."` or `"""..."""` token. Unknown escapes are reported (E005) and kept verbatim,
 * so the rest of the program can still be checked.
 */
export function decodeString(raw: string, origin: Origin, path: string, diags: CappedDiagnostics): string {
  const q = raw.startsWith('"""') ? 3 : 1;
  const body = raw.slice(q, raw.length - q);
  if (body.indexOf("\\") < 0) return body;
  const pos = new Positions(raw, origin);
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const n = body[i + 1] ?? "";
    const simple = SIMPLE_ESCAPES[n];
    if (simple !== undefined) {
      out += simple;
      i++;
    } else if (n === "u" && /^[0-9A-Fa-f]{4}$/.test(body.slice(i + 2, i + 6))) {
      out += String.fromCharCode(parseInt(body.slice(i + 2, i + 6), 16));
      i += 5;
    } else {
      if (diags.wants("E005")) {
        const width = n === "u" ? 2 : n === "" ? 1 : 2;
        const shown = n === "\n" ? "\\<newline>" : n === "u" ? "\\u (needs four hex digits)" : `\\${n}`;
        diags.push(
          diagnostic(
            "E005",
            `unknown escape ${shown} in string; allowed: \\\\ \\" \\/ \\b \\f \\n \\r \\t \\uXXXX`,
            path,
            pos.span(q + i, q + i + width),
          ),
        );
      }
      out += c + n;
      i++;
    }
  }
  return out;
}

const PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * Split a backtick template into parts. Escapes: \` is a backtick, \" a double quote (dialect), \\ a backslash;
 * any other backslash is literal. `{{` and `}}` are literal braces, `{}` the input, `{a.b}` a name path.
 */
export function parseTemplate(raw: string, origin: Origin, path: string, diags: CappedDiagnostics): Template {
  const parts: TemplatePart[] = [];
  const pos = new Positions(raw, origin);
  const end = raw.length - 1; // index of the closing backtick
  let text = "";
  const flush = () => {
    if (text !== "") parts.push({ kind: "text", value: text });
    text = "";
  };
  let i = 1;
  while (i < end) {
    const c = raw[i]!;
    if (c === "\\") {
      const n = raw[i + 1]!;
      if (n === "`" || n === '"' || n === "\\") {
        text += n;
        i += 2;
      } else {
        text += c;
        i += 1;
      }
    } else if (c === "{") {
      if (raw[i + 1] === "{") {
        text += "{";
        i += 2;
        continue;
      }
      // Scan only to the next brace, so a template full of lone '{' stays linear.
      let close = i + 1;
      while (close < end && raw[close] !== "}" && raw[close] !== "{") close++;
      if (close >= end || raw[close] !== "}") {
        if (diags.wants("E052")) {
          diags.push(
            diagnostic("E052", "lone '{' in template: write '{{' for a literal brace, or close the placeholder", path, pos.span(i, i + 1)),
          );
        }
        text += c;
        i += 1;
        continue;
      }
      const inner = raw.slice(i + 1, close);
      const span = pos.span(i, close + 1);
      if (inner === "") {
        flush();
        parts.push({ kind: "input", span });
      } else if (PATH.test(inner)) {
        const names = inner.split(".");
        const first = names[0]!;
        // Upstream §5.2: a placeholder names a binding, which a reserved word never is (`{it}` is the dialect's
        // current `it`); only the first name: later ones are member names, such as `{failure.error.kind}`.
        if (first !== "it" && RESERVED_WORDS.has(first)) {
          if (diags.wants("E010")) {
            diags.push(diagnostic("E010", `'${first}' is a reserved word and cannot be used as a placeholder name`, path, pos.span(i + 1, i + 1 + first.length)));
          }
        } else {
          flush();
          parts.push({ kind: "path", names, span });
        }
      } else {
        const shown = inner.length > 40 ? inner.slice(0, 40) + "…" : inner;
        if (diags.wants("E052")) {
          diags.push(
            diagnostic(
              "E052",
              `malformed placeholder {${shown}}: expected {}, {name} or {name.field} (no spaces); write '{{' for a literal brace`,
              path,
              span,
            ),
          );
        }
      }
      i = close + 1;
    } else if (c === "}") {
      if (raw[i + 1] === "}") {
        text += "}";
        i += 2;
        continue;
      }
      if (diags.wants("E052")) {
        diags.push(diagnostic("E052", "lone '}' in template: write '}}' for a literal brace", path, pos.span(i, i + 1)));
      }
      text += c;
      i += 1;
    } else {
      text += c;
      i += 1;
    }
  }
  flush();
  const start = { line: origin.line, col: origin.col };
  const stop = pos.at(raw.length);
  return { kind: "Template", parts, span: { line: start.line, col: start.col, endLine: stop.line, endCol: stop.col } };
}
