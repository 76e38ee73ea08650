// Process wiring for the CLI: real streams, Ctrl-C, and the last line of defence against internal bugs.
import { fstatSync } from "node:fs";
import { createInterface } from "node:readline";
import { format, inspect, type InspectOptions } from "node:util";
import { main } from "./cli.ts";
import { EXIT } from "./io.ts";
import { vvmLine } from "./printable.ts";
import { mappedStack } from "./stack-map.ts";

/**
 * One question on the terminal (stderr, so stdout stays the command's output); null on Ctrl-C or end of input.
 * The terminal gives a Ctrl-C typed at the question to readline rather than as a signal: it interrupts the
 * command as one would anywhere else. A signal that stops the command (SIGTERM, a SIGINT sent to the process)
 * ends the question too, unanswered.
 */
function ask(question: string, interrupt: () => void, stopped: AbortSignal): Promise<string | null> {
  return new Promise((resolve) => {
    if (stopped.aborted) return resolve(null);
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    let answered = false;
    const stop = () => rl.close();
    stopped.addEventListener("abort", stop);
    rl.on("SIGINT", () => {
      rl.close();
      interrupt();
    });
    rl.on("close", () => {
      stopped.removeEventListener("abort", stop);
      if (!answered) resolve(null);
    });
    rl.question(question, (answer) => {
      answered = true;
      rl.close();
      resolve(answer);
    });
  });
}

/** Distinct console messages remembered for saying each once (past that, one may be said again). */
const MAX_REMEMBERED = 1000;

/**
 * What libraries print to the console on their own (the SDK warns on every request that names a deprecated model
 * id) goes to stderr as vvm's own lines do: prefixed, its control characters escaped, and each distinct message
 * once a run rather than once per call. Never to stdout, which carries only the command's output.
 */
function consoleToStderr(): void {
  const said = new Set<string>();
  const say = (...args: unknown[]) => {
    const text = format(...args);
    // a bare console.log() is a library's spacing, not a message
    if (text.trim() === "" || said.has(text)) return;
    // a library that logs something new on every request must not grow the set for the whole run
    if (said.size >= MAX_REMEMBERED) said.clear();
    said.add(text);
    process.stderr.write(text.split("\n").map(vvmLine).join(""));
  };
  for (const method of ["log", "info", "warn", "error", "debug", "trace"] as const) console[method] = say;
  // dir writes to stdout itself rather than through log
  console.dir = (item: unknown, options?: InspectOptions) => say(inspect(item, options));
}

export async function start(): Promise<void> {
  consoleToStderr();
  const controller = new AbortController();
  let interrupts = 0;
  // SIGTERM (kill, timeout, a CI job or container being stopped) asks for the same clean stop as Ctrl-C: killed
  // outright, a run left its state.md "running", its memory locks and vvm test its copies of the program behind
  let terminated = false;
  let commandSays = false;
  const interrupt = () => {
    interrupts++;
    // First Ctrl-C stops the program cleanly (pending calls aborted, locks released); a second one exits at once.
    if (interrupts > 1) {
      // a command that says a Ctrl-C itself has said nothing yet, and now cannot
      if (commandSays) process.stderr.write(`${process.stderr.isTTY ? "\n" : ""}vvm: interrupted again: stopped at once; what the command had under way may be left unfinished (vvm memory doctor says what)\n`);
      process.exit(terminated ? EXIT.terminated : EXIT.interrupted);
    }
    // the line break ends the terminal's echo of ^C
    if (!commandSays) process.stderr.write("\nvvm: interrupted, stopping…\n");
    else if (process.stderr.isTTY) process.stderr.write("\n");
    controller.abort();
  };
  const terminate = () => {
    terminated = true;
    interrupt();
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", terminate);
  // Node hands a signal to JavaScript only when the event loop turns: while a program computes without a
  // pause, the handler is taken away, so Ctrl-C ends the process as it would any program (exit 130), and put
  // back when the loop turns again
  let listening = true;
  const ctrlCEndsAtOnce = () => {
    if (!listening) return;
    listening = false;
    process.removeListener("SIGINT", interrupt);
    process.removeListener("SIGTERM", terminate);
    setImmediate(() => {
      listening = true;
      process.on("SIGINT", interrupt);
      process.on("SIGTERM", terminate);
    });
  };
  // A reader that goes away (`vvm run x.vvm | head`) is not an error of the program: stop writing quietly.
  // Any other failure to write the exports (a full disk) is said on stderr; stderr's own failures can't be.
  // Said once, and exit 74 whatever the command's own code: a command that writes line by line (vvm test)
  // fails on every line, and its code, set when it returns, came after the first failure.
  let stdoutFailed = false;
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE" || stdoutFailed) return;
    stdoutFailed = true;
    process.stderr.write(`vvm: cannot write to stdout (${err.code ?? err.message})\n`);
    process.exitCode = EXIT.output;
  });
  process.stderr.on("error", () => {});
  // a throw in a callback, or a promise nobody awaited, is a bug as much as a throw out of main: said the same
  // way, with the exit code for one (Node's own report would say 1, the code of an error export)
  const crash = (err: unknown) => process.exit(fatal(err));
  process.on("uncaughtException", crash);
  process.on("unhandledRejection", crash);
  try {
    const code = await main(process.argv.slice(2), {
      stdout: process.stdout,
      stderr: process.stderr,
      env: process.env,
      cwd: process.cwd(),
      stderrIsTTY: Boolean(process.stderr.isTTY),
      signal: controller.signal,
      stdin: () => {
        // `< folder` makes standard input a directory, which Node reads as empty: say what it is (EISDIR)
        if (fstatSync(0).isDirectory()) throw Object.assign(new Error("a directory"), { code: "EISDIR" });
        return process.stdin;
      },
      ask: process.stdin.isTTY && process.stderr.isTTY ? (question) => ask(question, interrupt, controller.signal) : undefined,
      ctrlCEndsAtOnce,
      ctrlCSaidByCommand: () => (commandSays = true),
    });
    process.exitCode = stdoutFailed ? EXIT.output : terminated && code === EXIT.interrupted ? EXIT.terminated : code;
  } catch (err) {
    process.exitCode = fatal(err);
  }
}

/**
 * What ended vvm past every handler, said and given its exit code: the system's limit on open files
 * (`ulimit -n`, met by a wide pmap or by a module loaded on first use) is the machine's, not a bug of ours.
 */
function fatal(err: unknown): number {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === "EMFILE" || code === "ENFILE") {
    const which = code === "EMFILE" ? "this process's limit on open files (ulimit -n)" : "the system's limit on open files";
    process.stderr.write(`vvm: stopped: ${which} was reached (${code}); raise it, or lower --concurrency, and run again\n`);
    return EXIT.system;
  }
  internalError(err);
  return EXIT.internal;
}

/** A bug of ours, said as one: what happened and where in our sources. */
function internalError(err: unknown): void {
  process.stderr.write(
    `vvm: internal error (this is a bug in vvm, not in your program; please report it with the program that triggered it)\n${
      err instanceof Error ? mappedStack(err.stack ?? err.message) : String(err)
    }\n`,
  );
}
