// A YAML file a person writes by hand (a `--script` file, a `vvm test` file), read with the position of
// every node, so that a syntax error and every later complaint name `file:line:col`.
import { isCollection, isScalar, LineCounter, parseDocument, visit, type Document, type Node as YamlNode, type Pair } from "yaml";

/**
 * Lists and mappings nested deeper than this are refused with their place. The yaml package's own
 * recursion gives out near 800 levels (Node's default stack), and a value read from the file is walked
 * recursively again later; a file written by hand never comes near.
 */
const MAX_DEPTH = 500;
const tooDeep = `lists and mappings nested deeper than ${MAX_DEPTH} levels are not supported`;

export class YamlSource {
  private constructor(
    readonly doc: Document,
    private readonly lc: LineCounter,
    /** how the file is named in messages */
    readonly shown: string,
  ) {}

  /**
   * The document, or its first syntax error (a duplicate key is one) at its place, the message's first line.
   * A tag the core schema does not know (`!custom`, `!!js/function`) is an error too, and so is an alias
   * (`*name`): values are read node by node, where an alias would stand for nothing, and a file written by
   * hand never needs one.
   */
  static parse(text: string, shown: string): YamlSource | { at: string; message: string } {
    const lc = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true, prettyErrors: false });
    const place = (pos: number) => {
      const { line, col } = lc.linePos(pos);
      return `${shown}:${line}:${col}`;
    };
    const e = doc.errors[0] ?? doc.warnings.find((w) => w.code === "TAG_RESOLVE_FAILED");
    // the package's recursion ran out of stack (its message names a JavaScript RangeError)
    if (e?.code === "RESOURCE_EXHAUSTION") return { at: place(e.pos[0]), message: tooDeep };
    if (e !== undefined) return { at: place(e.pos[0]), message: e.message.split("\n")[0]! };
    let refused: { at: string; message: string } | null = null;
    visit(doc, {
      Alias(_, node) {
        refused = { at: place(node.range?.[0] ?? 0), message: `an alias (*${node.source}) is not supported here: write the value out` };
        return visit.BREAK;
      },
      Collection(_, node, path) {
        // (the path also holds the document and pairs: a short one needs no count)
        if (path.length < MAX_DEPTH || path.filter(isCollection).length < MAX_DEPTH) return;
        refused = { at: place(node.range?.[0] ?? 0), message: tooDeep };
        return visit.BREAK;
      },
    });
    return refused ?? new YamlSource(doc, lc, shown);
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
