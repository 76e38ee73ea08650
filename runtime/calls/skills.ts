// An agent's `skills=[…]` at a call: each name must be a skill the program imported and the checker loaded
// (spec/agent-calls.md §8 "Skills"). Their instructions follow the agent's prompt; their folders become readable.
import path from "node:path";
import { skillsPrompt, type LoadedSkill } from "../skills.ts";
import { makeError, thrown, notStringList, type Site, type Value, type VObject } from "../values.ts";

type ReadySkill = Extract<LoadedSkill, { ok: true }>;

/** The agent's skills, or the error value the call returns (a skill not imported, or not loadable). */
export function agentSkills(v: Value | undefined, loaded: ReadonlyMap<string, LoadedSkill> | undefined, site: Site): ReadySkill[] | VObject {
  if (v === undefined || v === null) return [];
  const got = notStringList(v);
  if (got !== null) throw thrown(`agent skills= must be a list of skill names, got ${got}`, site);
  const out: ReadySkill[] = [];
  for (const name of v as string[]) {
    const skill = loaded?.get(name);
    if (skill === undefined) return makeError("rejected", `skill '${name}' is not imported by this program (import "${name}" from "..."), so the agent cannot have it`);
    if (!skill.ok) return makeError("rejected", `skill '${name}' (from "${skill.source}") cannot be loaded: ${skill.problem}`);
    if (!out.includes(skill)) out.push(skill);
  }
  return out;
}

/** The system prompt with the skills' instructions after it; folders shown relative to the program's directory when inside it. */
export function withSkills(system: string, skills: readonly ReadySkill[], programDir: string): string {
  if (skills.length === 0) return system;
  const show = (dir: string) => {
    const rel = path.relative(programDir, dir);
    return rel === "" ? "." : rel.startsWith("..") || path.isAbsolute(rel) ? dir : rel;
  };
  return [system, skillsPrompt(skills, show)].filter((t) => t !== "").join("\n\n");
}
