// A YAML file a person writes by hand (a `--script` file, a `vvm test` file), read with the position of
// every node, so that a syntax error and every later complaint name `file:line:col`.
import { isScalar, LineCounter, parseDocument, type Document, type Node as YamlNode, type Pair } from "yaml";

export class YamlSource {
  private constructor(
    readonly doc: Document,
    private readonly lc: LineCounter,
    /** how the file is named in messages */
    readonly shown: string,
  ) {}

  /** The document, or its first syntax error (a duplicate key is one) at its place, the message's first line. */
  static parse(text: string, shown: string): YamlSource | { at: string; message: string } {
    const lc = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true, prettyErrors: false });
    if (doc.errors.length === 0) return new YamlSource(doc, lc, shown);
    const e = doc.errors[0]!;
    const { line, col } = lc.linePos(e.pos[0]);
    return { at: `${shown}:${line}:${col}`, message: e.message.split("\n")[0]! };
  }

  /** `file:line:col` of a node (of a pair: its key), or the file alone when it has no place. */
  at(node: YamlNode | Pair | null | undefined): string {
    const range = node && "range" in node ? node.range : node && "key" in node ? (node.key as YamlNode | null)?.range : undefined;
    if (!range) return this.shown;
    const { line, col } = this.lc.linePos(range[0]);
    return `${this.shown}:${line}:${col}`;
  }

  /** The line a node starts on (0: none). */
  line(node: YamlNode): number {
    return node.range ? this.lc.linePos(node.range[0]).line : 0;
  }
}

/** A mapping key as text. */
export function scalarKey(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
}
