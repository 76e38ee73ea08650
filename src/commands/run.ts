// `vvm run FILE`: validate, run, print the exports as one JSON object on stdout. Everything else goes to stderr.
import { printable, vvmLine } from "../printable.ts";
import type { ModelFlags } from "./model-layer.ts";
import { collectInputs, type InputFlags } from "./inputs.ts";
import { hasErrors } from "../../grammar/diagnostics.ts";
import { displayPath, EXIT, UsageError, useColor, type CliIO } from "../io.ts";
import { printDiagnostics, resolveProgramFile, strictRefusal } from "./report.ts";
import { checkedProgram } from "./check.ts";
import { finishRunState } from "./run-state.ts";
import { runProgram } from "../../runtime/interpreter/index.ts";
import { errorKind, isErrorValue, type RaiseStep, type Site, type Value, type VObject } from "../../runtime/values.ts";
import { exportsJson, partialExportsOutput } from "./exports-json.ts";
import { jsonText } from "../../runtime/json-text.ts";
import { Interrupted } from "../../runtime/abort.ts";
import pc from "picocolors";
import type { RunOutcome } from "../../runtime/context.ts";
import type { ScriptProvider } from "../../runtime/providers/script.ts";

export type RunFlags = ModelFlags &
  InputFlags & {
    concurrency: number;
    /** warnings are errors: nothing runs when the checker warns (exit 2) */
    strict?: boolean;
    /** exit 0 even when an exported value is an error value (the default exits 1) */
    allowErrorExports?: boolean;
    /** after an uncaught raise, print the exports computed before it (still exit 1) */
    partialExports?: boolean;
  };

/** What `vvm test` reads of a run besides its output: how the program ended, and the script provider. */
type RunObserver = (outcome: RunOutcome, script: ScriptProvider | null) => void;

export async function runCommand(file: string, flags: RunFlags, io: CliIO, observe?: RunObserver): Promise<number> {
  const abs = await resolveProgramFile(file, io);
  if (abs === null) return EXIT.usage;
  // nothing has started yet (no call, no memory, no run directory)
  const checked = await checkedProgram(abs, io);
  if (checked === null) return EXIT.interrupted;
  printDiagnostics(checked, io);
  if (hasErrors(checked.diagnostics)) return EXIT.invalid;
  const strict = flags.strict ? strictRefusal(checked) : null;
  if (strict !== null) {
    io.stderr.write(`vvm: ${strict}; nothing ran\n`);
    return EXIT.invalid;
  }
  // The inputs before any provider or call: a missing or malformed one is the command line's mistake.
  let inputs;
  try {
    inputs = await collectInputs(checked, flags, io);
  } catch (err) {
    if (err instanceof Interrupted) {
      io.stderr.write("vvm: interrupted\n");
      return EXIT.interrupted;
    }
    if (!(err instanceof UsageError)) throw err;
    // one line, whatever the input's names, descriptions or path hold
    io.stderr.write(vvmLine(err.message));
    return EXIT.usage;
  }

  // Loaded only now: the provider SDK and the memory store cost start-up time that `vvm check` and
  // invalid programs never need.
  const { createModelLayer } = await import("./model-layer.ts");
  let layer;
  try {
    layer = await createModelLayer({ ...flags, entryPath: abs, io, skills: checked.skillFiles, modules: [...checked.modules.keys()] });
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(vvmLine(err.message));
      return EXIT.usage;
    }
    throw err;
  }
  const color = useColor(io);
  try {
    const outcome = await runProgram(checked, {
      agents: layer.agents,
      trace: layer.trace,
      signal: io.signal,
      concurrency: flags.concurrency,
      progress: layer.progress,
      narrator: layer.narrator,
      inputs,
      longSync: io.ctrlCEndsAtOnce,
      isBinding: (v: Value) => layer.runState?.bindingOf(v) != null,
    });
    layer.stopProgress();
    observe?.(outcome, layer.script);
    if (layer.runState) await finishRunState(layer.runState, outcome);
    switch (outcome.kind) {
      case "ok": {
        for (const [name, value] of outcome.exports) layer.narrator?.exported(name, value);
        const printed = exportsJson(outcome.exports);
        if (!("text" in printed)) {
          io.stderr.write(`vvm: ${printed.problem}: exit ${EXIT.raised}\n`);
          return EXIT.raised;
        }
        io.stdout.write(printed.text + "\n");
        // a run --max-cost cut short did not do all it was written to do, whatever it exported
        const refused = layer.costRefusals();
        if (refused > 0) {
          io.stderr.write(`vvm: --max-cost refused ${refused} of this run's calls and judges: exit 1\n`);
          return EXIT.overBudget;
        }
        // The exports are printed either way; the exit code says whether any of them is a failure.
        const failed = [...outcome.exports].filter(([, v]) => isErrorValue(v));
        if (failed.length === 0 || flags.allowErrorExports) return layer.script?.strict && layer.script.unanswered.length > 0 ? EXIT.unscripted : EXIT.ok;
        io.stderr.write(`vvm: ${describeErrorExports(failed)}: exit 1 (--allow-error-exports exits 0)\n`);
        return EXIT.errorExport;
      }
      case "raised": {
        io.stderr.write(describeUncaught(outcome.error, outcome.site, io, color, outcome.trail) + "\n");
        if (flags.partialExports) {
          const { json, note } = partialExportsOutput(outcome.partial);
          if (json !== null) io.stdout.write(json + "\n");
          io.stderr.write(`vvm: ${note}\n`);
        }
        return EXIT.raised;
      }
      case "interrupted":
        io.stderr.write("vvm: interrupted\n");
        return EXIT.interrupted;
      default: {
        const never: never = outcome;
        return never;
      }
    }
  } finally {
    await layer.close();
  }
}

/** `export 'r' is an error value (timeout)`, or `2 exports are error values: a (rejected), b (timeout)`. */
function describeErrorExports(failed: [string, Value][]): string {
  // an error's kind can come from a model's reply (json()) or an input: printed escaped
  const kind = (v: Value) => printable(errorKind(v as VObject) ?? "no kind", false);
  if (failed.length === 1) return `export '${failed[0]![0]}' is an error value (${kind(failed[0]![1])})`;
  return `${failed.length} exports are error values: ${failed.map(([key, v]) => `'${key}' (${kind(v)})`).join(", ")}`;
}

/** How much of an uncaught error value stderr shows. */
const ERROR_CHARS = 100_000;

/** One step of a traceback: a function left, a map/pmap item ended, or how many steps are left out. */
function describeStep(step: RaiseStep, where: (s: Site) => string): string {
  switch (step.kind) {
    case "call":
      return `in ${printable(step.fn, false)}(), called at ${where(step.site)}`;
    case "item":
      return `in ${step.fn} item ${step.index} of ${step.count} (0-based), at ${where(step.site)}`;
    case "omitted":
      return `… ${step.count} more step${step.count === 1 ? "" : "s"} left out …`;
    default: {
      const never: never = step;
      return never;
    }
  }
}

/** The error value, where it was raised, and the way it travelled out: each function left and each map/pmap item ended. */
function describeUncaught(error: Value, site: Site | null, io: CliIO, color: boolean, trail: RaiseStep[] = []): string {
  const c = pc.createColors(color);
  const where = (s: Site) => `${displayPath(s.path, io)}:${s.span.line}:${s.span.col}`;
  const at = site ? ` at ${where(site)}` : "";
  // an error's data is the program's and can be of any size: the first ERROR_CHARS characters of it are enough
  const text = jsonText(error, { indent: 2, limit: ERROR_CHARS + 1, cut: true });
  const shown = text.length > ERROR_CHARS ? `${text.slice(0, ERROR_CHARS)}… (cut: the error value's JSON is longer than ${ERROR_CHARS.toLocaleString("en")} characters)` : text;
  const lines = [`${c.red("uncaught error")}${at}:`, printable(shown)];
  if (trail.length > 0) {
    lines.push("traceback, innermost first:");
    for (const step of trail) lines.push(`  ${describeStep(step, where)}`);
  }
  return lines.join("\n");
}
