// Skills as the checker loads them and the call layer hands them to agents (spec/agent-calls.md §8 "Skills"):
// a folder with a SKILL.md (YAML front matter with a description, then instructions), found from its import's
// source. A skill that could not be loaded carries the reason, so a call that uses it can say why it failed.

export type LoadedSkill =
  | {
      ok: true;
      name: string;
      source: string;
      /** the skill folder's real path: the agent may read anything in it */
      dir: string;
      description: string;
      instructions: string;
    }
  | { ok: false; name: string; source: string; problem: string };

/** The text an agent's skills add after its prompt: each skill's description and instructions, and where its files are. */
export function skillsPrompt(skills: readonly Extract<LoadedSkill, { ok: true }>[], show: (dir: string) => string): string {
  const parts = skills.map(
    (s) => `<skill name=${JSON.stringify(s.name)} folder=${JSON.stringify(show(s.dir))}>\n${s.description}\n\n${s.instructions}\n</skill>`,
  );
  return `You have these skills. Follow a skill's instructions when the task calls for it; its folder's files are yours to read (read_file, list_files, search_files).\n\n${parts.join("\n\n")}`;
}
