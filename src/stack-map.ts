// An internal error's stack, with the bundle's positions (dist/*.js) mapped to our TypeScript sources through
// dist/'s source maps. Mapped here, once, when such an error is printed: Node's own support
// (process.setSourceMapsEnabled) reads and parses the map of every module as it loads, secretlint's too,
// which cost 20–45 ms of every start.
import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** A stack frame's position: `file:///…/x.js:12:5` or `/…/x.js:12:5`. */
const POSITION = /(file:\/\/[^\s()]+?\.js|\/[^\s()]+?\.js):(\d+):(\d+)/g;

export function mappedStack(stack: string): string {
  const maps = new Map<string, SourceMap | null>();
  return stack.replace(POSITION, (whole, file: string, line: string, column: string) => {
    const js = file.startsWith("file:") ? fileURLToPath(file) : file;
    if (!maps.has(js)) maps.set(js, mapOf(js));
    const entry = maps.get(js)?.findEntry(Number(line) - 1, Number(column) - 1);
    if (entry === undefined || !("originalSource" in entry)) return whole;
    const source = entry.originalSource.startsWith("file:") ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(js), entry.originalSource);
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}

/** The source map beside a bundle file, or null when there is none (a package's own file) or it is unreadable. */
function mapOf(js: string): SourceMap | null {
  try {
    return new SourceMap(JSON.parse(readFileSync(`${js}.map`, "utf8")));
  } catch {
    return null;
  }
}
