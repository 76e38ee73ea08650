// `vvm` command line: argument parsing and dispatch. Commands live in src/commands/.
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { readFileSync } from "node:fs";
import { EXIT, type CliIO } from "./io.ts";
import type { RunFlags } from "./commands/run.ts";
import { parseDuration } from "../runtime/duration.ts";

// Sources run from src/ (tsx) and bundled from dist/ (installed bin): the package root is one level up.
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { name?: string; version?: string };
    if (pkg.name === "vvm" && pkg.version) return pkg.version;
  } catch {
    // not installed as a package (a copied bundle)
  }
  return "unknown";
}
const version = packageVersion();

function nonBlank(value: string): string {
  if (value.trim() === "") throw new InvalidArgumentError("expected a value, got an empty one");
  return value;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a whole number of at least 1");
  return n;
}

function duration(value: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new InvalidArgumentError('expected a duration such as "500ms", "30s" or "2m"');
  return ms;
}

/** Runs the CLI and resolves to the process exit code. Never throws for a user's mistake. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  let exitCode: number = EXIT.ok;
  const program = new Command("vvm")
    .description("Run and check VVM programs")
    .version(version, "-V, --version")
    .exitOverride()
    .configureOutput({
      // --help and --version answer what was asked, on stdout; usage mistakes go to stderr
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .showHelpAfterError("(run 'vvm --help' for usage)");

  program
    .command("check")
    .description("parse and validate a program; exit 0 when valid, 2 on errors")
    .argument("<file>", "the .vvm program")
    .action(async (file: string) => {
      // Commands load on demand: `vvm check` never pays for the interpreter, `--help` for neither.
      const { checkCommand } = await import("./commands/check.ts");
      exitCode = await checkCommand(file, io);
    });

  program
    .command("run")
    .description("validate and run a program; prints its exports as JSON on stdout")
    .argument("<file>", "the .vvm program")
    .addOption(
      new Option("--provider <name>", "model provider (auto: anthropic when ANTHROPIC_API_KEY is set, else sim)")
        .choices(["auto", "anthropic", "sim", "script"])
        .default("auto"),
    )
    .option("--script <file>", "scripted replies (YAML or JSON) for the script provider; implies --provider script")
    .option("--concurrency <n>", "items each pmap runs at once (nested pmaps multiply)", positiveInt, 8)
    .option("--judge-model <model>", "model for predicates, semantic cases, choose and require", nonBlank, "haiku")
    .option("--trace <file>", "write one JSON event per call, judge and statement to this file", nonBlank)
    .addOption(
      new Option("--lock-timeout <duration>", "longest wait for a memory lock before error(kind=\"locked\"); a bare number is seconds")
        .argParser(duration)
        .default(60_000, "60s"),
    )
    .option("--memory-budget <tokens>", "token budget for retained facts in the Memory Context", positiveInt, 2000)
    .action(async (file: string, flags: RunFlags) => {
      const { runCommand } = await import("./commands/run.ts");
      exitCode = await runCommand(file, flags, io);
    });

  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; anything else is a usage error.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    throw err;
  }
  return exitCode;
}
