// What the validator hands to the interpreter: every module of the program, parsed once and resolved.
import type { ExportStmt, FromImport, Program } from "../grammar/ast.ts";
import type { Diagnostic } from "../grammar/diagnostics.ts";
import type { Layout } from "./resolve/scopes.ts";
import type { LoadedSkill } from "../runtime/skills.ts";

export interface ModuleInfo {
  /** canonical absolute path (the module's identity: each module runs once per run) */
  path: string;
  source: string;
  program: Program;
  /** where every name lives (scopes and frame slots), written by the checker, read by the interpreter */
  layout: Layout;
  /** the key each `export <expression>` is exported under: its source text, normalised */
  exportKeys: Map<ExportStmt, string>;
  /** canonical path of the module each `from "..." import` refers to */
  imports: Map<FromImport, string>;
}

export interface CheckResult {
  /** canonical path of the entry module */
  entry: string;
  /** every loaded module by canonical path; empty entries are never present for unreadable files */
  modules: Map<string, ModuleInfo>;
  /** skill name → source, program-wide (E030–E032) */
  skills: Map<string, string>;
  /** skill name → its SKILL.md as loaded from the source, or why it could not be (W025) */
  skillFiles: Map<string, LoadedSkill>;
  /** all errors and warnings, sorted */
  diagnostics: Diagnostic[];
  /** text of every file read, including ones the parser could not turn into a tree (for source lines in messages) */
  sources?: Map<string, string>;
}
