// The one small interface every model provider implements (anthropic, sim, script).
// Providers do a single attempt; retries, timeouts, memory and accounting live in the call layer.
import type { JudgeKind } from "./agent-runtime.ts";
import type { Site } from "./values.ts";

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
  /** the agents `agentName` was derived from with `.with(...)`, nearest first: script rules may name them too */
  agentBases: readonly string[];
  /** where the call is in the program, for messages about it (a script rule missing under --strict-script) */
  site: Site;
  /** reply length limit (agent `max_tokens`, else the layer's default) */
  maxTokens?: number;
  /** tools offered to the model (absent or empty: none, and the request carries no `tools`) */
  tools?: ToolSpec[];
  /** the API's own tools offered beside them (network="allow"); the API runs them, not the runtime */
  serverTools?: ServerTool[];
  /** the earlier turns of this call's tool loop, oldest first (absent or empty on the first request) */
  history?: Turn[];
  /** a typed call (`returns=`): the JSON Schema the reply's text must fit, sent as the output format */
  output?: Record<string, unknown>;
  /** `output` is the envelope `{value, memory_patch?}` around the value's schema (spec/typed-results.md §4) */
  outputEnveloped?: boolean;
  signal: AbortSignal;
}

export interface ModelReply {
  /** the reply's text blocks, concatenated */
  text: string;
  model: string;
  usage: Usage;
  requestId: string | null;
  /** why the model stopped (`end_turn`, `tool_use`, `max_tokens`, …); absent: it answered */
  stopReason?: string | null;
  /** the tools the reply asks for, in order (absent: none) */
  toolUses?: ToolUse[];
  /** the reply as blocks, sent back as the assistant turn when the loop goes on (absent: just `text`) */
  content?: AssistantBlock[];
}

/** A tool as offered to the model: its name, what it does, and a JSON Schema for its input. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** One tool use the model asked for. `input` is untrusted: whatever the model wrote. */
export interface ToolUse {
  id: string;
  name: string;
  input: unknown;
}

/** Anthropic's server tools: searched and fetched by the API itself. */
export type ServerTool = "web_search" | "web_fetch";

/** `server`: a block of the API's own tool use (the call and its result), sent back exactly as it came. */
export type AssistantBlock = { type: "text"; text: string } | ({ type: "tool_use" } & ToolUse) | { type: "server"; block: unknown };

/** The answer to one tool use, sent back in the next request. */
export interface ToolResult {
  toolUseId: string;
  content: string;
  isError: boolean;
}

/**
 * A past turn of the loop: what the model said, then the results of the tools it asked for; or, after a typed
 * reply that did not fit its schema, the runtime's text saying what is wrong (a re-ask, spec/typed-results.md).
 */
export type Turn = { role: "assistant"; content: AssistantBlock[] } | { role: "tool_results"; results: ToolResult[] } | { role: "user"; text: string };

export interface JudgeModelRequest {
  kind: JudgeKind | "choose";
  model: string;
  criterion: string;
  /** the judged value, serialized */
  input: string;
  /** option labels, for `choose` */
  labels: string[] | null;
  /** where the judge is in the program, for messages about it */
  site: Site;
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
