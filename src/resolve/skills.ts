// The program-wide skill registry (spec/language.md §12): skill name → source, built module by module in load order.
import type { Program, Span } from "../../grammar/ast.ts";
import { diagnostic, type Diagnostic } from "../../grammar/diagnostics.ts";

/** `github:owner/repo` (optionally a sub-path or `@ref`), `npm:pkg` (scoped too), or a `./` / `../` path. */
const KNOWN_SOURCE = [
  /^github:[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+(\/[^\s]*)?(@[^\s]+)?$/,
  /^npm:(@[a-z0-9._~-]+\/)?[a-z0-9._~-]+(@[^\s]+)?$/i,
  /^\.\.?\/\S/,
];

export function isKnownSkillSource(source: string): boolean {
  return KNOWN_SOURCE.some((re) => re.test(source));
}

/** Where a skill name was first imported: the module and the import's source string. */
interface Registered {
  source: string;
  path: string;
  line: number;
  span: Span;
}

export class SkillRegistry {
  readonly skills = new Map<string, string>();
  /** each name's first import (its source is resolved from that module) */
  readonly where = new Map<string, Registered>();

  /** Registers one module's top-level skill imports; returns the names it imports (E030 ones excluded). */
  addModule(path: string, program: Program, diags: Diagnostic[], display: (p: string) => string): Set<string> {
    const local = new Map<string, number>();
    for (const s of program.body) {
      if (s.kind !== "SkillImport") continue;
      const name = s.skill.value;
      const source = s.source.value;
      if (name.trim() === "" || source.trim() === "") {
        const empty = name.trim() === "" ? s.skill : s.source;
        diags.push(diagnostic("E030", `skill import has an empty ${empty === s.skill ? "name" : "source"}`, path, empty.span));
        continue;
      }
      const firstLine = local.get(name);
      if (firstLine !== undefined) {
        diags.push(diagnostic("E031", `skill '${name}' is already imported in this module at line ${firstLine}`, path, s.skill.span));
        continue;
      }
      local.set(name, s.span.line);
      if (!isKnownSkillSource(source)) {
        diags.push(
          diagnostic("W001", `unknown skill source form "${source}" (known: github:owner/repo, npm:package, ./path or ../path)`, path, s.source.span),
        );
      }
      const prev = this.where.get(name);
      if (prev && prev.source !== source) {
        diags.push(
          diagnostic(
            "E032",
            `skill '${name}' is imported from "${source}" here but from "${prev.source}" in ${display(prev.path)}:${prev.line}`,
            path,
            s.source.span,
          ),
        );
        continue;
      }
      if (!prev) {
        this.where.set(name, { source, path, line: s.span.line, span: s.source.span });
        this.skills.set(name, source);
      }
    }
    return new Set(local.keys());
  }
}
