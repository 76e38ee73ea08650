// The call layer: turns the interpreter's requests into provider attempts with retries, per-attempt
// timeouts, cancellation, memory sessions, accounting and trace events. Providers do one attempt each.
// An agent call is a tool loop: request, run the tools the reply asks for, send their results, repeat,
// until the model answers in text (spec/agent-calls.md §8).
import path from "node:path";
import type { AgentCallRequest, AgentRuntime, ChooseRequest, JudgeRequest } from "../agent-runtime.ts";
import type { MemoryPort, MemorySession } from "../memory-port.ts";
import {
  ProviderError,
  type JudgeModelReply,
  type JudgeModelRequest,
  type ModelReply,
  type ModelRequest,
  type Provider,
  type ToolResult,
  type ToolUse,
  type Usage,
  type Turn,
  type AssistantBlock,
} from "../provider.ts";
import { roundMs, siteText, type Narrator, type TraceSink } from "../trace.ts";
import { errorKind, isErrorValue, makeError, thrown, aTypeName, VvmRaise, type Site, type Value, type VObject } from "../values.ts";
import { DEFAULT_MODEL, resolveModel, type ModelOverrides } from "../providers/models.ts";
import { Accounting, usageFields } from "./accounting.ts";
import { askTyped, prepareTyped } from "./typed.ts";
import { serializeInput, ValueTooLarge } from "../json-text.ts";
import { checkMemoryMode, parseCallOptions, show, type Backoff } from "../options.ts";
import { sleep } from "../abort.ts";
import { grantsTools, NO_PERMISSIONS, parsePermissions, type Permissions } from "../tools/permissions.ts";
// type-only: the tools (and the glob library) load when an agent first has file permissions or a reply asks for a tool
import type { Toolbox } from "../tools/toolbox.ts";
import type { RunDirectory } from "../state/run-dir.ts";
import type { ShellSettings } from "../tools/bash-tool.ts";
import type { LoadedSkill } from "../skills.ts";
import { agentSkills, withSkills } from "./skills.ts";

export interface RetryTuning {
  /** first backoff wait; fixed backoff waits this long every time */
  baseMs: number;
  /** cap on one exponential wait */
  maxMs: number;
  /** cap on a server's retry-after */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_TUNING: RetryTuning = { baseMs: 1000, maxMs: 30_000, maxRetryAfterMs: 5 * 60_000 };
/** An attempt without timeout= is bounded like the SDK's default request timeout. */
const DEFAULT_ATTEMPT_TIMEOUT_MS = 10 * 60_000;
/** Judges have no call options: transient failures get 2 retries, each attempt at most 2 minutes. */
const JUDGE_POLICY = { retry: 2, backoff: "exponential" as Backoff, timeoutMs: 2 * 60_000 };

export interface CallRuntimeDeps {
  provider: Provider;
  memory: MemoryPort | null;
  /** alias or id; `--judge-model` */
  judgeModel: string;
  /** model ids that replace the built-in aliases for this run */
  models: ModelOverrides;
  trace: TraceSink;
  accounting: Accounting;
  retry?: RetryTuning;
  /** default reply limit when the agent has no max_tokens (VVM_MAX_TOKENS) */
  maxTokens?: number;
  /** where tool paths and permission globs are resolved: the program's directory (default: the calling module's) */
  programDir?: string;
  /** `--narrate`: told each call's start and end and each judge's answer */
  narrator?: Narrator;
  /** filesystem state mode: the run directory every agent call's reply is bound in (null: in-context) */
  runState?: RunDirectory | null;
  /** the bash tool's environment (credentials are withheld from it) and how bash="prompt" asks; default: an empty environment, nobody to ask */
  shell?: ShellSettings;
  /** the program's skills as the checker loaded them (absent: none imported) */
  skills?: ReadonlyMap<string, LoadedSkill>;
}

/** Requests one agent call may make before it must answer in text (agent key `max_turns`). */
const DEFAULT_MAX_TURNS = 20;

/** What a call's trace event reports of its loop and reply. */
interface CallLoop {
  turns: number;
  toolUses: number;
  notGranted: string[];
  /** a typed call's re-asks */
  reasks?: number;
  /** characters of the reply the call returned or bound (memory blocks stripped); absent for typed calls and failures */
  replyChars?: number;
}

interface Policy {
  retry: number;
  backoff: Backoff;
  timeoutMs: number;
  /** performance.now() by which the whole tool loop must be done; attempts are cut short there and not retried */
  deadline?: number;
}

type Outcome<T> =
  | { ok: true; reply: T; attempts: number; /** performance.now() when the successful attempt started */ startedAt: number }
  | { ok: false; error: ProviderError | "cancelled"; attempts: number };

/** How a call's tool loop ended: the final text, or the error that ended it; with what it took. */
type LoopOutcome = ({ ok: true; text: string } | { ok: false; error: ProviderError | "cancelled" }) & { attempts: number; turns: number; toolUses: number };

/** Thrown inside an attempt when its own deadline passes or the caller cancels. */
const ABORTED = Symbol("aborted");

export class CallRuntime implements AgentRuntime {
  private readonly retry: RetryTuning;
  private nextId = 1;
  /** `--narrate`: tokens each call in flight used so far, over its attempts and tool turns, by call id */
  private readonly callTokens = new Map<number, { input: number; output: number }>();

  /** resolved once: every judge uses it */
  private readonly judgeModel: string;

  constructor(private readonly deps: CallRuntimeDeps) {
    this.judgeModel = resolveModel(deps.judgeModel, deps.models);
    this.retry = deps.retry ?? DEFAULT_RETRY_TUNING;
  }

  async call(req: AgentCallRequest): Promise<Value> {
    const { agent, site, signal } = req;
    const opts = parseCallOptions(req.options, site);
    const cfg = agent.config;
    // the input as the model reads it: serialised once, for the cost estimate, the recall query and the request
    const input = req.input === null ? null : inputText(req.input, site);
    const model = resolveModel(configString(cfg, "model", site) ?? DEFAULT_MODEL, this.deps.models);
    // filesystem state: a call passed refs is told how to read them, and may read this run's bindings
    const runState = this.deps.runState ?? null;
    const refsIn = runState !== null && runState.holdsRef(req.input);
    const system = [configString(cfg, "prompt", site) ?? "", refsIn ? runState.protocol() : ""].filter((t) => t !== "").join("\n\n");
    const maxTokens = configWholeNumber(cfg, "max_tokens", site) ?? this.deps.maxTokens;
    const maxTurns = configWholeNumber(cfg, "max_turns", site) ?? DEFAULT_MAX_TURNS;
    const permissions = parsePermissions(cfg.get("permissions"), site);
    const id = this.nextId++;
    const base = { call: id, agent: agent.name, name: opts.name, model };
    const programDir = this.deps.programDir ?? path.dirname(site.path);
    const loop: CallLoop = { turns: 0, toolUses: 0, notGranted: notGranted(permissions) };
    // --max-cost: no call starts once the money is spent (its prompt estimated without the memory, not read yet)
    const over = this.deps.accounting.costs.admit(model, () => system.length + req.task.length + (input?.length ?? 0));
    if (over !== null) return this.finishCall(base, site, makeError("rejected", over, refusedData(model)), 0, 0, loop);
    this.deps.narrator?.callStarted({ id, agent: agent.name, model, site });

    // a skill the agent cannot have fails the call before memory or the model is touched
    const skills = agentSkills(cfg.get("skills"), this.deps.skills, site);
    if (skills instanceof Map) return this.finishCall(base, site, skills, 0, 0, loop);
    const memoryConfig = cfg.get("memory");
    // returns=: the call's own, else the agent's (unit on the call makes it untyped); a bad shape raises here, before anything is sent
    const typed = await prepareTyped(opts.returns !== undefined ? opts.returns : (cfg.get("returns") ?? null), memoryConfig !== undefined && memoryConfig !== null, site);
    let session: MemorySession | null = null;
    // Any memory value but unit goes to the store, which refuses a malformed one with error(kind="rejected").
    if (memoryConfig !== undefined && memoryConfig !== null) {
      const mode = checkMemoryMode(opts.memoryMode, site);
      if (signal.aborted) return this.finishCall(base, site, cancelledValue(), 0, 0, loop);
      if (!this.deps.memory) return this.finishCall(base, site, makeError("rejected", "agent memory is not available in this runtime"), 0, 0, loop);
      const query = input === null ? req.task : `${req.task}\n${input}`;
      const opened = await this.deps.memory.open(memoryConfig, { site, agentName: agent.name, model, mode }, signal, query);
      // An error value from the store (e.g. locked) is the call's result: the model is never called. A wait for
      // the lock that ended because the call was cancelled (a pmap sibling failed, Ctrl-C) is `cancelled`, as
      // for any call in flight: reported as `locked`, it sent people looking for a lock nobody held for long.
      if (opened instanceof Map) return this.finishCall(base, site, signal.aborted && errorKind(opened) === "locked" ? cancelledValue() : opened, 0, 0, loop);
      session = opened;
    }
    // memory_search reads this call's own memory, through its session (none in fresh mode)
    const memorySearch = session?.search ? (q: string) => session.search!(q) : null;
    // refs in the input: this run's bindings may be read, as they are now (not when the call began: the
    // memory's lock may have been waited for meanwhile), and through their real path only
    const grant = refsIn ? runState.bindingsTree(programDir) : null;
    const readTrees = [...skills.map((s) => s.dir), ...(grant !== null ? [grant] : [])];
    const toolOpts = { programDir, agent: agent.name, shell: this.deps.shell ?? { env: {}, confirm: null }, memory: memorySearch, readTrees };
    const toolbox = grantsTools(permissions) || memorySearch !== null || readTrees.length > 0 ? await (await loadTools()).Toolbox.create(permissions, toolOpts).catch(async (err: unknown) => {
      await session?.release();
      throw err;
    }) : null;

    const started = performance.now();
    const request: Omit<ModelRequest, "signal"> = {
      model,
      system: withSkills(system, skills, programDir),
      memoryContext: session?.context ?? null,
      task: req.task,
      input,
      agentName: agent.name,
      callName: opts.name,
      agentBases: agent.bases,
      site,
      maxTokens,
      tools: toolbox?.specs ?? [],
      // network="allow": the API's web search and fetch, which it runs itself ("prompt" cannot ask per use, so it grants nothing)
      serverTools: permissions.network === "allow" ? ["web_search", "web_fetch"] : [],
      ...(typed ? { output: typed.wire, outputEnveloped: typed.envelope } : {}),
    };
    const policy = { retry: opts.retry, backoff: opts.backoff, timeoutMs: opts.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS };
    let outcome: LoopOutcome | Awaited<ReturnType<typeof askTyped<Extract<LoopOutcome, { ok: false }>>>>;
    try {
      // an agent without tools still has its tool uses answered (as refused), should a reply ask for one
      const tools = async () => toolbox ?? (await loadTools()).Toolbox.create(NO_PERMISSIONS, toolOpts);
      const ask = (history: Turn[] = [], firstTurn = 1) => this.toolLoop(base, policy, signal, request, tools, maxTurns, history, firstTurn);
      outcome = typed ? await askTyped(typed, opts.retry, maxTurns, model, ask) : await ask();
    } catch (err) {
      await session?.release();
      this.memoryEvent(base, session);
      throw err;
    }
    loop.turns = outcome.turns;
    loop.toolUses = outcome.toolUses;
    if ("reasks" in outcome) Object.assign(loop, { reasks: outcome.reasks });
    const ms = performance.now() - started;
    if (!outcome.ok) {
      await session?.release();
      this.memoryEvent(base, session);
      const value = "rejected" in outcome ? outcome.rejected : outcome.error === "cancelled" ? cancelledValue() : errorValue(outcome.error, outcome.attempts, model, outcome.turns);
      return this.finishCall(base, site, value, outcome.attempts, ms, loop, req.target ?? opts.name);
    }
    // memory sees the final text only: the patch is extracted from the answer, never from a tool turn
    // (a typed reply's patch travels beside its value, as a vvm-memory block of its own)
    const reply = "value" in outcome ? outcome.patch : outcome.text;
    const text = session ? await session.complete(reply) : reply;
    this.memoryEvent(base, session);
    if (!("value" in outcome)) loop.replyChars = text.length;
    // filesystem state: the reply goes to a binding file and the call returns its ref (or binding_failed); a typed value is data, returned as it is
    const value = "value" in outcome ? outcome.value : runState === null ? text : await runState.bind({
      name: req.target ?? opts.name,
      agent: agent.name,
      text,
      retries: opts.retry,
      pause: (attempt) => sleep(this.backoffMs(opts.backoff, attempt, null), signal),
    });
    return this.finishCall(base, site, value, outcome.attempts, ms, loop, req.target ?? opts.name);
  }

  /** One `memory` trace event per call with memory: key, mode, lock wait, facts injected, what the reply's patch did. Never fact or digest text. */
  private memoryEvent(base: Record<string, unknown>, session: MemorySession | null): void {
    if (session !== null && this.deps.trace.enabled) this.deps.trace.emit({ type: "memory", ...base, ...session.report });
    if (session !== null) this.deps.narrator?.memory({ id: Number(base.call), agent: String(base.agent), report: session.report });
  }

  /**
   * Request → run the tools the reply asks for (all at once) → send their results → … until a reply asks for
   * none; its text is the call's value. Each request gets the call's retries. `timeout=` bounds an attempt
   * from its request to the final reply: once the first reply asks for tools, the rest of the loop (requests,
   * retry waits, tools) must finish by that attempt's deadline, and missing it ends the call (tools may have
   * acted, so nothing is started again). More than `maxTurns` requests end it as rejected.
   */
  private async toolLoop(
    base: Record<string, unknown>,
    policy: Policy,
    signal: AbortSignal,
    request: Omit<ModelRequest, "signal">,
    tools: () => Promise<Toolbox>,
    maxTurns: number,
    /** the conversation so far (a typed call's re-ask continues it); the loop's tool turns are added to it */
    history: Turn[] = [],
    firstTurn = 1,
  ): Promise<LoopOutcome> {
    let attempts = 0;
    let toolUses = 0;
    let deadline: number | undefined;
    // a turn the API paused in its own (server) tool loop: sent back as it is, and the next reply continues it
    let paused: { content: AssistantBlock[]; text: string } | null = null;
    for (let turn = firstTurn; ; turn++) {
      const sent = { ...request, history: history.slice() };
      const out: Outcome<ModelReply> = await this.attempts("call", { ...base, turn }, { ...policy, deadline }, signal, (s) => this.deps.provider.complete({ ...sent, signal: s }));
      attempts += out.attempts;
      const done = { attempts, turns: turn, toolUses };
      if (!out.ok) return { ok: false, error: out.error, ...done };
      deadline ??= out.startedAt + policy.timeoutMs;
      const reply = out.reply;
      const wanted = reply.stopReason === "tool_use" ? (reply.toolUses ?? []) : [];
      if (paused !== null) history.pop();
      const content: AssistantBlock[] = [...(paused?.content ?? []), ...(reply.content ?? assistantBlocks(reply.text, wanted))];
      const text: string = (paused?.text ?? "") + reply.text;
      paused = reply.stopReason === "pause_turn" ? { content, text } : null;
      if (wanted.length === 0 && paused === null) return { ok: true, text, ...done };
      if (turn >= maxTurns) {
        // a reply that only paused (stop_reason "pause_turn") asked for no tool of ours: say what it did
        const still = wanted.length > 0 ? "the agent still asked for tools" : 'the API still paused the turn (stop_reason "pause_turn")';
        const message =
          `${still} after ${turn} turn${turn === 1 ? "" : "s"} (max_turns=${maxTurns}), so the call ended without a final answer; ` +
          `raise max_turns= on the agent or give it a smaller task`;
        return { ok: false, error: new ProviderError("rejected", message, false, null, reply.requestId), ...done };
      }
      if (paused !== null) {
        history.push({ role: "assistant", content });
        continue;
      }
      const results = await this.runTools({ ...base, turn }, await tools(), wanted, signal, deadline);
      toolUses += wanted.length;
      const after = { attempts, turns: turn, toolUses };
      if (results === "cancelled") return { ok: false, error: "cancelled", ...after };
      if (results === "timeout") {
        const message = `no final reply within ${formatMs(policy.timeoutMs)}: the deadline passed while tools ran (turn ${turn}); timeout= covers the whole tool loop`;
        return { ok: false, error: new ProviderError("timeout", message, true), ...after };
      }
      history.push({ role: "assistant", content }, { role: "tool_results", results });
    }
  }

  /** One turn's tool uses, under the call's signal and the loop's deadline; one trace event per use. */
  private async runTools(base: Record<string, unknown>, toolbox: Toolbox, uses: ToolUse[], signal: AbortSignal, deadline: number): Promise<ToolResult[] | "cancelled" | "timeout"> {
    if (signal.aborted) return "cancelled";
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, Math.max(0, deadline - performance.now()));
    const onCancel = () => ac.abort();
    signal.addEventListener("abort", onCancel, { once: true });
    const { trace } = this.deps;
    try {
      // raced with the signal: a tool stuck in the file system does not hold up a cancellation
      return await raceAbort(toolbox.run(uses, ac.signal, (e) => trace.enabled && trace.emit({ type: "tool", ...base, ...e })), ac.signal);
    } catch (err) {
      if (err !== ABORTED) throw err;
      return signal.aborted ? "cancelled" : timedOut ? "timeout" : "cancelled";
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onCancel);
    }
  }

  async judge(req: JudgeRequest): Promise<boolean> {
    const reply = await this.runJudge(req.kind, req.criterion, req.input, null, req.site, req.signal);
    return reply.verdict === true;
  }

  async choose(req: ChooseRequest): Promise<string> {
    if (req.labels.length === 0) throw thrown("choose needs at least one option", req.site);
    const reply = await this.runJudge("choose", req.criterion, req.input, req.labels, req.site, req.signal);
    return reply.label ?? req.labels[0];
  }

  private async runJudge(
    kind: JudgeModelRequest["kind"],
    criterion: string,
    input: Value,
    labels: string[] | null,
    site: Site,
    signal: AbortSignal,
  ): Promise<JudgeModelReply> {
    const model = this.judgeModel;
    const id = this.nextId++;
    const base = { judge: id, kind, model };
    const started = performance.now();
    const request = { kind, model, criterion, input: inputText(input, site), labels, site };
    const over = this.deps.accounting.costs.admit(model, () => criterion.length + request.input.length);
    if (over !== null) {
      // counted, traced and told like any failed judge: the summary's judge count matches the trace's judge events
      this.judgeFailed(base, site, "rejected", 0, 0);
      const data = refusedData(model);
      data.set("kind", "rejected");
      throw thrown(over, site, data);
    }
    const outcome = await this.attempts("judge", base, JUDGE_POLICY, signal, (s) => this.deps.provider.judge({ ...request, signal: s }));
    const ms = roundMs(performance.now() - started);
    if (outcome.ok) {
      this.deps.accounting.finished("judge", null, null);
      // A label outside the options is no answer (uncertain: the first option wins), whichever provider gave it.
      const label = outcome.reply.label !== null && labels?.includes(outcome.reply.label) ? outcome.reply.label : null;
      const r = { ...outcome.reply, label };
      const answer = kind === "choose" ? { label: label ?? labels![0], uncertain: label === null } : { verdict: r.verdict === true, uncertain: r.verdict === null };
      if (this.deps.trace.enabled) this.deps.trace.emit({ type: "judge", ...base, site: siteText(site.path, site.span), attempts: outcome.attempts, ok: true, ...answer, ms });
      this.deps.narrator?.judged({ kind, model, site, ms, answer: "label" in answer ? JSON.stringify(answer.label) : String(answer.verdict) + (answer.uncertain ? " (uncertain)" : "") });
      return r;
    }
    const err = outcome.error;
    this.judgeFailed(base, site, err === "cancelled" ? "cancelled" : err.kind, outcome.attempts, ms);
    if (err === "cancelled") throw new VvmRaise(cancelledValue(), site);
    const data = errorData(err, outcome.attempts, model);
    data.set("kind", err.kind);
    throw thrown(`the ${kind} judge failed after ${outcome.attempts} attempt${outcome.attempts === 1 ? "" : "s"}: ${err.message}`, site, data);
  }

  /** A judge ended without an answer (failed, cancelled, or refused by --max-cost): counted, traced and narrated. */
  private judgeFailed(base: { judge: number; kind: JudgeModelRequest["kind"]; model: string }, site: Site, failedAs: string, attempts: number, ms: number): void {
    this.deps.accounting.finished("judge", failedAs, null);
    if (this.deps.trace.enabled) this.deps.trace.emit({ type: "judge", ...base, site: siteText(site.path, site.span), attempts, ok: false, error_kind: failedAs, ms });
    this.deps.narrator?.judged({ kind: base.kind, model: base.model, site, ms, answer: `error(kind=${failedAs})` });
  }

  /** Up to 1+retry attempts; retries only spawn_failed, timeout and transient rejected. */
  private async attempts<T extends { usage: Usage; model: string; requestId: string | null }>(
    what: "call" | "judge",
    base: Record<string, unknown>,
    policy: Policy,
    signal: AbortSignal,
    run: (signal: AbortSignal) => Promise<T>,
  ): Promise<Outcome<T>> {
    const { accounting, trace } = this.deps;
    const type = what === "call" ? "call_attempt" : "judge_attempt";
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return { ok: false, error: "cancelled", attempts: attempt - 1 };
      // inside a tool loop the loop's deadline bounds every attempt, and reaching it is final
      const limitMs = policy.deadline === undefined ? policy.timeoutMs : policy.deadline - performance.now();
      if (limitMs <= 0) return { ok: false, error: loopTimeout(policy, base), attempts: attempt - 1 };
      const ac = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        ac.abort();
      }, limitMs);
      const onCancel = () => ac.abort();
      signal.addEventListener("abort", onCancel, { once: true });
      accounting.attemptStarted();
      const t0 = performance.now();
      let reply: T | null = null;
      let failure: unknown = null;
      try {
        reply = await raceAbort(run(ac.signal), ac.signal);
      } catch (err) {
        failure = err;
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", onCancel);
      }
      const ms = performance.now() - t0;
      const usage = reply?.usage ?? (failure instanceof ProviderError ? failure.usage : null);
      accounting.attemptEnded(what, usage, ms, what === "call" ? String(base.agent) : null, reply?.model ?? String(base.model));
      if (usage && this.deps.narrator && what === "call") {
        const id = Number(base.call);
        const sum = this.callTokens.get(id) ?? { input: 0, output: 0 };
        sum.input += usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
        sum.output += usage.outputTokens;
        this.callTokens.set(id, sum);
      }
      if (reply !== null) {
        if (trace.enabled) trace.emit({ type, ...base, attempt, ok: true, model: reply.model, request_id: reply.requestId, ms: roundMs(ms), ...usageFields(reply.usage), cost_usd: accounting.costs.price(reply.model, reply.usage) });
        return { ok: true, reply, attempts: attempt, startedAt: t0 };
      }
      // Which signal fired decides the kind: the caller's (cancelled) wins over our deadline (timeout).
      if (signal.aborted) {
        if (trace.enabled) trace.emit({ type, ...base, attempt, ok: false, error_kind: "cancelled", ms: roundMs(ms) });
        return { ok: false, error: "cancelled", attempts: attempt };
      }
      let error: ProviderError;
      if (timedOut) error = policy.deadline === undefined ? new ProviderError("timeout", `no reply within ${formatMs(policy.timeoutMs)} (attempt ${attempt})`, true) : loopTimeout(policy, base);
      else if (failure instanceof ProviderError) error = failure;
      else throw failure; // a bug in a provider, not a model failure
      const retryable = (error.kind !== "rejected" || error.transient) && !(timedOut && policy.deadline !== undefined);
      const more = retryable && attempt <= policy.retry;
      let wait = more ? this.backoffMs(policy.backoff, attempt, error.retryAfterMs) : null;
      // a wait that would outlast the loop's deadline is not worth starting: the last error stands
      if (wait !== null && policy.deadline !== undefined && performance.now() + wait >= policy.deadline) wait = null;
      if (trace.enabled) {
        trace.emit({ type, ...base, attempt, ok: false, error_kind: error.kind, status: error.status, request_id: error.requestId, message: error.message, ms: roundMs(ms), retry_in_ms: wait === null ? null : roundMs(wait) });
      }
      if (wait === null) return { ok: false, error, attempts: attempt };
      if (!(await sleep(wait, signal))) return { ok: false, error: "cancelled", attempts: attempt };
    }
  }

  private backoffMs(backoff: Backoff, attempt: number, retryAfterMs: number | null): number {
    // The server's retry-after wins (it knows when capacity returns); otherwise backoff with ±25% jitter.
    if (retryAfterMs !== null) return Math.min(retryAfterMs, this.retry.maxRetryAfterMs);
    const t = this.retry;
    const raw = backoff === "fixed" ? t.baseMs : Math.min(t.baseMs * 2 ** (attempt - 1), t.maxMs);
    return raw * (0.75 + Math.random() * 0.5);
  }

  private finishCall(
    base: Record<string, unknown>,
    site: Site,
    value: Value,
    attempts: number,
    ms: number,
    loop: CallLoop,
    target: string | null = null,
  ): Value {
    const failed = isErrorValue(value);
    const runState = this.deps.runState ?? null;
    const tokens = this.callTokens.get(Number(base.call)) ?? { input: 0, output: 0 };
    this.callTokens.delete(Number(base.call));
    this.deps.narrator?.callFinished({
      id: Number(base.call),
      agent: String(base.agent),
      model: String(base.model),
      site,
      ms,
      errorKind: failed ? (errorKind(value) ?? "error") : null,
      tokens,
    });
    // a binding_failed is in state.md already; any other error value gets its trace line there
    if (failed && runState !== null && errorKind(value) !== "binding_failed") runState.noteFailure(target, String(base.agent), errorKind(value) ?? "error");
    this.deps.accounting.finished("call", failed ? (errorKind(value) ?? "error") : null, String(base.agent));
    if (this.deps.trace.enabled) {
      // filesystem state: the binding file that holds the reply
      const bound = runState?.bindingOf(value) ?? null;
      const result = failed
        ? { ok: false, error_kind: errorKind(value) }
        : { ok: true, reply_chars: loop.replyChars ?? null, ...(bound !== null ? { binding: bound } : {}) };
      const tools = loop.turns > 1 || loop.toolUses > 0 ? { turns: loop.turns, tool_uses: loop.toolUses } : {};
      const ungranted = loop.notGranted.length > 0 ? { not_granted: loop.notGranted } : {};
      // a typed call says how many times its reply was re-asked
      const typed = loop.reasks !== undefined ? { reasks: loop.reasks } : {};
      this.deps.trace.emit({ type: "call", ...base, site: siteText(site.path, site.span), attempts, ...result, ...tools, ...ungranted, ...typed, ms: roundMs(ms) });
    }
    return value;
  }
}

function configString(cfg: VObject, key: string, site: Site): string | null {
  const v = cfg.get(key);
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw thrown(`agent ${key}= must be a string, got ${aTypeName(v)}`, site);
  return v;
}

/** `max_tokens`, `max_turns`: a whole number of at least 1, or absent. */
function configWholeNumber(cfg: VObject, key: string, site: Site): number | undefined {
  const v = cfg.get(key);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw thrown(`agent ${key}= must be a whole number of at least 1, got ${show(v)}`, site);
  return v;
}

/** What an agent asks for that this runtime does not grant yet (vvm check warns W023; the trace says so too). */
function notGranted(p: Permissions): string[] {
  const out: string[] = [];
  if (p.network === "prompt") out.push('network="prompt"');
  if (p.execute.length > 0) out.push("execute");
  return out;
}

/** The deadline of a tool loop passed: final (tools may have acted, so nothing is retried). */
function loopTimeout(policy: Policy, base: Record<string, unknown>): ProviderError {
  return new ProviderError("timeout", `no final reply within ${formatMs(policy.timeoutMs)} (turn ${String(base.turn)}); timeout= covers the whole tool loop`, true);
}

/** The assistant turn sent back when a provider gave no blocks of its own. */
function assistantBlocks(text: string, uses: ToolUse[]): NonNullable<ModelReply["content"]> {
  return [...(text === "" ? [] : [{ type: "text" as const, text }]), ...uses.map((u) => ({ type: "tool_use" as const, ...u }))];
}

function errorData(err: ProviderError, attempts: number, model: string): VObject {
  return new Map<string, Value>([
    ["status", err.status],
    ["request_id", err.requestId],
    ["attempts", attempts],
    ["model", model],
  ]);
}

/** The data of a call or judge --max-cost refused: a failed one's fields, no attempt made and no answer from the API. */
function refusedData(model: string): VObject {
  return new Map<string, Value>([
    ["status", null],
    ["request_id", null],
    ["attempts", 0],
    ["model", model],
  ]);
}

function errorValue(err: ProviderError, attempts: number, model: string, turns = 1): VObject {
  const data = errorData(err, attempts, model);
  if (err.retryAfterMs !== null) data.set("retry_after_ms", err.retryAfterMs);
  // a call that got as far as a tool loop says how far
  if (turns > 1) data.set("turns", turns);
  return makeError(err.kind, err.message, data);
}

let toolsModule: Promise<typeof import("../tools/toolbox.ts")> | null = null;
function loadTools(): Promise<typeof import("../tools/toolbox.ts")> {
  return (toolsModule ??= import("../tools/toolbox.ts"));
}

/** A call's or a judge's input as sent; one too large to send is `thrown` at the call (not at its statement). */
function inputText(v: Value, site: Site): string {
  try {
    return serializeInput(v);
  } catch (err) {
    if (err instanceof ValueTooLarge) throw thrown(`value too large: ${err.message}`, site);
    throw err;
  }
}

function cancelledValue(): VObject {
  return makeError("cancelled", "the call was cancelled before it finished");
}



function formatMs(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** Settles with the provider's promise, or rejects with ABORTED the moment the attempt is aborted. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      p.catch(() => {});
      return reject(ABORTED);
    }
    const onAbort = () => reject(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

