// The script provider: ordered rules from a YAML or JSON file (`--script FILE`) answer calls and
// judges; anything no rule matches falls back to the simulator, or under --strict-script fails.
// Format: spec/agent-calls.md §6.
import { FileRefused, readTextFile } from "../text-file.ts";
import path from "node:path";
import { isMap, isScalar, isSeq, type Node as YamlNode, type Pair, type YAMLMap, type YAMLSeq } from "yaml";
import { scalarKey, YamlSource } from "./yaml-source.ts";
import { parseDuration } from "../duration.ts";
import {
  ProviderError,
  type JudgeModelReply,
  type JudgeModelRequest,
  type ModelReply,
  type ModelRequest,
  type Provider,
  type ProviderErrorKind,
  type Usage,
} from "../provider.ts";
import { SimProvider, ZERO_USAGE } from "./sim.ts";
import { sleep } from "../abort.ts";
import type { Site } from "../values.ts";

export type CallKind = "agent" | JudgeModelRequest["kind"];
const CALL_KINDS: readonly CallKind[] = ["agent", "predicate", "case", "require", "choose"];
const JUDGE_KINDS: readonly CallKind[] = ["predicate", "case", "require"];

export type ScriptAnswer =
  | { type: "reply"; text: string }
  | { type: "verdict"; verdict: boolean | null }
  | { type: "label"; label: string }
  | { type: "error"; kind: ProviderErrorKind; status: number | null; message: string; retryAfterMs: number | null; transient: boolean }
  /** an agent turn that asks for tools (the call layer runs them and asks again) */
  | { type: "tool_use"; calls: { name: string; input: unknown }[] };

export interface ScriptRule {
  /** 1-based position in the file, for messages and traces */
  index: number;
  /** where the rule starts in its file (1-based line) */
  line: number;
  kinds: ReadonlySet<CallKind>;
  agent: string | null;
  name: string | null;
  match: string | null;
  regex: RegExp | null;
  input: string | null;
  /** the request's turn in the call's tool loop (1 = the first request) */
  turn: number | null;
  answer: ScriptAnswer;
  delayMs: number;
  /** uses left; null = unlimited */
  remaining: number | null;
  usage: Usage;
}

/** A mistake in a script file, with a position when the YAML gives one. */
export class ScriptError extends Error {
  override name = "ScriptError";
}

const RULE_FIELDS = ["kind", "agent", "name", "match", "regex", "input", "turn", "reply", "verdict", "label", "error", "tool_use", "delay", "times", "usage"];
const ANSWER_FIELDS = ["reply", "verdict", "label", "error", "tool_use"] as const;
const TOOL_USE_FIELDS = ["name", "input"];
const ERROR_FIELDS = ["kind", "status", "message", "retry_after", "transient"];
const USAGE_FIELDS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"];

/** Scripts are written by hand: a larger file (or a device, a pipe) is refused, not read. */
export const MAX_SCRIPT_BYTES = 16 * 2 ** 20;

export async function loadScript(file: string, displayName: string): Promise<ScriptRule[]> {
  let text: string;
  try {
    text = readTextFile(file, MAX_SCRIPT_BYTES);
  } catch (err) {
    if (err instanceof FileRefused) throw new ScriptError(`${displayName}: ${err.message}`);
    throw err;
  }
  return parseScript(text, displayName);
}

/** Parse and validate a script strictly: every mistake names the rule, the field and the line. */
export function parseScript(text: string, displayName: string): ScriptRule[] {
  const src = YamlSource.parse(text, displayName);
  if (!(src instanceof YamlSource)) throw new ScriptError(`${src.at}: not valid YAML or JSON: ${src.message}`);
  const at = (node: YamlNode | Pair | null | undefined): string => src.at(node);
  let root = src.doc.contents as YamlNode | null;
  if (isMap(root)) {
    for (const pair of root.items) {
      const key = scalarKey(pair);
      if (key !== "rules") throw new ScriptError(`${at(pair)}: unknown top-level field "${key}" (expected "rules")`);
    }
    root = (root.items[0]?.value as YamlNode | null) ?? null;
  }
  if (!isSeq(root)) {
    throw new ScriptError(`${at(root)}: a script is a list of rules, or an object with a "rules" list`);
  }
  return root.items.map((item, i) => ({ ...parseRule(item as YamlNode, i + 1, at), line: src.line(item as YamlNode) }));
}

/** `/pattern/flags` carries flags (e.g. `/review/i`); anything else is the pattern itself. Throws SyntaxError. */
export function ruleRegex(text: string): RegExp {
  const literal = /^\/(.*)\/([a-z]*)$/s.exec(text);
  return literal ? new RegExp(literal[1]!, literal[2]) : new RegExp(text);
}

function parseRule(node: YamlNode, index: number, at: (n: YamlNode | Pair | null | undefined) => string): Omit<ScriptRule, "line"> {
  if (!isMap(node)) throw new ScriptError(`${at(node)}: rule ${index}: a rule is an object such as { kind: agent, reply: "..." }`);
  const fields = new Map<string, Pair>();
  for (const pair of node.items) {
    const key = scalarKey(pair);
    if (!RULE_FIELDS.includes(key)) {
      throw new ScriptError(`${at(pair)}: rule ${index}: unknown field "${key}" (expected one of: ${RULE_FIELDS.join(", ")})`);
    }
    fields.set(key, pair);
  }
  const fail = (field: string, message: string): never => {
    throw new ScriptError(`${at(fields.get(field)?.value as YamlNode | undefined ?? node)}: rule ${index}: ${field}: ${message}`);
  };
  const str = (field: string): string | null => {
    const p = fields.get(field);
    if (!p) return null;
    const v = isScalar(p.value) ? p.value.value : undefined;
    if (typeof v !== "string") fail(field, "expected a string");
    return v as string;
  };

  const answers = ANSWER_FIELDS.filter((f) => fields.has(f));
  if (answers.length !== 1) {
    throw new ScriptError(
      `${at(node)}: rule ${index}: give exactly one answer (reply, verdict, label, error or tool_use)${answers.length ? `, not ${answers.join(" and ")}` : ""}`,
    );
  }
  const answerField = answers[0];
  let answer: ScriptAnswer;
  switch (answerField) {
    case "reply":
      answer = { type: "reply", text: str("reply") as string };
      break;
    case "verdict": {
      const v = (fields.get("verdict")!.value as YamlNode | null) ?? null;
      const raw = isScalar(v) ? v.value : undefined;
      if (raw !== true && raw !== false && raw !== "uncertain") fail("verdict", 'expected true, false or "uncertain"');
      answer = { type: "verdict", verdict: raw === "uncertain" ? null : (raw as boolean) };
      break;
    }
    case "label":
      answer = { type: "label", label: str("label") as string };
      break;
    case "error":
      answer = parseErrorAnswer(fields.get("error")!.value as YamlNode, index, at);
      break;
    case "tool_use":
      answer = parseToolUse(fields.get("tool_use")!.value as YamlNode, index, at);
      break;
    default: {
      const never: never = answerField;
      throw new Error(`unreachable: ${String(never)}`);
    }
  }

  // Kinds: explicit, else what the answer can answer.
  let kinds: Set<CallKind>;
  const kindPair = fields.get("kind");
  if (kindPair) {
    const v = kindPair.value as YamlNode;
    const names = isSeq(v) ? v.items.map((x) => (isScalar(x) ? x.value : x)) : [isScalar(v) ? v.value : v];
    kinds = new Set();
    for (const n of names) {
      if (n === "judge") JUDGE_KINDS.forEach((k) => kinds.add(k));
      else if (typeof n === "string" && (CALL_KINDS as readonly string[]).includes(n)) kinds.add(n as CallKind);
      else fail("kind", `unknown kind ${JSON.stringify(n)} (expected ${CALL_KINDS.join(", ")} or judge)`);
    }
    if (kinds.size === 0) fail("kind", "give at least one kind");
  } else {
    kinds = new Set(answer.type === "reply" || answer.type === "tool_use" ? ["agent"] : answer.type === "verdict" ? JUDGE_KINDS : answer.type === "label" ? ["choose"] : CALL_KINDS);
  }
  const bad = (k: CallKind) =>
    ((answer.type === "reply" || answer.type === "tool_use") && k !== "agent") ||
    (answer.type === "verdict" && !JUDGE_KINDS.includes(k)) ||
    (answer.type === "label" && k !== "choose");
  for (const k of kinds) if (bad(k)) fail("kind", `a ${answerField} cannot answer ${k === "agent" ? "an" : "a"} ${k} call`);

  const agent = str("agent");
  const name = str("name");
  if ((agent !== null || name !== null) && [...kinds].some((k) => k !== "agent")) {
    fail(agent !== null ? "agent" : "name", "only agent calls have an agent name and a call label; add kind: agent");
  }
  let turn: number | null = null;
  if (fields.has("turn")) {
    const v = fields.get("turn")!.value as YamlNode;
    const n = isScalar(v) ? v.value : undefined;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) fail("turn", "expected a whole number of at least 1 (1 is a call's first request)");
    if ([...kinds].some((k) => k !== "agent")) fail("turn", "only agent calls have turns; add kind: agent");
    turn = n as number;
  }
  const match = str("match");
  const regexText = str("regex");
  let regex: RegExp | null = null;
  if (regexText !== null) {
    try {
      regex = ruleRegex(regexText);
    } catch (err) {
      fail("regex", `not a valid regular expression: ${(err as Error).message}`);
    }
  }
  const input = str("input");

  let delayMs = 0;
  const delayText = str("delay");
  if (delayText !== null) {
    const ms = parseDuration(delayText);
    if (ms === null) fail("delay", `expected a duration such as "200ms" or "2s", got ${JSON.stringify(delayText)}`);
    delayMs = ms as number;
  }
  let remaining: number | null = null;
  if (fields.has("times")) {
    const v = fields.get("times")!.value as YamlNode;
    const n = isScalar(v) ? v.value : undefined;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) fail("times", "expected a whole number of at least 1");
    remaining = n as number;
  }
  let usage = ZERO_USAGE;
  if (fields.has("usage")) {
    const v = fields.get("usage")!.value as YamlNode;
    if (!isMap(v)) fail("usage", "expected an object such as { input_tokens: 10, output_tokens: 5 }");
    const u = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };
    for (const p of (v as YAMLMap).items) {
      const k = scalarKey(p);
      const n = isScalar(p.value) ? p.value.value : undefined;
      if (!USAGE_FIELDS.includes(k)) fail("usage", `unknown field "${k}" (expected one of: ${USAGE_FIELDS.join(", ")})`);
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) fail("usage", `${k}: expected a whole number from 0 to 9007199254740991`);
      u[k as keyof typeof u] = n as number;
    }
    usage = { inputTokens: u.input_tokens, outputTokens: u.output_tokens, cacheReadTokens: u.cache_read_tokens, cacheWriteTokens: u.cache_write_tokens };
  }
  return { index, kinds, agent, name, match, regex, input, turn, answer, delayMs, remaining, usage };
}

/** `tool_use: [{ name: read_file, input: { path: notes.md } }, …]` */
function parseToolUse(node: YamlNode, index: number, at: (n: YamlNode | Pair | null | undefined) => string): ScriptAnswer {
  const fail = (n: YamlNode | Pair | null | undefined, message: string): never => {
    throw new ScriptError(`${at(n)}: rule ${index}: tool_use: ${message}`);
  };
  if (!isSeq(node) || node.items.length === 0) fail(node, "expected a list of tool calls such as [{ name: read_file, input: { path: notes.md } }]");
  const calls = (node as YAMLSeq).items.map((item, i) => {
    const where = `call ${i + 1}`;
    if (!isMap(item)) return fail(item as YamlNode, `${where}: expected an object { name, input }`);
    let name: unknown;
    let input: unknown = {};
    for (const p of (item as YAMLMap).items) {
      const k = scalarKey(p);
      if (!TOOL_USE_FIELDS.includes(k)) fail(p, `${where}: unknown field "${k}" (expected name, input)`);
      if (k === "name") name = isScalar(p.value) ? p.value.value : undefined;
      // the input is passed to the tool as written, whatever its shape: the runtime checks it as it checks a model's
      else input = p.value === null ? null : typeof (p.value as { toJSON?: unknown }).toJSON === "function" ? (p.value as YamlNode).toJSON() : p.value;
    }
    if (typeof name !== "string" || name === "") fail(item as YamlNode, `${where}: name: expected the tool's name`);
    return { name: name as string, input };
  });
  return { type: "tool_use", calls };
}

function parseErrorAnswer(node: YamlNode, index: number, at: (n: YamlNode | Pair | null | undefined) => string): ScriptAnswer {
  const fail = (n: YamlNode | Pair | null | undefined, message: string): never => {
    throw new ScriptError(`${at(n)}: rule ${index}: error: ${message}`);
  };
  if (!isMap(node)) fail(node, 'expected an object such as { kind: rejected, status: 429, retry_after: "1s" }');
  const m = node as YAMLMap;
  const values = new Map<string, { pair: Pair; value: unknown }>();
  for (const p of m.items) {
    const k = scalarKey(p);
    if (!ERROR_FIELDS.includes(k)) fail(p, `unknown field "${k}" (expected one of: ${ERROR_FIELDS.join(", ")})`);
    values.set(k, { pair: p, value: isScalar(p.value) ? p.value.value : p.value });
  }
  const kind = values.get("kind")?.value;
  if (kind !== "spawn_failed" && kind !== "timeout" && kind !== "rejected") {
    fail(values.get("kind")?.pair ?? node, `kind: expected spawn_failed, timeout or rejected${kind === undefined ? "" : `, got ${JSON.stringify(kind)}`}`);
  }
  let status: number | null = null;
  if (values.has("status")) {
    const s = values.get("status")!.value;
    if (typeof s !== "number" || !Number.isInteger(s) || s < 100 || s > 599) fail(values.get("status")!.pair, "status: expected an HTTP status (100–599)");
    status = s as number;
  }
  let retryAfterMs: number | null = null;
  if (values.has("retry_after")) {
    const r = values.get("retry_after")!.value;
    const ms = typeof r === "string" ? parseDuration(r) : null;
    if (ms === null) fail(values.get("retry_after")!.pair, 'retry_after: expected a duration such as "1s"');
    retryAfterMs = ms;
  }
  const message = values.get("message")?.value ?? `scripted ${String(kind)}${status !== null ? ` (HTTP ${status})` : ""}`;
  if (typeof message !== "string") fail(values.get("message")!.pair, "message: expected a string");
  let transient = kind !== "rejected" || status === 429;
  if (values.has("transient")) {
    const t = values.get("transient")!.value;
    if (typeof t !== "boolean") fail(values.get("transient")!.pair, "transient: expected true or false");
    transient = t as boolean;
  }
  return { type: "error", kind: kind as ProviderErrorKind, status, message: message as string, retryAfterMs, transient };
}

/** A call or judge no rule answered: the simulator answered it, or under `strict` it failed. */
export interface Unanswered {
  kind: CallKind;
  /** the agent's name (agent calls), else null */
  agent: string | null;
  site: Site;
  /** the rendered task, or the judge's criterion */
  text: string;
}

interface ScriptOptions {
  /** a call no rule answers is error(kind="rejected") instead of the simulator's answer (--strict-script) */
  strict?: boolean;
}

export class ScriptProvider implements Provider {
  readonly name = "script";
  readonly strict: boolean;
  /** every call and judge no rule answered, in the order they were made */
  readonly unanswered: Unanswered[] = [];
  private readonly sim = new SimProvider();
  private readonly used = new Set<ScriptRule>();
  private toolUseIds = 0;

  constructor(
    private readonly rules: ScriptRule[],
    options: ScriptOptions = {},
  ) {
    this.strict = options.strict ?? false;
  }

  /** The rules that answered nothing, in file order. */
  unused(): ScriptRule[] {
    return this.rules.filter((r) => !this.used.has(r));
  }

  async complete(req: ModelRequest): Promise<ModelReply> {
    // each earlier turn is an assistant reply and its tool results
    const turn = Math.floor((req.history?.length ?? 0) / 2) + 1;
    const rule = this.take("agent", req.task, req.input ?? "", [req.agentName, ...req.agentBases], req.callName, turn);
    if (!rule) {
      this.miss({ kind: "agent", agent: req.agentName, site: req.site, text: req.task });
      return this.sim.complete(req);
    }
    await pause(rule.delayMs, req.signal);
    const a = rule.answer;
    const base = { model: req.model, usage: rule.usage, requestId: `script-rule-${rule.index}` };
    if (a.type === "error") throw scriptedError(rule, a);
    if (a.type === "tool_use") {
      const toolUses = a.calls.map((c) => ({ id: `toolu_script_${rule.index}_${++this.toolUseIds}`, name: c.name, input: c.input }));
      return { ...base, text: "", stopReason: "tool_use", toolUses, content: toolUses.map((u) => ({ type: "tool_use" as const, ...u })) };
    }
    if (a.type !== "reply") throw new Error(`script rule ${rule.index} cannot answer an agent call`); // excluded by validation
    return { ...base, text: a.text };
  }

  async judge(req: JudgeModelRequest): Promise<JudgeModelReply> {
    const rule = this.take(req.kind, req.criterion, req.input, [], null, null);
    if (!rule) {
      this.miss({ kind: req.kind, agent: null, site: req.site, text: req.criterion });
      return this.sim.judge(req);
    }
    await pause(rule.delayMs, req.signal);
    const a = rule.answer;
    const base = { model: req.model, usage: rule.usage, requestId: `script-rule-${rule.index}` };
    switch (a.type) {
      case "error":
        throw scriptedError(rule, a);
      case "verdict":
        return { ...base, verdict: a.verdict, label: null };
      case "label":
        // the call layer treats a label that is not one of the options as no answer, as from a real model
        return { ...base, verdict: null, label: a.label };
      case "reply":
      case "tool_use":
        throw new Error(`script rule ${rule.index} cannot answer a judge`); // excluded by validation
      default: {
        const never: never = a;
        return never;
      }
    }
  }

  /**
   * First live rule that matches; consumes one use synchronously so concurrent calls see a stable order.
   * `agents`: the name the call goes by, then the agents it was derived from; a rule may name any of them.
   */
  private take(kind: CallKind, text: string, input: string, agents: readonly string[], name: string | null, turn: number | null): ScriptRule | null {
    for (const r of this.rules) {
      if (r.remaining === 0 || !r.kinds.has(kind)) continue;
      if (r.turn !== null && r.turn !== turn) continue;
      if (r.agent !== null && !agents.includes(r.agent)) continue;
      if (r.name !== null && r.name !== name) continue;
      if (r.match !== null && !text.includes(r.match)) continue;
      // (with a g or y flag, test() starts where the rule's last match ended: every text is searched from its start)
      if (r.regex !== null) r.regex.lastIndex = 0;
      if (r.regex !== null && !r.regex.test(text)) continue;
      if (r.input !== null && !input.includes(r.input)) continue;
      if (r.remaining !== null) r.remaining--;
      this.used.add(r);
      return r;
    }
    return null;
  }

  /** Records a call no rule answered; under `strict` it fails (never retried: no rule will answer it later). */
  private miss(call: Unanswered): void {
    this.unanswered.push(call);
    // the call by its place only: the message reaches the trace, which never holds a task's text
    if (this.strict) throw new ProviderError("rejected", `--strict-script: no script rule answers ${describeUnanswered(call, undefined, false)}`, false, null, "script-unanswered");
  }
}

/** `agent call 'acme' at main.vvm:4:7: "Triage this ticket…"`, for messages (the file by its name only; the text unless `withText` is false). */
export function describeUnanswered(call: Unanswered, showPath: (file: string) => string = (f) => path.basename(f), withText = true): string {
  const what = call.kind === "agent" ? `agent call '${call.agent}'` : `${call.kind} judge`;
  const at = `${what} at ${showPath(call.site.path)}:${call.site.span.line}:${call.site.span.col}`;
  return withText ? `${at}: ${preview(call.text)}` : at;
}

function preview(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(flat.length > max ? flat.slice(0, max - 1) + "…" : flat);
}

function scriptedError(rule: ScriptRule, a: Extract<ScriptAnswer, { type: "error" }>): ProviderError {
  return new ProviderError(a.kind, a.message, a.transient, a.status, `script-rule-${rule.index}`, a.retryAfterMs);
}

/** A delay that ends early when the attempt is aborted (the call layer reports why). */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms > 0 && !(await sleep(ms, signal))) throw new ProviderError("timeout", "aborted", true);
}
