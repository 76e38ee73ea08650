// Program inputs (spec/inputs.md): `vvm run --input FILE|- --arg name=value` checked against the program's
// `input` declarations before anything runs, and the list `vvm check` prints.
import { printable } from "../printable.ts";
import { closeSync, constants, createReadStream, fstatSync, openSync } from "node:fs";
import { Socket } from "node:net";
import type { Readable } from "node:stream";
import path from "node:path";
import type { InputDecl } from "../../grammar/ast.ts";
import { declaredInputs, sourceText } from "../check.ts";
import type { CheckResult } from "../program.ts";
import { UsageError, warningLine, type CliIO } from "../io.ts";
import { parseJson, position } from "../../runtime/json.ts";
import { firstInvalidByte } from "../resolve/source.ts";
import { typeName, type Value } from "../../runtime/values.ts";
import { Interrupted } from "../../runtime/abort.ts";

/** One `--arg name=value`, as written. */
export interface ArgFlag {
  name: string;
  text: string;
}

export interface InputFlags {
  /** a JSON file whose object fields are inputs; `-` is standard input */
  input?: string;
  arg?: ArgFlag[];
  /**
   * `vvm test`: the inputs come from a test's `inputs:` and `input_file:` (named in messages as `shown`),
   * not from flags, and the messages say so
   */
  fromTest?: { inputFileShown: string | null };
}

/** How messages name where inputs come from: vvm run's flags, or a test's fields. */
interface Sources {
  arg: (name: string) => string;
  input: (shown: string) => string;
  missing: (name: string, many: boolean) => string;
}

const FROM_FLAGS: Sources = {
  arg: (name) => `--arg ${name}`,
  input: (shown) => `--input ${shown}`,
  missing: (name, many) => `pass --arg ${name}=VALUE${many ? " for each" : ""} or a field in an --input JSON file`,
};

const FROM_TEST: Sources = {
  arg: (name) => `inputs: ${name}`,
  input: (shown) => `input_file ${shown}`,
  missing: (name, many) => `give ${many ? "each" : "it"} under the test's inputs: (${name}: VALUE) or as a field of its input_file`,
};

/**
 * `--arg` values are JSON when they parse as JSON (`3`, `true`, `[1, 2]`, `"3"`), otherwise the text itself.
 * JSON that the runtime refuses (a number too large, nesting too deep) is a mistake, as it is in an --input
 * file: it never becomes text behind the user's back.
 */
function argValue(name: string, text: string, from: Sources, io: CliIO): Value {
  const r = parseJson(text, { uniqueFields: true });
  if (r.ok) return r.value;
  if (isJson(text)) throw new UsageError(`${from.arg(name)}: ${r.problem}`);
  // `{"a": 1` is more likely a typo than text: said before anything runs (and paid calls are made with it)
  if (/^\s*[[{]/.test(text)) io.stderr.write(warningLine(io, `${from.arg(name)}: starts like JSON but is not (at ${r.line}:${r.column}: ${r.problem}), so it is passed as text; if text is meant, quote it as a JSON string to say so`));
  return text;
}

/** Whether `text` is JSON by the standard's grammar (nested too deep for the engine counts as JSON too). */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch (err) {
    return err instanceof RangeError;
  }
}

/**
 * The values for the program's inputs: the `--input` object's fields, then each `--arg` (which wins over the file).
 * Throws UsageError for a file that cannot be read or is not a JSON object, a name the program does not declare,
 * an `--arg` given twice, or a required input left out; Interrupted on Ctrl-C while the file is read.
 */
export async function collectInputs(checked: CheckResult, flags: InputFlags, io: CliIO): Promise<Map<string, Value>> {
  const from = flags.fromTest ? FROM_TEST : FROM_FLAGS;
  const decls = declaredInputs(checked);
  const declared = new Map(decls.map((d) => [d.name, d]));
  const values = new Map<string, Value>();
  const known = () =>
    decls.length === 0
      ? "the program declares no inputs (declare one with input name: \"description\")"
      : `the program's inputs: ${decls.map((d) => d.name).join(", ")}`;

  if (flags.input !== undefined) {
    const shown = from.input(flags.fromTest?.inputFileShown ?? (flags.input === "-" ? "<stdin>" : flags.input));
    const value = await readInputFile(flags.input, shown, io);
    if (!(value instanceof Map)) {
      throw new UsageError(`${shown}: expected a JSON object whose fields are the program's inputs, found ${describe(value)} (${known()})`);
    }
    for (const [name, v] of value) {
      if (!declared.has(name)) throw new UsageError(`${shown}: field '${name}' is not an input of the program (${known()})`);
      values.set(name, v);
    }
  }

  const given = new Set<string>();
  for (const a of flags.arg ?? []) {
    if (given.has(a.name)) throw new UsageError(`${from.arg(a.name)} is given twice`);
    given.add(a.name);
    if (!declared.has(a.name)) throw new UsageError(`${from.arg(a.name)}: the program has no input '${a.name}' (${known()})`);
    values.set(a.name, argValue(a.name, a.text, from, io));
  }

  const missing = decls.filter((d) => d.default === null && !values.has(d.name));
  if (missing.length > 0) {
    const list = missing.map((d) => (d.description ? `'${d.name}' (${d.description.value})` : `'${d.name}'`)).join(", ");
    const s = missing.length === 1 ? "" : "s";
    throw new UsageError(
      `missing input${s} ${list}: ${from.missing(missing[0]!.name, missing.length > 1)} (vvm check lists the program's inputs)`,
    );
  }
  return values;
}

/** An --input file (or standard input) is read up to this size: inputs are data for the program, and a device or pipe may never end. */
export const MAX_INPUT_BYTES = 64 * 2 ** 20;

/**
 * The bytes of a file or standard input, or null once they pass MAX_INPUT_BYTES (reading stops there).
 * Throws Interrupted on Ctrl-C: `--input -` at a terminal nobody types into (or a pipe that never ends)
 * must give way to the first Ctrl-C, not wait for a second one to kill the process.
 */
async function readCapped(chunks: AsyncIterable<Uint8Array> & { destroy?: () => void }, signal: AbortSignal): Promise<Uint8Array | null> {
  const it = chunks[Symbol.asyncIterator]();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Interrupted());
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {}); // said by the race below, when it is still waiting
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const next = await Promise.race([it.next(), aborted]);
      if (next.done) return Buffer.concat(parts, total);
      total += next.value.length;
      if (total > MAX_INPUT_BYTES) return null;
      parts.push(next.value);
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // A stream (standard input included) is closed, so a read still waiting keeps nothing alive: a stream's
    // iterator would only act on return() once its pending read ended.
    if (chunks.destroy) chunks.destroy();
    else void Promise.resolve(it.return?.()).catch(() => {});
  }
}

/**
 * A stream of the file. A named pipe (or `<(command)`, a pipe by another name) is opened without waiting for a
 * writer and read as a pipe, which Ctrl-C can stop: an open that waits holds a thread that even process exit
 * waits for, so a pipe nobody writes to could not be interrupted at all.
 */
function openInput(file: string): Readable {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw Object.assign(new Error("a directory"), { code: "EISDIR" });
    if (st.isFIFO() || st.isSocket()) return new Socket({ fd, readable: true, writable: false });
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return createReadStream("", { fd });
}

/** The input file as JSON; `shown` is how messages name it (`--input in.json`). */
async function readInputFile(file: string, shown: string, io: CliIO): Promise<Value> {
  let bytes: Uint8Array | null;
  try {
    bytes = await readCapped(file === "-" ? io.stdin() : openInput(path.resolve(io.cwd, file)), io.signal);
  } catch (err) {
    if (err instanceof Interrupted) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a directory, not a file" : `cannot be read (${code ?? (err as Error).message})`;
    // upstream passes inputs as `--input name=value`; here that is --arg (--input names a JSON file)
    const meant = code === "ENOENT" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(file) ? ` (to give one input, use --arg ${file})` : "";
    throw new UsageError(`${shown}: ${why}${meant}`);
  }
  if (bytes === null) throw new UsageError(`${shown}: larger than ${MAX_INPUT_BYTES / 2 ** 20} MiB`);
  const bad = firstInvalidByte(bytes, "allowed");
  if (bad >= 0) {
    // where, as a JSON problem's line and column would say it (the bytes before it are UTF-8)
    const before = new TextDecoder().decode(bytes.subarray(0, bad));
    const { line, column } = position(before, before.length);
    throw new UsageError(`${shown}:${line}:${column}: not UTF-8 text: byte 0x${bytes[bad]!.toString(16).padStart(2, "0")} (a JSON file must be UTF-8)`);
  }
  const text = new TextDecoder().decode(bytes);
  // a field given twice (an input, or a field of one) would silently take its last value, as --arg given twice would
  const r = parseJson(text, { uniqueFields: true });
  if (!r.ok) throw new UsageError(`${shown}:${r.line}:${r.column}: ${r.problem}`);
  return r.value;
}

function describe(v: Value): string {
  if (v === null) return "null";
  if (typeof v === "string") return "a string";
  const t = typeName(v);
  return t === "list" ? "a list" : `a ${t}`;
}

/** What `vvm check` prints for a program that declares inputs (on stdout: it is the answer, not a diagnostic). */
export function describeInputs(checked: CheckResult, file: string): string | null {
  const decls = declaredInputs(checked);
  if (decls.length === 0) return null;
  const source = checked.modules.get(checked.entry)!.source;
  // descriptions and defaults are the program's text: no control character reaches the terminal
  const rows = decls.map((d: InputDecl) => [d.name, printable(d.default ? `default ${sourceText(source, d.default.span)}` : "required", false), printable(d.description?.value ?? "", false)]);
  // a loop, not Math.max(...rows): a program may declare more inputs than a call takes arguments
  let w0 = 0;
  let w1 = 0;
  for (const r of rows) {
    w0 = Math.max(w0, r[0]!.length);
    w1 = Math.max(w1, r[1]!.length);
  }
  const lines = rows.map(([name, how, what]) => `  ${name!.padEnd(w0)}  ${what ? `${how!.padEnd(w1)}  ${what}` : how}`);
  const shown = printable(file, false);
  return `inputs of ${shown} (vvm run ${shown} --arg name=VALUE, or --input FILE.json with these fields):\n${lines.join("\n")}\n`;
}
