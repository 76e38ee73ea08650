// The call layer: turns the interpreter's requests into provider attempts with retries, per-attempt
// timeouts, cancellation, memory sessions, accounting and trace events. Providers do one attempt each.
import type { AgentCallRequest, AgentRuntime, ChooseRequest, JudgeRequest } from "../agent-runtime.ts";
import type { MemoryPort, MemorySession } from "../memory-port.ts";
import {
  ProviderError,
  type JudgeModelReply,
  type JudgeModelRequest,
  type ModelReply,
  type ModelRequest,
  type Provider,
  type Usage,
} from "../provider.ts";
import { roundMs, siteText, type TraceSink } from "../trace.ts";
import { errorKind, isErrorValue, makeError, serializeInput, thrown, typeName, VvmRaise, type Site, type Value, type VObject } from "../values.ts";
import { DEFAULT_MODEL, resolveModel, type ModelOverrides } from "../providers/models.ts";
import { Accounting, usageFields } from "./accounting.ts";
import { checkMemoryMode, parseCallOptions, type Backoff } from "../options.ts";
import { sleep } from "../abort.ts";

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
}

interface Policy {
  retry: number;
  backoff: Backoff;
  timeoutMs: number;
}

type Outcome<T> = { ok: true; reply: T; attempts: number } | { ok: false; error: ProviderError | "cancelled"; attempts: number };

/** Thrown inside an attempt when its own deadline passes or the caller cancels. */
const ABORTED = Symbol("aborted");

export class CallRuntime implements AgentRuntime {
  private readonly retry: RetryTuning;
  private nextId = 1;

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
    const model = resolveModel(configString(cfg, "model", site) ?? DEFAULT_MODEL, this.deps.models);
    const system = configString(cfg, "prompt", site) ?? "";
    const maxTokens = configMaxTokens(cfg, site) ?? this.deps.maxTokens;
    const id = this.nextId++;
    const base = { call: id, agent: agent.name, name: opts.name, model };

    const memoryConfig = cfg.get("memory");
    let session: MemorySession | null = null;
    // Any memory value but unit goes to the store, which refuses a malformed one with error(kind="rejected").
    if (memoryConfig !== undefined && memoryConfig !== null) {
      const mode = checkMemoryMode(opts.memoryMode, site);
      if (signal.aborted) return this.finishCall(base, site, cancelledValue(), 0, 0);
      if (!this.deps.memory) return this.finishCall(base, site, makeError("rejected", "agent memory is not available in this runtime"), 0, 0);
      const query = req.input === null ? req.task : `${req.task}\n${serializeInput(req.input)}`;
      const opened = await this.deps.memory.open(memoryConfig, { site, agentName: agent.name, model, mode }, signal, query);
      // An error value from the store (e.g. locked) is the call's result: the model is never called.
      if (opened instanceof Map) return this.finishCall(base, site, opened, 0, 0);
      session = opened;
    }

    const started = performance.now();
    const request: Omit<ModelRequest, "signal"> = {
      model,
      system,
      memoryContext: session?.context ?? null,
      task: req.task,
      input: req.input === null ? null : serializeInput(req.input),
      agentName: agent.name,
      callName: opts.name,
      maxTokens,
    };
    const policy = { retry: opts.retry, backoff: opts.backoff, timeoutMs: opts.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS };
    let outcome: Outcome<ModelReply>;
    try {
      outcome = await this.attempts("call", base, policy, signal, (s) => this.deps.provider.complete({ ...request, signal: s }));
    } catch (err) {
      await session?.release();
      throw err;
    }
    const ms = performance.now() - started;
    if (!outcome.ok) {
      await session?.release();
      const value = outcome.error === "cancelled" ? cancelledValue() : errorValue(outcome.error, outcome.attempts, model);
      return this.finishCall(base, site, value, outcome.attempts, ms);
    }
    const text = session ? await session.complete(outcome.reply.text) : outcome.reply.text;
    return this.finishCall(base, site, text, outcome.attempts, ms);
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
    const request = { kind, model, criterion, input: serializeInput(input), labels };
    const outcome = await this.attempts("judge", base, JUDGE_POLICY, signal, (s) => this.deps.provider.judge({ ...request, signal: s }));
    const ms = roundMs(performance.now() - started);
    this.deps.accounting.finished("judge", outcome.ok ? null : outcome.error === "cancelled" ? "cancelled" : outcome.error.kind);
    if (outcome.ok) {
      // A label outside the options is no answer (uncertain: the first option wins), whichever provider gave it.
      const label = outcome.reply.label !== null && labels?.includes(outcome.reply.label) ? outcome.reply.label : null;
      const r = { ...outcome.reply, label };
      const answer = kind === "choose" ? { label: label ?? labels![0], uncertain: label === null } : { verdict: r.verdict === true, uncertain: r.verdict === null };
      if (this.deps.trace.enabled) this.deps.trace.emit({ type: "judge", ...base, site: siteText(site.path, site.span), attempts: outcome.attempts, ok: true, ...answer, ms });
      return r;
    }
    const err = outcome.error;
    if (this.deps.trace.enabled) {
      this.deps.trace.emit({ type: "judge", ...base, site: siteText(site.path, site.span), attempts: outcome.attempts, ok: false, error_kind: err === "cancelled" ? "cancelled" : err.kind, ms });
    }
    if (err === "cancelled") throw new VvmRaise(cancelledValue(), site);
    const data = errorData(err, outcome.attempts, model);
    data.set("kind", err.kind);
    throw thrown(`the ${kind} judge failed after ${outcome.attempts} attempt${outcome.attempts === 1 ? "" : "s"}: ${err.message}`, site, data);
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
      const ac = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        ac.abort();
      }, policy.timeoutMs);
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
      accounting.attemptEnded(what, reply?.usage ?? (failure instanceof ProviderError ? failure.usage : null), ms);
      if (reply !== null) {
        if (trace.enabled) trace.emit({ type, ...base, attempt, ok: true, model: reply.model, request_id: reply.requestId, ms: roundMs(ms), ...usageFields(reply.usage) });
        return { ok: true, reply, attempts: attempt };
      }
      // Which signal fired decides the kind: the caller's (cancelled) wins over our deadline (timeout).
      if (signal.aborted) {
        if (trace.enabled) trace.emit({ type, ...base, attempt, ok: false, error_kind: "cancelled", ms: roundMs(ms) });
        return { ok: false, error: "cancelled", attempts: attempt };
      }
      let error: ProviderError;
      if (timedOut) error = new ProviderError("timeout", `no reply within ${formatMs(policy.timeoutMs)} (attempt ${attempt})`, true);
      else if (failure instanceof ProviderError) error = failure;
      else throw failure; // a bug in a provider, not a model failure
      const retryable = error.kind !== "rejected" || error.transient;
      const more = retryable && attempt <= policy.retry;
      const wait = more ? this.backoffMs(policy.backoff, attempt, error.retryAfterMs) : null;
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

  private finishCall(base: Record<string, unknown>, site: Site, value: Value, attempts: number, ms: number): Value {
    const failed = isErrorValue(value);
    this.deps.accounting.finished("call", failed ? (errorKind(value) ?? "error") : null);
    if (this.deps.trace.enabled) {
      const result = failed
        ? { ok: false, error_kind: errorKind(value) }
        : { ok: true, reply_chars: typeof value === "string" ? value.length : null };
      this.deps.trace.emit({ type: "call", ...base, site: siteText(site.path, site.span), attempts, ...result, ms: roundMs(ms) });
    }
    return value;
  }
}

function configString(cfg: VObject, key: string, site: Site): string | null {
  const v = cfg.get(key);
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw thrown(`agent ${key}= must be a string, got a ${typeName(v)}`, site);
  return v;
}

function configMaxTokens(cfg: VObject, site: Site): number | undefined {
  const v = cfg.get("max_tokens");
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw thrown(`agent max_tokens= must be a whole number of at least 1, got ${String(v)}`, site);
  return v;
}

function errorData(err: ProviderError, attempts: number, model: string): VObject {
  return new Map<string, Value>([
    ["status", err.status],
    ["request_id", err.requestId],
    ["attempts", attempts],
    ["model", model],
  ]);
}

function errorValue(err: ProviderError, attempts: number, model: string): VObject {
  const data = errorData(err, attempts, model);
  if (err.retryAfterMs !== null) data.set("retry_after_ms", err.retryAfterMs);
  return makeError(err.kind, err.message, data);
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

