// Loading a program's modules: the entry file and every `from "./x.vvm" import ...`, recursively,
// each parsed once by canonical path (realpath). Missing files, unreadable files and cycles are E090 at the import.
import path from "node:path";
import type { FromImport, Program, Span } from "../../grammar/ast.ts";
import { diagnostic, type Diagnostic } from "../../grammar/diagnostics.ts";
import { parse } from "../../grammar/index.ts";
import { readSource } from "./source.ts";

export interface LoadedModule {
  /** canonical absolute path */
  path: string;
  source: string;
  /** null when the parser could not build a tree */
  program: Program | null;
  /** the parser reported an error: later phases skip this module to avoid cascades */
  parseFailed: boolean;
  /** top-level `from ... import` statements that resolved, with the canonical path they name */
  imports: Map<FromImport, string>;
}

interface LoadResult {
  /** canonical path of the entry (or the path as given when it cannot be resolved) */
  entry: string;
  /** loaded modules, dependencies before the modules that import them (the order they run in) */
  modules: LoadedModule[];
  diagnostics: Diagnostic[];
}

const FILE_START: Span = { line: 1, col: 1, endLine: 1, endCol: 2 };

/**
 * `longSync` is told before each module is parsed: parsing (and what the checker does after the last read)
 * runs without a turn of the event loop, for seconds on a huge program, so a Ctrl-C handler would not be heard.
 */
export async function loadProgram(entryPath: string, longSync?: () => void): Promise<LoadResult> {
  const diagnostics: Diagnostic[] = [];
  const abs = path.resolve(entryPath);
  const first = await readSource(abs);
  if (!first.ok) {
    const span = { line: first.line, col: first.col, endLine: first.line, endCol: first.col + 1 };
    diagnostics.push(diagnostic("E001", `cannot check ${path.basename(abs)}: ${first.reason}`, first.path, span));
    return { entry: first.path, modules: [], diagnostics };
  }
  // a .vvm name that a link takes to another kind of file (a cloned repository's main.vvm -> ~/.aws/credentials):
  // parsed, its lines would be shown under carets, on the terminal and in CI logs
  if (abs.endsWith(".vvm") && !first.path.endsWith(".vvm")) {
    diagnostics.push(diagnostic("E001", `cannot check ${path.basename(abs)}: it leads through a symbolic link to ${first.path}, not a .vvm file`, abs, { line: 1, col: 1, endLine: 1, endCol: 1 }));
    return { entry: first.path, modules: [], diagnostics };
  }

  const byPath = new Map<string, LoadedModule>();
  const order: LoadedModule[] = [];
  /** modules whose imports are being loaded: a path on this stack imported again is a cycle */
  const stack: string[] = [];
  /** each module's name in cycle messages, worked out once: cycles through a long chain name its modules again and again */
  const shown = new Map<string, string>();
  const show = (p: string): string => {
    let name = shown.get(p);
    if (name === undefined) shown.set(p, (name = displayName(p, first.path)));
    return name;
  };

  const load = async (file: string, source: string): Promise<void> => {
    longSync?.();
    const parsed = parse(source, file); // never throws: every failure is a diagnostic
    for (const d of parsed.diagnostics) diagnostics.push(d);
    const mod: LoadedModule = {
      path: file,
      source,
      program: parsed.program,
      parseFailed: parsed.diagnostics.some((d) => d.severity === "error"),
      imports: new Map(),
    };
    byPath.set(file, mod);
    stack.push(file);
    for (const s of mod.program?.body ?? []) {
      if (s.kind !== "FromImport") continue;
      const spec = s.path.value;
      if (!/^\.\.?\//.test(spec) && !path.isAbsolute(spec)) {
        diagnostics.push(diagnostic("E090", `module path "${spec}" must start with ./ or ../ (relative to this file) or be an absolute path`, file, s.path.span));
        continue;
      }
      const target = path.resolve(path.dirname(file), spec);
      const read = byPath.has(target) ? null : await readSource(target);
      if (read && !read.ok) {
        const why = read.missing ? `module not found: ${target}` : `cannot load module ${spec}: ${read.reason}`;
        diagnostics.push(diagnostic("E090", why, file, s.path.span));
        continue;
      }
      // a module is a .vvm file, links followed: a cloned repository's import of ~/.aws/credentials (or of a
      // link to it) would have its lines shown in the parser's diagnostics, on the terminal and in CI logs
      if (read && !read.path.endsWith(".vvm")) {
        const where = read.path === target ? "" : ` (it leads to ${displayName(read.path, first.path)})`;
        diagnostics.push(diagnostic("E090", `cannot load module ${spec}: not a .vvm file${where}`, file, s.path.span));
        continue;
      }
      const canonical = read ? read.path : target;
      const cycleStart = stack.indexOf(canonical);
      if (cycleStart >= 0) {
        const names = [...stack.slice(cycleStart), canonical].map(show);
        diagnostics.push(diagnostic("E090", `import cycle: ${names.join(" → ")}`, file, s.path.span));
        continue;
      }
      mod.imports.set(s, canonical);
      if (!byPath.has(canonical) && read && read.ok) await load(canonical, read.source);
    }
    stack.pop();
    order.push(mod);
  };

  await load(first.path, first.source);
  return { entry: first.path, modules: order, diagnostics };
}

/** Paths in messages: relative to the entry's directory when inside it. */
export function displayName(p: string, entry: string): string {
  const rel = path.relative(path.dirname(entry), p);
  // beside or below the entry, or a step or two up (`../lib/m.vvm`): relative; farther away: absolute
  const ups = rel.split(path.sep).filter((part) => part === "..").length;
  return rel && !path.isAbsolute(rel) && ups <= 2 ? rel : p;
}

export { FILE_START };
