// A `NAME.test.yaml` file (spec/testing.md): the program, its inputs, scripted replies and expectations of
// each test, read strictly. Every mistake is a TestFileError `file:line:col: where: what`, never a stack.
import path from "node:path";
import { isMap, isScalar, isSeq, visit, type Node as YamlNode, type Pair, type YAMLMap, type YAMLSeq } from "yaml";
import { MAX_SCRIPT_BYTES, parseScript, ruleRegex, ScriptError } from "../../runtime/providers/script.ts";
import { FileRefused, readTextFile } from "../../runtime/text-file.ts";
import { scalarKey, YamlSource } from "../../runtime/providers/yaml-source.ts";
import { ENTRY_KINDS } from "../../runtime/memory/ledger.ts";
import { BindingError, resolveBinding, type MemoryScope } from "../../runtime/memory/keys.ts";
import { obj } from "../../runtime/values.ts";
import { parseJson } from "../../runtime/json.ts";

export class TestFileError extends Error {
  override name = "TestFileError";
}

/** Plain data as YAML gives it (JSON's values). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where the rules of a test come from: a script file, or rules written in the test file itself. */
export type ScriptSource = { kind: "file"; path: string } | { kind: "inline"; text: string };

export interface MemoryExpect {
  scope: Exclude<MemoryScope, "path">;
  key: string;
  digestContains: string[];
  digestEquals: string | null;
  /** the ledger's entry kinds, oldest first */
  ledger: string[] | null;
  /** each is part of some retained (not forgotten) fact */
  facts: string[];
  factCount: number | null;
}

export interface Expect {
  exports: { [key: string]: Json } | null;
  exportsSubset: { [key: string]: Json } | null;
  exportsMatch: Map<string, RegExp> | null;
  /** the run ends with an uncaught raise of this kind (message: a part of its message) */
  raises: { kind: string; message: string | null } | null;
  /** these exports are error values of these kinds */
  errorExports: Map<string, string> | null;
  calls: Map<string, number> | null;
  judges: number | null;
  memory: MemoryExpect[];
}

export interface TestCase {
  name: string;
  /** the line of the test in its file, for messages */
  line: number;
  inputs: { [key: string]: Json } | null;
  inputFile: string | null;
  script: ScriptSource;
  /** a folder laid out as `.vvm/memory`, copied into the program's copy before the run */
  memory: string | null;
  userMemory: string | null;
  expect: Expect;
}

export interface TestFile {
  /** absolute */
  file: string;
  /** as messages show it */
  shown: string;
  program: string;
  /** where the test file names its program (`file:line:col`, or the file when it is the default), for messages */
  programAt: string;
  tests: TestCase[];
}

const FILE_FIELDS = ["program", "script", "tests"];
const TEST_FIELDS = ["name", "inputs", "input_file", "script", "memory", "user_memory", "expect"];
const EXPECT_FIELDS = ["exports", "exports_subset", "exports_match", "raises", "error_exports", "calls", "judges", "memory"];
const MEMORY_FIELDS = ["key", "scope", "digest_contains", "digest_equals", "ledger", "facts", "fact_count"];
const KIND = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A test file's name ends so; its snapshot and its default program are named after it. */
export const TEST_FILE = /\.test\.(ya?ml)$/;

export async function loadTestFile(file: string, shown: string): Promise<TestFile> {
  let text: string;
  try {
    text = readTextFile(file, MAX_SCRIPT_BYTES);
  } catch (err) {
    if (err instanceof FileRefused) throw new TestFileError(`${shown}: ${err.message}`);
    throw err;
  }
  return parseTestFile(text, file, shown);
}

/** A YAML document with its line counter; a syntax error (duplicate keys too) is a TestFileError at its place. */
export function parseYaml(text: string, shown: string, hint = ""): YamlSource {
  const src = YamlSource.parse(text, shown);
  if (!(src instanceof YamlSource)) throw new TestFileError(`${src.at}: not valid YAML: ${src.message}${hint}`);
  return src;
}

function parseTestFile(text: string, file: string, shown: string): TestFile {
  const src = parseYaml(text, shown);
  const r = new Reader(text, src, path.dirname(file));
  const root = src.doc.contents as YamlNode | null;
  const top = r.fields(root, "the test file", FILE_FIELDS, "an object with program, script and tests");
  const programNode = top.get("program");
  const program = programNode ? r.file(programNode, "program") : file.replace(TEST_FILE, ".vvm");
  const script = top.has("script") ? r.script(top.get("script")!, "script") : null;
  const testsNode = top.get("tests");
  if (!testsNode) r.fail(root, 'the test file: missing "tests", a list of tests');
  if (!isSeq(testsNode)) r.fail(testsNode, "tests: expected a list of tests such as [{ name: ..., expect: { ... } }]");
  // a file that tests nothing would pass unnoticed, as if its program were tested
  if ((testsNode as YAMLSeq).items.length === 0) r.fail(testsNode, "tests: the list is empty: a test file holds at least one test, such as { name: ..., expect: { ... } }");
  const names = new Set<string>();
  const tests = (testsNode as YAMLSeq).items.map((item, i) => {
    const t = r.test(item as YamlNode, `tests[${i}]`, script);
    if (names.has(t.name)) r.fail(item as YamlNode, `tests[${i}]: a second test named ${JSON.stringify(t.name)} (names identify snapshots)`);
    names.add(t.name);
    return t;
  });
  return { file, shown, program, programAt: programNode ? src.at(programNode) : shown, tests };
}

/** Reads nodes with their positions: each check names the field and the place it is written. */
class Reader {
  constructor(
    private readonly text: string,
    private readonly src: YamlSource,
    private readonly dir: string,
  ) {}

  fail(node: YamlNode | null | undefined, message: string): never {
    throw new TestFileError(`${this.src.at(node)}: ${message}`);
  }

  /** An object's fields by name, each an allowed one. */
  fields(node: YamlNode | null | undefined, where: string, allowed: string[], shape: string): Map<string, YamlNode> {
    if (!isMap(node)) this.fail(node, `${where}: expected ${shape}`);
    const out = new Map<string, YamlNode>();
    for (const pair of (node as YAMLMap).items as Pair<YamlNode, YamlNode>[]) {
      const key = scalarKey(pair);
      if (!allowed.includes(key)) this.fail(pair.key, `${where}: unknown field "${key}" (expected one of: ${allowed.join(", ")})`);
      out.set(key, pair.value ?? (pair.key as YamlNode));
    }
    return out;
  }

  str(node: YamlNode, where: string): string {
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v !== "string") this.fail(node, `${where}: expected a string`);
    return v as string;
  }

  strings(node: YamlNode, where: string): string[] {
    if (isSeq(node)) return node.items.map((x, i) => this.str(x as YamlNode, `${where}[${i}]`));
    return [this.str(node, where)];
  }

  count(node: YamlNode, where: string): number {
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) this.fail(node, `${where}: expected a whole number of at least 0`);
    return v as number;
  }

  /**
   * The node as plain data. A number YAML reads but JSON cannot carry as written (`.inf`, `.nan`, `1e400`, an
   * id such as 12345678901234567890 that a number holds only rounded) is refused at its place, as `--arg`
   * refuses it: the value would silently differ from the one the test names.
   */
  json(node: YamlNode, where: string): Json {
    visit(node, {
      Scalar: (_, s) => {
        if (typeof s.value !== "number") return;
        if (!Number.isFinite(s.value)) this.fail(s, `${where}: ${s.source} is not a number JSON can hold`);
        const src = s.source ?? "";
        if (Number.isSafeInteger(s.value) || !/^-?(0|[1-9][0-9]*)$/.test(src)) return;
        const r = parseJson(src);
        if (!r.ok) this.fail(s, `${where}: ${r.problem}`);
      },
    });
    return node.toJSON() as Json;
  }

  object(node: YamlNode, where: string): { [key: string]: Json } {
    if (!isMap(node)) this.fail(node, `${where}: expected an object`);
    for (const pair of (node as YAMLMap).items) {
      if (!isScalar(pair.key) || typeof pair.key.value !== "string") this.fail(pair.key as YamlNode, `${where}: field names are strings`);
    }
    return this.json(node, where) as { [key: string]: Json };
  }

  /** A path relative to the test file. */
  file(node: YamlNode, where: string): string {
    const p = this.str(node, where);
    if (p.trim() === "") this.fail(node, `${where}: expected a path, relative to the test file`);
    return path.resolve(this.dir, p);
  }

  /** A script file's path, or a list of rules checked here so that a mistake points into this file. */
  script(node: YamlNode, where: string): ScriptSource {
    if (isScalar(node)) return { kind: "file", path: this.file(node, where) };
    if (!isSeq(node)) this.fail(node, `${where}: expected a script file's path or a list of rules`);
    // The rules as a script of their own, at their own lines and columns: everything else blanked out.
    const [start, , end] = node.range!;
    const text = this.text.slice(0, end).replace(/[^\n]/g, " ").slice(0, start) + this.text.slice(start, end);
    try {
      parseScript(text, this.src.shown);
    } catch (err) {
      if (err instanceof ScriptError) throw new TestFileError(`${err.message} (in ${where})`);
      throw err;
    }
    return { kind: "inline", text };
  }

  test(node: YamlNode, where: string, fileScript: ScriptSource | null): TestCase {
    const f = this.fields(node, where, TEST_FIELDS, "a test such as { name: ..., expect: { ... } }");
    if (!f.has("name")) this.fail(node, `${where}: missing "name"`);
    const name = this.str(f.get("name")!, `${where}.name`);
    if (name.trim() === "") this.fail(f.get("name"), `${where}.name: expected a name`);
    where = `test ${JSON.stringify(name)}`;
    const script = f.has("script") ? this.script(f.get("script")!, `${where}: script`) : fileScript;
    if (script === null) this.fail(node, `${where}: no script: give the rules that answer the program's calls (script: FILE or a list of rules), here or at the top of the file`);
    if (!f.has("expect")) this.fail(node, `${where}: missing "expect"`);
    return {
      name,
      line: this.src.line(node),
      inputs: f.has("inputs") ? this.object(f.get("inputs")!, `${where}: inputs`) : null,
      inputFile: f.has("input_file") ? this.file(f.get("input_file")!, `${where}: input_file`) : null,
      script,
      memory: f.has("memory") ? this.file(f.get("memory")!, `${where}: memory`) : null,
      userMemory: f.has("user_memory") ? this.file(f.get("user_memory")!, `${where}: user_memory`) : null,
      expect: this.expect(f.get("expect")!, `${where}: expect`),
    };
  }

  expect(node: YamlNode, where: string): Expect {
    const f = this.fields(node, where, EXPECT_FIELDS, `an object with any of: ${EXPECT_FIELDS.join(", ")}`);
    const get = <T>(k: string, read: (n: YamlNode, w: string) => T): T | null => (f.has(k) ? read(f.get(k)!, `${where}.${k}`) : null);
    return {
      exports: get("exports", (n, w) => this.object(n, w)),
      exportsSubset: get("exports_subset", (n, w) => this.object(n, w)),
      exportsMatch: get("exports_match", (n, w) => this.patterns(n, w)),
      raises: get("raises", (n, w) => this.raises(n, w)),
      errorExports: get("error_exports", (n, w) => this.names(n, w, (v, vw) => this.kind(v, vw))),
      calls: get("calls", (n, w) => this.names(n, w, (v, vw) => this.count(v, vw))),
      judges: get("judges", (n, w) => this.count(n, w)),
      memory: get("memory", (n, w) => this.memories(n, w)) ?? [],
    };
  }

  names<T>(node: YamlNode, where: string, read: (n: YamlNode, w: string) => T): Map<string, T> {
    if (!isMap(node)) this.fail(node, `${where}: expected an object`);
    const out = new Map<string, T>();
    for (const pair of (node as YAMLMap).items as Pair<YamlNode, YamlNode>[]) {
      // `~: 1` is YAML's null, not a name: refused here rather than compared as "null"
      const v = isScalar(pair.key) ? pair.key.value : null;
      const key = typeof v === "string" || typeof v === "number" ? String(v) : "";
      if (key === "") this.fail(pair.key, `${where}: expected a name`);
      out.set(key, read(pair.value ?? pair.key, `${where}.${key}`));
    }
    return out;
  }

  kind(node: YamlNode, where: string): string {
    const k = this.str(node, where);
    if (!KIND.test(k)) this.fail(node, `${where}: expected an error kind such as thrown, rejected or timeout`);
    return k;
  }

  /** `/pattern/flags` or a bare pattern, as script rules write `regex`. */
  patterns(node: YamlNode, where: string): Map<string, RegExp> {
    return this.names(node, where, (n, w) => {
      try {
        return ruleRegex(this.str(n, w));
      } catch (err) {
        return this.fail(n, `${w}: not a valid regular expression: ${(err as Error).message}`);
      }
    });
  }

  raises(node: YamlNode, where: string): { kind: string; message: string | null } {
    if (isScalar(node)) return { kind: this.kind(node, where), message: null };
    const f = this.fields(node, where, ["kind", "message"], "an error kind, or { kind, message }");
    if (!f.has("kind")) this.fail(node, `${where}: missing "kind"`);
    return { kind: this.kind(f.get("kind")!, `${where}.kind`), message: f.has("message") ? this.str(f.get("message")!, `${where}.message`) : null };
  }

  memories(node: YamlNode, where: string): MemoryExpect[] {
    if (!isSeq(node)) this.fail(node, `${where}: expected a list such as [{ key: "oncall:payments", digest_contains: VND-221 }]`);
    return node.items.map((item, i) => {
      const w = `${where}[${i}]`;
      const f = this.fields(item as YamlNode, w, MEMORY_FIELDS, `an object with key and any of: ${MEMORY_FIELDS.slice(1).join(", ")}`);
      if (!f.has("key")) this.fail(item as YamlNode, `${w}: missing "key", the memory's key as the program writes it`);
      let scope: MemoryExpect["scope"] = "project";
      if (f.has("scope")) {
        const s = this.str(f.get("scope")!, `${w}.scope`);
        if (s !== "project" && s !== "user") this.fail(f.get("scope"), `${w}.scope: expected project or user${s === "path" ? " (a path memory may lie outside the test's copy)" : ""}`);
        scope = s as MemoryExpect["scope"];
      }
      let ledger: string[] | null = null;
      if (f.has("ledger")) {
        const n = f.get("ledger")!;
        if (!isSeq(n)) this.fail(n, `${w}.ledger: expected a list of entry kinds, oldest first (${ENTRY_KINDS.join(", ")})`);
        ledger = this.strings(n, `${w}.ledger`);
        ledger.forEach((k, j) => {
          if (!(ENTRY_KINDS as readonly string[]).includes(k)) this.fail(n.items[j] as YamlNode, `${w}.ledger[${j}]: unknown entry kind "${k}" (expected ${ENTRY_KINDS.join(", ")})`);
        });
      }
      const key = this.str(f.get("key")!, `${w}.key`);
      try {
        // the checks a program's memory binding passes (no I/O: the folders only place the key)
        resolveBinding(obj({ scope, key }), "/", "/");
      } catch (err) {
        if (err instanceof BindingError) this.fail(f.get("key"), `${w}.key: ${err.message.replace(/^memory\.key /, "")}`);
        throw err;
      }
      return {
        scope,
        key,
        digestContains: f.has("digest_contains") ? this.strings(f.get("digest_contains")!, `${w}.digest_contains`) : [],
        digestEquals: f.has("digest_equals") ? this.str(f.get("digest_equals")!, `${w}.digest_equals`) : null,
        ledger,
        facts: f.has("facts") ? this.strings(f.get("facts")!, `${w}.facts`) : [],
        factCount: f.has("fact_count") ? this.count(f.get("fact_count")!, `${w}.fact_count`) : null,
      };
    });
  }
}
