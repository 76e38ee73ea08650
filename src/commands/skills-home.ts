// Where github: skills are found: the user's skills folder, ~/.vvm/skills (spec/agent-calls.md §8 "Skills").
import os from "node:os";
import path from "node:path";
import type { CliIO } from "../io.ts";

export function skillsHome(io: CliIO): string {
  return path.join(io.env.HOME || os.homedir(), ".vvm", "skills");
}
