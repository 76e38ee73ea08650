// Process wiring for the CLI: real streams, Ctrl-C, and the last line of defence against internal bugs.
import { main } from "./cli.ts";
import { EXIT } from "./io.ts";

export async function start(): Promise<void> {
  const controller = new AbortController();
  let interrupts = 0;
  process.on("SIGINT", () => {
    interrupts++;
    // First Ctrl-C stops the program cleanly (pending calls aborted, locks released); a second one exits at once.
    if (interrupts > 1) process.exit(EXIT.interrupted);
    process.stderr.write("\nvvm: interrupted, stopping…\n");
    controller.abort();
  });
  try {
    process.exitCode = await main(process.argv.slice(2), {
      stdout: process.stdout,
      stderr: process.stderr,
      env: process.env,
      cwd: process.cwd(),
      stderrIsTTY: Boolean(process.stderr.isTTY),
      signal: controller.signal,
    });
  } catch (err) {
    process.stderr.write(
      `vvm: internal error (this is a bug in vvm, not in your program; please report it with the program that triggered it)\n${
        err instanceof Error ? (err.stack ?? err.message) : String(err)
      }\n`,
    );
    process.exitCode = EXIT.internal;
  }
}
