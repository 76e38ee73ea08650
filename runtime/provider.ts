// The one small interface every model provider implements (anthropic, sim, script).
// Providers do a single attempt; retries, timeouts, memory and accounting live in the call layer.
import type { JudgeKind } from "./agent-runtime.ts";

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export interface ModelRequest {
  /** the model id, aliases already resolved by the call layer (runtime/providers/models.ts) */
  model: string;
  /** the agent's system prompt ("" when none) */
  system: string;
  /** the Memory Context, a stable prefix kept apart for prompt caching; null without memory */
  memoryContext: string | null;
  /** the rendered task */
  task: string;
  /** the serialized input, sent as its own delimited block; null when the input is unit */
  input: string | null;
  /** agent name and call label, for sim/script matching and traces */
  agentName: string;
  callName: string | null;
  /** reply length limit (agent `max_tokens`, else the layer's default) */
  maxTokens?: number;
  signal: AbortSignal;
}

export interface ModelReply {
  text: string;
  model: string;
  usage: Usage;
  requestId: string | null;
}

export interface JudgeModelRequest {
  kind: JudgeKind | "choose";
  model: string;
  criterion: string;
  /** the judged value, serialized */
  input: string;
  /** option labels, for `choose` */
  labels: string[] | null;
  signal: AbortSignal;
}

export interface JudgeModelReply {
  /** for predicates: the verdict; null means the model gave no usable verdict (counts as false) */
  verdict: boolean | null;
  /** for choose: a label from `labels`, or null when unusable (first option wins) */
  label: string | null;
  model: string;
  usage: Usage;
  requestId: string | null;
}

export type ProviderErrorKind = "spawn_failed" | "timeout" | "rejected";

/** A failed attempt. `transient` marks a retryable `rejected` (HTTP 429). */
export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly transient: boolean,
    readonly status: number | null = null,
    readonly requestId: string | null = null,
    /** server-requested wait before the next attempt */
    readonly retryAfterMs: number | null = null,
    /** tokens the failed attempt still used (a refusal is billed) */
    readonly usage: Usage | null = null,
  ) {
    super(message);
    this.name = "ProviderError";
  }
}

export interface Provider {
  readonly name: string;
  complete(req: ModelRequest): Promise<ModelReply>;
  judge(req: JudgeModelRequest): Promise<JudgeModelReply>;
}
