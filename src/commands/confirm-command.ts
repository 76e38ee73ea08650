// bash="prompt": the question put to the person at the terminal before a model's command runs. The
// runtime only calls this back; the CLI owns the terminal. Questions are asked one at a time (parallel
// tool uses and pmap calls wait their turn), and the command is shown exactly, its control characters
// escaped so it cannot rewrite the terminal.
import pc from "picocolors";
import type { CommandQuestion } from "../../runtime/tools/bash-tool.ts";
import { printable } from "../printable.ts";

type Confirm = (q: CommandQuestion) => Promise<boolean>;

/**
 * A confirm callback over `ask` (one line from the terminal), or null when there is no terminal: then
 * bash="prompt" denies every command. `before` runs before each question (it erases the progress line).
 */
export function commandConfirm(ask: ((question: string) => Promise<string | null>) | undefined, color: ReturnType<typeof pc.createColors>, before: () => void): Confirm | null {
  if (ask === undefined) return null;
  let queue: Promise<unknown> = Promise.resolve();
  return (q) => {
    const mine = queue.then(async () => {
      before();
      const question =
        `vvm: agent ${printable(q.agent, false)} asks to run a command in ${printable(q.cwd, false)}:\n` +
        `${printable(q.command)
          .split("\n")
          .map((l) => `  ${color.bold(l)}`)
          .join("\n")}\n` +
        `Run it? [y/N] `;
      const answer = await ask(question);
      return answer !== null && /^\s*y(es)?\s*$/i.test(answer);
    });
    queue = mine.catch(() => {});
    return mine;
  };
}
