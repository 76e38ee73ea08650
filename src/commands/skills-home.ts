// Where github: skills are found: the user's skills folder, ~/.vvm/skills (spec/agent-calls.md §8 "Skills").
import path from "node:path";
import { homeDir, type CliIO } from "../io.ts";

export function skillsHome(io: CliIO): string {
  return path.join(homeDir(io), ".vvm", "skills");
}
