// `checkProgram`: load every module of a program, build the skill registry, resolve names, and collect
// all diagnostics (spec/language.md §16). Never throws for a user's mistake; spec/diagnostics.md lists every code.
import path from "node:path";
import type { AgentDecl, ExportStmt, InputDecl, Program, Span } from "../grammar/ast.ts";
import { diagnostic, sortDiagnostics, sourceLine, type Diagnostic } from "../grammar/diagnostics.ts";
import { expressionKey } from "../grammar/index.ts";
import type { CheckResult, ModuleInfo } from "./program.ts";
import { displayName, FILE_START, loadProgram, type LoadedModule } from "./resolve/loader.ts";
import { resolveModule } from "./resolve/resolver.ts";
import { buildLayout, type Layout } from "./resolve/scopes.ts";
import { isKnownSkillSource, SkillRegistry } from "./resolve/skills.ts";
import type { LoadedSkill } from "../runtime/skills.ts";

interface CheckOptions {
  /** the user's skills folder (~/.vvm/skills), where github: skills are found; null: none */
  skillsHome?: string | null;
  /**
   * Told when the check is about to compute without letting the event loop turn (parsing, resolving): for
   * seconds on a huge program. The CLI lets Ctrl-C end the process at once until the loop turns again.
   */
  longSync?: () => void;
}

export async function checkProgram(entryPath: string, opts: CheckOptions = {}): Promise<CheckResult> {
  const loaded = await loadProgram(entryPath, opts.longSync);
  const diags: Diagnostic[] = [...loaded.diagnostics];
  const byPath = new Map(loaded.modules.map((m) => [m.path, m]));
  const display = (p: string): string => displayName(p, loaded.entry);
  const layouts = new Map<string, Layout>();
  for (const m of loaded.modules) if (m.program) layouts.set(m.path, buildLayout(m.program));

  // Imported names must be exported (E090); imported values count as used in their module (W030).
  const externallyUsed = new Map<string, Set<string>>();
  // Only the entry module takes inputs (E023): each imported module's first importer, for the message.
  const importedBy = new Map<string, string>();
  // each module's exports, found once: a module imported n times was scanned n times (quadratic)
  const exportsCache = new Map<string, ReturnType<typeof exportsOf>>();
  for (const m of loaded.modules) {
    for (const [imp, target] of m.imports) {
      if (target !== loaded.entry && !importedBy.has(target)) importedBy.set(target, display(m.path));
      const t = byPath.get(target);
      if (!imp.isAgent) {
        let used = externallyUsed.get(target);
        if (!used) externallyUsed.set(target, (used = new Set()));
        used.add(imp.name);
      }
      if (!t?.program || t.parseFailed) continue; // its own errors are reported; do not cascade
      let ex = exportsCache.get(t.path);
      if (!ex) exportsCache.set(t.path, (ex = exportsOf(t.program, layouts.get(t.path)!)));
      const spec = imp.path.value;
      if (imp.isAgent && !ex.agents.has(imp.name)) {
        const hint = ex.values.has(imp.name) ? ` (it exports a value '${imp.name}': import it without @)` : "";
        diags.push(diagnostic("E090", `agent '@${imp.name}' is not exported by "${spec}"${hint}`, m.path, imp.nameSpan));
      } else if (!imp.isAgent && !ex.values.has(imp.name) && !ex.open) {
        const hint = ex.agents.has(imp.name) ? ` (it exports an agent: import @${imp.name})` : "";
        diags.push(diagnostic("E090", `'${imp.name}' is not exported by "${spec}"${hint}`, m.path, imp.nameSpan));
      }
    }
  }

  // Skills, in load order: dependencies register before the modules that import them.
  const registry = new SkillRegistry();
  const moduleSkills = new Map<string, Set<string>>();
  for (const m of loaded.modules) {
    if (m.program) moduleSkills.set(m.path, registry.addModule(m.path, m.program, diags, display));
  }
  const skillFiles = await loadSkills(registry, opts.skillsHome ?? null, diags);
  opts.longSync?.();

  const modules = new Map<string, ModuleInfo>();
  const sources = new Map<string, string>();
  const agentDecls = new Map<string, AgentDecl | null>();
  for (const m of loaded.modules) {
    sources.set(m.path, m.source);
    if (!m.program) continue;
    const program = m.program;
    const layout = layouts.get(m.path)!;
    try {
      if (m.parseFailed) {
        modules.set(m.path, info(m, program, layout));
        continue;
      }
      const importedAgents = new Map<string, AgentDecl | null>();
      for (const [imp, target] of m.imports) {
        if (imp.isAgent) importedAgents.set(imp.alias ?? imp.name, agentDeclIn(target, imp.name, byPath, agentDecls));
      }
      const found = resolveModule(m.path, program, layout, {
        importedAgents,
        skills: moduleSkills.get(m.path) ?? new Set(),
        externallyUsed: externallyUsed.get(m.path) ?? new Set(),
        importedBy: importedBy.get(m.path) ?? null,
        programDir: path.dirname(loaded.entry),
      });
      // (a loop: a spread of 200,000 warnings would overflow the argument limit)
      for (const d of found) diags.push(d);
      modules.set(m.path, info(m, program, layout));
    } catch (err) {
      // Tree walks recurse; absurd nesting that the parser accepted must still end in a diagnostic.
      if (!(err instanceof RangeError)) throw err;
      diags.push(diagnostic("E001", "program is nested too deeply to check", m.path, FILE_START));
    }
  }

  return { entry: loaded.entry, modules, skills: registry.skills, skillFiles, diagnostics: sortDiagnostics(diags), sources };
}

/** Each imported skill's SKILL.md, read now; one that cannot be loaded is W025 at its import. */
async function loadSkills(registry: SkillRegistry, skillsHome: string | null, diags: Diagnostic[]): Promise<Map<string, LoadedSkill>> {
  const out = new Map<string, LoadedSkill>();
  if (registry.where.size === 0) return out;
  // loaded only for programs that import skills
  const { loadSkill } = await import("./resolve/skill-files.ts");
  const loaded = await Promise.all([...registry.where].map(([name, w]) => loadSkill(name, w.source, w.path, skillsHome)));
  for (const skill of loaded) {
    out.set(skill.name, skill);
    const w = registry.where.get(skill.name)!;
    // (an unknown source form is W001 already)
    if (skill.ok || !isKnownSkillSource(w.source)) continue;
    diags.push(diagnostic("W025", `skill '${skill.name}' cannot be loaded: ${skill.problem} (calls of agents with this skill fail with error(kind="rejected"))`, w.path, w.span));
  }
  return out;
}

/** The inputs the program takes: the entry module's module-level `input` declarations, in source order (spec/inputs.md). */
export function declaredInputs(result: CheckResult): InputDecl[] {
  const body = result.modules.get(result.entry)?.program.body ?? [];
  return body.filter((s): s is InputDecl => s.kind === "InputDecl");
}

function info(m: LoadedModule, program: Program, layout: Layout): ModuleInfo {
  const exportKeys = new Map<ExportStmt, string>();
  for (const s of program.body) if (s.kind === "Export" && s.target.kind === "expr") exportKeys.set(s, sourceText(m.source, s.target.expr.span));
  return { path: m.path, source: m.source, program, layout, exportKeys, imports: m.imports };
}

/** The text a span covers (1-based line/column, end exclusive), normalised as an export key. */
export function sourceText(source: string, span: Span): string {
  const line = (l: number) => sourceLine(source, l) ?? "";
  if (span.line === span.endLine) return expressionKey(line(span.line).slice(span.col - 1, span.endCol - 1));
  const parts = [line(span.line).slice(span.col - 1)];
  for (let l = span.line + 1; l < span.endLine; l++) parts.push(line(l));
  parts.push(line(span.endLine).slice(0, span.endCol - 1));
  return expressionKey(parts.join("\n"));
}

/** Names a module exports: `export x`, `export @a`, and the keys of `export pack(a, k=v)` (dialect). */
/**
 * What a module exports, as far as is known before it runs. `open`: an exported expression whose keys
 * only the run decides (a call other than the standard `pack`, a name holding an object…), so importing
 * a name that is not listed is left to the run.
 */
function exportsOf(program: Program, layout: Layout): { values: Set<string>; agents: Set<string>; open: boolean } {
  const values = new Set<string>();
  const agents = new Set<string>();
  let open = false;
  const bound = layout.module;
  const agentNames = layout.agents;
  for (const s of program.body) {
    if (s.kind !== "Export") continue;
    const t = s.target;
    switch (t.kind) {
      case "agent":
        agents.add(t.name);
        break;
      case "name":
        // a bound name exports its value; a name that is only an agent is configuration (`import @name`)
        if (agentNames.has(t.name)) agents.add(t.name);
        if (bound.has(t.name) || !agentNames.has(t.name)) values.add(t.name);
        break;
      case "expr": {
        const e = t.expr;
        if (e.kind === "Call" && e.callee.kind === "Name" && e.callee.name === "pack" && !bound.has("pack")) {
          for (const a of e.args) if (a.kind === "Name") values.add(a.name);
          for (const k of e.kwargs) values.add(k.name);
        } else if (e.kind === "Object") {
          for (const en of e.entries) values.add(en.key);
        } else {
          open = true;
        }
        break;
      }
      default: {
        const never: never = t;
        return never;
      }
    }
  }
  return { values, agents, open };
}

/**
 * The declaration an exported agent name refers to, following re-exported imports. A loop, not a recursion: a
 * chain of a few thousand modules each re-exporting the agent overflowed the stack, and every module of it was
 * then reported as "nested too deeply". `memo` holds what each module's name was found to be, so each module of
 * a chain is read once for the whole program rather than once per module importing through it.
 */
function agentDeclIn(modPath: string, name: string, byPath: Map<string, LoadedModule>, memo: Map<string, AgentDecl | null>): AgentDecl | null {
  const visited = new Set<string>();
  let found: AgentDecl | null = null;
  for (let at: string | null = modPath; at !== null; ) {
    const key = `${at}\0${name}`;
    const known = memo.get(key);
    if (known !== undefined) {
      found = known;
      break;
    }
    const m = byPath.get(at);
    // back at a module and name already on this chain: an import cycle, where nothing declares the agent
    if (!m?.program || visited.has(key)) break;
    visited.add(key);
    const decl = m.program.body.find((s): s is AgentDecl => s.kind === "AgentDecl" && s.name === name);
    if (decl) {
      found = decl;
      break;
    }
    at = null;
    for (const [imp, target] of m.imports) {
      if (imp.isAgent && (imp.alias ?? imp.name) === name) {
        at = target;
        name = imp.name;
        break;
      }
    }
  }
  for (const key of visited) memo.set(key, found);
  return found;
}
