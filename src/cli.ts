// `vvm` command line: argument parsing and dispatch. Commands live in src/commands/.
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { readFileSync } from "node:fs";
import { EXIT, type CliIO } from "./io.ts";
import { printable } from "./printable.ts";
import type { RunFlags } from "./commands/run.ts";
import type { ArgFlag } from "./commands/inputs.ts";
import type { CheckFlags } from "./commands/check.ts";
import type { TestFlags } from "./commands/test.ts";
import type { WhereFlags as MemoryFlags } from "./commands/memory.ts";
import type { LogFlags } from "./commands/memory-log.ts";
import type { ShowFlags } from "./commands/memory-show.ts";
import type { SearchFlags } from "./commands/memory-search.ts";
import type { RestoreFlags } from "./commands/memory-restore.ts";
import type { ForgetFlags } from "./commands/memory-forget.ts";
import type { RmFlags } from "./commands/memory-rm.ts";
import type { DoctorFlags } from "./commands/memory-doctor.ts";
import type { RunsFlags } from "./commands/runs.ts";
import type { PruneFlags } from "./commands/runs-prune.ts";
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

function wholeNumber(value: string, least: number): number {
  // digits only: Number() would also take " 3", "0x2" and "1e9"
  if (/^\d{16,}$/.test(value)) throw new InvalidArgumentError("expected a whole number of at most 15 digits");
  const n = /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < least) throw new InvalidArgumentError(`expected a whole number of at least ${least}`);
  return n;
}

const positiveInt = (value: string) => wholeNumber(value, 1);

/** One `--input` file: a second one would silently replace the first. */
function inputFile(value: string, previous: string | undefined): string {
  if (previous !== undefined) throw new InvalidArgumentError(`--input is already ${previous}: give one file (and --arg for single values)`);
  return nonBlank(value);
}

/**
 * A repeatable `--arg name=value` (the value is decoded later, when the program's inputs are known). The list
 * starts here rather than as the option's default, which --help would print as `(default: [])`.
 */
function argFlag(value: string, previous: ArgFlag[] = []): ArgFlag[] {
  const eq = value.indexOf("=");
  const name = eq < 0 ? value : value.slice(0, eq);
  if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    // say which part is wrong: `--arg my-topic=x` has its '=', and it is the name an input cannot have
    const why = eq < 0 ? " (no '=' found)" : name === "" ? " (no name before '=')" : ` ('${name}' cannot be an input's name: ASCII letters, digits and _, not starting with a digit)`;
    throw new InvalidArgumentError(`expected name=value with an input's name, such as topic="solar power"${why}`);
  }
  return [...previous, { name, text: value.slice(eq + 1) }];
}

/** `--max-cost`: dollars, such as 0.50 or $2 */
function dollarsArg(value: string): number {
  // decimal digits only: Number() would also read 0x10 as 16 and 1e3 as 1000
  const m = /^\$?(\d+(?:\.\d*)?|\.\d+)$/.exec(value.trim());
  const n = m ? Number(m[1]) : NaN;
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError("expected an amount of dollars above 0, such as 0.50 or $2");
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
      // a mistake's message quotes what was typed: one line, its control characters escaped (commander's
      // own "(Did you mean …?)" on a line of its own joins it after a space rather than as an escaped \n)
      outputError: (s, write) => write(`${printable(s.replace(/\n$/, "").replace(/\n(\(Did you mean [^\n]*\?\))$/, " $1"), false)}\n`),
    });

  program
    .command("check")
    .description("parse and validate a program; exit 0 when valid, 2 on errors")
    .argument("<file>", "the .vvm program")
    .option("--strict", "treat warnings as errors (exit 2)")
    .action(async (file: string, flags: CheckFlags) => {
      // Commands load on demand: `vvm check` never pays for the interpreter, `--help` for neither.
      const { checkCommand } = await import("./commands/check.ts");
      exitCode = await checkCommand(file, flags, io);
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
    .option("--script <file>", "scripted replies (YAML or JSON) for the script provider; implies --provider script", nonBlank)
    .option("--strict-script", "with --script: a call no rule answers is an error (not the simulator's answer), and unused rules are listed")
    .option("--concurrency <n>", "items each pmap runs at once (nested pmaps multiply)", positiveInt, 8)
    .option("--judge-model <model>", "model for predicates, semantic cases, choose and require", nonBlank, "haiku")
    .option("--trace <file>", "write the run as JSON lines to this file: calls, judges and their attempts, tool uses, memory, statements, the summary (never prompt or reply text)", nonBlank)
    .addOption(
      new Option("--lock-timeout <duration>", "longest wait for a memory lock before error(kind=\"locked\"); a bare number is seconds")
        .argParser(duration)
        .default(60_000, "60s"),
    )
    .option("--memory-budget <tokens>", "token budget for retained facts in the Memory Context", positiveInt, 2000)
    .option("--input <file>", "a JSON object whose fields are the program's inputs; - reads it from stdin", inputFile)
    .option("--arg <name=value>", "an input's value: JSON when it parses as JSON, else the text (repeatable; wins over --input)", argFlag)
    .addOption(
      new Option("--state <mode>", "in-context: agent calls return their reply; filesystem: replies go to .vvm/runs/<run-id>/bindings/ and calls return ref values")
        .choices(["in-context", "filesystem"])
        .default("in-context"),
    )
    .option("--strict", "treat warnings as errors: nothing runs when the checker warns (exit 2)")
    .option("--allow-error-exports", "exit 0 even when an exported value is an error value (default: exit 1, exports still printed)")
    .option("--max-cost <dollars>", 'start no call once this much is spent, estimating each prompt; a refused call is error(kind="rejected") and the run exits 1', dollarsArg)
    .option("--narrate", "tell each binding, agent call and judge on stderr as the program runs")
    .option("--partial-exports", "after an uncaught error, print the exports computed before it as JSON on stdout (still exit 1)")
    .option("--usage", "after the summary line, calls, tokens and dollars per agent")
    .addOption(
      new Option("--progress <when>", "the progress line on stderr: auto (on a terminal), always (plain lines off a terminal, for CI logs), never")
        .choices(["auto", "always", "never"])
        .default("auto"),
    )
    .action(async (file: string, flags: RunFlags) => {
      const { runCommand } = await import("./commands/run.ts");
      exitCode = await runCommand(file, flags, io);
    });

  program
    .command("test")
    .description("run the tests of *.test.yaml files (scripted, offline, each in a fresh copy); exit 1 when one fails")
    .argument("[paths...]", "test files, or folders searched for *.test.yaml (default: the current directory)")
    .option("--update", "write each passing test's exports and memory as its snapshot: NAME.test.snap.yaml beside NAME.test.yaml (NAME.test.snap.yml beside a .test.yml)")
    .option("--allow-bash", "let agents with bash=\"allow\" run the commands a test's script asks for (default: refused, as a repository's tests choose them)")
    .action(async (paths: string[], flags: TestFlags) => {
      const { testCommand } = await import("./commands/test.ts");
      exitCode = await testCommand(paths, flags, io);
    });

  // `vvm memory …`: look after agent memory. Each command loads its own module on demand.
  const memory = program.command("memory").description("look after agent memory: list, show, log, search, history, diff, restore, forget, rm and doctor");
  const where = (c: Command) =>
    c
      .addOption(new Option("--scope <scope>", "the memory's scope, as the program gives it").choices(["project", "user", "path"]).default("project"))
      .option("--dir <dir>", "the project directory (default: the current directory)", nonBlank)
      .option("--program <file>", "the project of this program (its directory)", nonBlank)
      .option("--path <p>", "with --scope path: the path the program gives, relative to the project", nonBlank)
      .option("--json", "one JSON document on stdout");
  where(memory.command("ls").description("every memory under the root: key, entries, digest size, last use, health")).action(async (flags: MemoryFlags) => {
    const { memoryLs } = await import("./commands/memory-ls.ts");
    exitCode = await memoryLs(flags, io);
  });
  where(memory.command("show").description("settings, digest and the facts the next call is shown; --context: the exact Memory Context"))
    .argument("<key>", "the memory's key, as the program writes it")
    .option("--context", "print the exact Memory Context a continue call would send now")
    .option("--task <text>", "the call's task and input, which relevance recall ranks the facts against")
    .option("--memory-budget <tokens>", "token budget for retained facts, as vvm run --memory-budget", positiveInt, 2000)
    .action(async (key: string, flags: ShowFlags) => {
      const { memoryShow } = await import("./commands/memory-show.ts");
      exitCode = await memoryShow(key, flags, io);
    });
  where(memory.command("log").description("ledger entries, newest last: [seq] kind  time  agent@program:line  summary"))
    .argument("<key>", "the memory's key, as the program writes it")
    .option("--kind <kinds>", "only these kinds, separated by commas (patch, rejected, external_edit, repair, restore, forget)")
    .option("--last <n>", "only the newest N entries (read from the end of the ledger)", positiveInt)
    .option("--since <when>", "only entries since a duration ago (30m, 2h, 3d) or an ISO 8601 time")
    .option("--agent <name>", "only entries written by calls of this agent", nonBlank)
    .action(async (key: string, flags: LogFlags) => {
      const { memoryLog } = await import("./commands/memory-log.ts");
      exitCode = await memoryLog(key, flags, io);
    });
  where(memory.command("search").description("retained facts and lines of past digests, most relevant to QUERY first"))
    .argument("<key>", "the memory's key, as the program writes it")
    .argument("<query>", "the words to look for")
    .option("--limit <n>", "show at most N hits", positiveInt, 20)
    .action(async (key: string, query: string, flags: SearchFlags) => {
      const { memorySearch } = await import("./commands/memory-search.ts");
      exitCode = await memorySearch(key, query, flags, io);
    });
  where(memory.command("history").description("the digest's versions: seq, time, who (an agent or a person's edit), size"))
    .argument("<key>", "the memory's key, as the program writes it")
    .action(async (key: string, flags: MemoryFlags) => {
      const { memoryHistory } = await import("./commands/memory-history.ts");
      exitCode = await memoryHistory(key, flags, io);
    });
  where(memory.command("diff").description("a unified diff of the digest between entries A and B (B left out: digest.md now)"))
    .argument("<key>", "the memory's key, as the program writes it")
    .argument("<a>", "an entry's sequence number: the digest as it was after it")
    .argument("[b]", "another entry's sequence number (default: digest.md now)")
    .action(async (key: string, a: string, b: string | undefined, flags: MemoryFlags) => {
      const { memoryDiff } = await import("./commands/memory-history.ts");
      exitCode = await memoryDiff(key, a, b, flags, io);
    });
  // the commands that write take the memory's lock, as a call does
  const writes = (c: Command) =>
    where(c).addOption(
      new Option("--lock-timeout <duration>", "longest wait for the memory's lock; a bare number is seconds").argParser(duration).default(60_000, "60s"),
    );
  writes(memory.command("restore").description("make the digest as it was after entry SEQ current again, as a new ledger entry"))
    .argument("<key>", "the memory's key, as the program writes it")
    .argument("<seq>", "an entry's sequence number (vvm memory history lists the versions)")
    .option("--force", "restore even while digest.md is read_only (front matter)")
    .action(async (key: string, seq: string, flags: RestoreFlags) => {
      const { memoryRestore } = await import("./commands/memory-restore.ts");
      exitCode = await memoryRestore(key, seq, flags, io);
    });
  writes(memory.command("forget").description("never recall or find retained facts again; --purge also removes their text from the ledger"))
    .argument("<key>", "the memory's key, as the program writes it")
    .option("--fact <seq[:index]>", "every fact of entry SEQ, or its fact INDEX (from 0); repeatable", (v: string, prev: string[] = []) => [...prev, v])
    .option("--match <text>", "every retained fact that contains TEXT (case does not matter)")
    .option("--purge", "also rewrite the ledger without the text (facts and past digests), for data that must really be gone")
    .action(async (key: string, flags: ForgetFlags) => {
      const { memoryForget } = await import("./commands/memory-forget.ts");
      exitCode = await memoryForget(key, flags, io);
    });
  writes(memory.command("rm").description("remove a memory's whole directory (asks first on a terminal; --yes otherwise)"))
    .argument("<key>", "the memory's key, as the program writes it")
    .option("-y, --yes", "remove without asking")
    .action(async (key: string, flags: RmFlags) => {
      const { memoryRm } = await import("./commands/memory-rm.ts");
      exitCode = await memoryRm(key, flags, io);
    });
  writes(memory.command("doctor").description("check a memory (or every memory) whole; --fix repairs what can be repaired and records it"))
    .argument("[key]", "the memory's key, as the program writes it (default: every memory under the root)")
    .option("--fix", "repair under the lock what can be repaired, and record it in the ledger")
    .action(async (key: string | undefined, flags: DoctorFlags) => {
      const { memoryDoctor } = await import("./commands/memory-doctor.ts");
      exitCode = await memoryDoctor(key, flags, io);
    });

  // `vvm runs …`: the run directories of `vvm run --state filesystem`. Each command loads its own module on demand.
  const runs = program.command("runs").description("look at filesystem-state runs (.vvm/runs/): ls, show, cat and prune");
  const inProject = (c: Command) => c.option("--dir <dir>", "the project directory, where the program and its .vvm/ are (default: the current directory)", nonBlank);
  inProject(runs.command("ls").description("the project's runs, oldest first: id, status, start time, bindings, program"))
    .argument("[dir]", "the project directory, as --dir gives it (default: the current directory)")
    .option("--json", "one JSON document on stdout")
    .action(async (dir: string | undefined, flags: RunsFlags) => {
      const { runsLs } = await import("./commands/runs-ls.ts");
      exitCode = await runsLs(dir, flags, io);
    });
  inProject(runs.command("show").description("a run's status, its bindings with their summaries, and its trace"))
    .argument("<run-id>", "the run's id (or a prefix naming one run)")
    .option("--json", "one JSON document on stdout")
    .action(async (id: string, flags: RunsFlags) => {
      const { runsShow } = await import("./commands/runs-show.ts");
      exitCode = await runsShow(id, flags, io);
    });
  inProject(runs.command("cat").description("a binding's whole text, by its name (the latest of that name) or its id"))
    .argument("<run-id>", "the run's id (or a prefix naming one run)")
    .argument("<binding>", "a name from the binding index, or a binding id such as b000001")
    .action(async (id: string, binding: string, flags: RunsFlags) => {
      const { runsCat } = await import("./commands/runs-cat.ts");
      exitCode = await runsCat(id, binding, flags, io);
    });
  inProject(runs.command("prune").description("remove old runs (a run still running is kept unless untouched for a day)"))
    .option("--keep <n>", "keep the newest N runs", (v: string) => wholeNumber(v, 0))
    .option("--older-than <duration>", "remove runs started longer ago than this (30m, 12h, 7d) or before an ISO 8601 time")
    .option("--dry-run", "say what would be removed, remove nothing")
    .action(async (flags: PruneFlags) => {
      const { runsPrune } = await import("./commands/runs-prune.ts");
      exitCode = await runsPrune(flags, io);
    });

  // a mistake in `vvm memory show` points to that command's own help, not to the list of every command
  const pointToHelp = (cmd: Command, name: string): void => {
    cmd.showHelpAfterError(`(run '${name} --help' for usage)`);
    for (const sub of cmd.commands) pointToHelp(sub, `${name} ${sub.name()}`);
  };
  pointToHelp(program, "vvm");

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
