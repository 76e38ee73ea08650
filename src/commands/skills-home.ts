// Where github: skills are found: the user's skills folder, ~/.vvm/skills (spec/agent-calls.md §8 "Skills").
import path from "node:path";
import { homeDir, type CliIO } from "../io.ts";

/**
 * Null when HOME is empty or relative: joined onto it, ~/.vvm/skills would be the working directory's
 * .vvm/skills, where a cloned repository can put a folder that passes for the user's installed skill.
 */
export function skillsHome(io: CliIO): string | null {
  const home = homeDir(io);
  return path.isAbsolute(home) ? path.join(home, ".vvm", "skills") : null;
}
