// Claude through the official SDK. One attempt per call: the SDK's own retries are off
// (maxRetries 0) so `retry=` is the only retry policy and its promises hold exactly.
import Anthropic from "@anthropic-ai/sdk";
import type {
  ContentBlock,
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
  ToolUnion,
} from "@anthropic-ai/sdk/resources/messages/messages";
import {
  ProviderError,
  type AssistantBlock,
  type JudgeModelReply,
  type JudgeModelRequest,
  type ModelReply,
  type ModelRequest,
  type Provider,
  type ServerTool,
  type ToolUse,
  type Turn,
  type Usage,
} from "../provider.ts";
import { cutText, wellFormed } from "../text.ts";
import { CachePlanner } from "./cache-plan.ts";
import { fetchWithoutIdleLimit } from "./http-fetch.ts";

/** Reply length when neither the agent (`max_tokens=`) nor VVM_MAX_TOKENS says otherwise. */
const DEFAULT_MAX_TOKENS = 8192;
const EPHEMERAL = { cache_control: { type: "ephemeral" } } as const;
/** Judges answer through one small tool call. */
const JUDGE_MAX_TOKENS = 512;
/**
 * The SDK's own per-request timeout. The call layer bounds each attempt itself (timeout=),
 * so this only has to be long enough never to fire first; passing it also keeps the SDK from
 * refusing large max_tokens on non-streaming requests.
 */
const SDK_TIMEOUT_MS = 60 * 60 * 1000;

interface AnthropicProviderOptions {
  apiKey: string;
  /** undefined: the SDK's default (https://api.anthropic.com) */
  baseURL: string | undefined;
  /** SDK log lines (it logs at "warn" and above by default) */
  log: (message: string) => void;
}

export class AnthropicProvider implements Provider {
  readonly name = "anthropic";
  private readonly client: Anthropic;
  private readonly cache = new CachePlanner();

  constructor(opts: AnthropicProviderOptions) {
    const log = (level: string) => (msg: string, ...rest: unknown[]) =>
      opts.log(`anthropic sdk ${level}: ${[msg, ...rest.map((r) => (typeof r === "string" ? r : JSON.stringify(r)))].join(" ")}`);
    this.client = new Anthropic({
      apiKey: opts.apiKey,
      baseURL: opts.baseURL,
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
      // Node's fetch ends a request after 300 s without headers or body bytes, before timeout= could
      fetch: fetchWithoutIdleLimit,
      logger: { error: log("error"), warn: log("warn"), info: log("info"), debug: log("debug") },
    });
  }

  async complete(req: ModelRequest): Promise<ModelReply> {
    const content: TextBlockParam[] = [];
    if (req.task.trim() !== "") content.push({ type: "text", text: req.task });
    if (req.input !== null) content.push({ type: "text", text: inputBlock(req.input) });
    // The API refuses an empty message; a call with neither task text nor input still says so.
    if (content.length === 0) content.push({ type: "text", text: "(no task text and no input)" });

    const params: MessageCreateParamsNonStreaming = {
      model: req.model,
      max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
      messages: [{ role: "user", content }, ...historyMessages(req.history ?? [])],
    };
    const tools: ToolUnion[] = (req.tools ?? []).map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema as Tool["input_schema"] }));
    for (const s of req.serverTools ?? []) tools.push(serverTool(s));
    if (tools.length > 0) params.tools = tools;
    // a typed call: the API's structured output holds the final text to the schema (spec/typed-results.md)
    if (req.output) params.output_config = { format: { type: "json_schema", schema: req.output } };
    // only blocks likely to be read again are marked (cache-plan.ts): a cache write nothing reads costs 1.25x
    const marks = this.cache.plan(req.model, JSON.stringify(params.tools ?? []) + req.system, req.system, req.memoryContext || null);
    const system: TextBlockParam[] = [];
    if (req.system !== "") system.push({ type: "text", text: req.system, ...(marks.system ? EPHEMERAL : {}) });
    if (req.memoryContext) system.push({ type: "text", text: req.memoryContext, ...(marks.memory ? EPHEMERAL : {}) });
    if (system.length > 0) params.system = system;
    const msg = await this.send(params, req.signal);
    const blocks: AssistantBlock[] = [];
    const toolUses: ToolUse[] = [];
    for (const b of msg.content) {
      if (b.type === "text") blocks.push({ type: "text", text: b.text });
      else if (b.type === "tool_use") {
        const use = { id: b.id, name: b.name, input: b.input };
        toolUses.push(use);
        blocks.push({ type: "tool_use", ...use });
      } else if (b.type === "server_tool_use" || b.type === "web_search_tool_result" || b.type === "web_fetch_tool_result") {
        blocks.push({ type: "server", block: b });
      }
    }
    // Tools asked for though none were offered (the API never does; a broken proxy might): answering them as refused
    // would need a request with tool results and no tools, which the API refuses, so the call ends here.
    if (msg.stop_reason === "tool_use" && toolUses.length > 0 && tools.length === 0) {
      const message = `the model asked for tools, but agent '${req.agentName}' was offered none (the API takes no tool results without tools); the call ended without a final answer`;
      throw new ProviderError("rejected", message, false, null, msg.requestId, null, msg.usage);
    }
    // Two tool uses under one id (the API never does; a broken proxy might) cannot both be answered: the API
    // refuses the results, after both tools had run. So neither runs.
    const twice = toolUses.find((u, i) => toolUses.findIndex((v) => v.id === u.id) !== i);
    if (twice !== undefined) {
      const message = `the reply asked for two tools under one tool_use id (${JSON.stringify(cutText(twice.id, 64))}), which the API cannot take results for; no tool ran, and the call ended without a final answer`;
      throw new ProviderError("rejected", message, false, null, msg.requestId, null, msg.usage);
    }
    return { text: textOf(msg.content), model: msg.model, usage: msg.usage, requestId: msg.requestId, stopReason: msg.stop_reason ?? null, toolUses, content: blocks };
  }

  async judge(req: JudgeModelRequest): Promise<JudgeModelReply> {
    const choosing = req.kind === "choose";
    const labels = req.labels ?? [];
    const tool: Tool = choosing
      ? {
          name: "choose_option",
          description: "Report the label of the option that fits best.",
          input_schema: {
            type: "object",
            properties: { label: { type: "string", enum: labels } },
            required: ["label"],
          },
        }
      : {
          name: "give_verdict",
          description: "Report whether the input satisfies the criterion.",
          input_schema: {
            type: "object",
            properties: { verdict: { type: "boolean" } },
            required: ["verdict"],
          },
        };
    const task = judgeTask(req.kind, req.criterion, labels);
    const judgeSystem = choosing ? CHOOSE_SYSTEM : JUDGE_SYSTEM;
    const marks = this.cache.plan(req.model, JSON.stringify([tool]) + judgeSystem, judgeSystem, null);
    const msg = await this.send(
      {
        model: req.model,
        max_tokens: JUDGE_MAX_TOKENS,
        system: [{ type: "text", text: judgeSystem, ...(marks.system ? EPHEMERAL : {}) }],
        tools: [tool],
        tool_choice: { type: "tool", name: tool.name },
        messages: [{ role: "user", content: [{ type: "text", text: task }, { type: "text", text: inputBlock(req.input) }] }],
      },
      req.signal,
    );
    // A reply without the forced tool call, or with an answer outside the schema, is "uncertain"; so is one that
    // calls the tool several times with different answers ("yes" and "no"), rather than the first of them winning.
    const answers = msg.content
      .filter((b): b is Extract<ContentBlock, { type: "tool_use" }> => b.type === "tool_use" && b.name === tool.name)
      .map((b) => b.input as Record<string, unknown>);
    const verdict = choosing ? null : sole(answers.map((a) => (typeof a.verdict === "boolean" ? a.verdict : null)));
    const label = choosing ? sole(answers.map((a) => (typeof a.label === "string" ? a.label : null))) : null;
    return { verdict, label, model: msg.model, usage: msg.usage, requestId: msg.requestId };
  }

  private async send(params: MessageCreateParamsNonStreaming, signal: AbortSignal) {
    let msg;
    let response: (() => Promise<Response | null>) | null = null;
    try {
      // half a surrogate pair (a program input's "\ud83d", a cut inside a character) would make the API refuse the request
      const pending = this.client.messages.create(wellFormed(params), { signal, maxRetries: 0 });
      response = () => pending.asResponse().catch(() => null);
      msg = await pending;
    } catch (err) {
      // A 2xx labelled JSON whose body is not (a proxy's page): a broken reply like any other body that is not a
      // message, with its status and request id. JSON.parse's message would quote the body, which may hold reply text.
      if (err instanceof SyntaxError && response !== null) {
        const res = await response();
        const status = res?.status ?? 200;
        throw new ProviderError("spawn_failed", `the API answered ${status} with a body that is not JSON`, true, status, res?.headers.get("request-id") ?? null);
      }
      throw toProviderError(err);
    }
    const requestId = (msg as { _request_id?: string | null } | null)?._request_id ?? null;
    // A 200 whose body is not a message (null, an array, plain text), or whose blocks are not the blocks the
    // API sends, is a broken reply, retryable like a 5xx. Its fields are read only once they are checked.
    const problem = malformed(msg);
    if (problem !== null) throw new ProviderError("spawn_failed", `the API answered 200 with ${problem}`, true, 200, requestId);
    const u = msg.usage as unknown as Partial<Record<string, unknown>> | null | undefined;
    // a count that is not a whole number ≥ 0 is taken as 0: a negative one would pay back --max-cost
    const count = (n: unknown) => (typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : 0);
    const usage: Usage = {
      inputTokens: count(u?.input_tokens),
      outputTokens: count(u?.output_tokens),
      cacheReadTokens: count(u?.cache_read_input_tokens),
      cacheWriteTokens: count(u?.cache_creation_input_tokens),
    };
    // the name the reply was billed under goes into the summary line, --usage and the trace: one that is not a
    // string, or too long to be a model id (a broken proxy's 1 MB of text), is taken as the model asked for
    const model = typeof msg.model === "string" && msg.model.length <= MAX_MODEL_ID ? msg.model : params.model;
    const stop = typeof msg.stop_reason === "string" ? msg.stop_reason : null;
    // a refusal is no answer, for a judge too: a verdict in the refused reply is not taken
    if (stop === "refusal") throw new ProviderError("rejected", 'the model refused to answer (stop_reason "refusal")', false, null, requestId, null, usage);
    return { content: msg.content, model, stop_reason: stop, usage, requestId };
  }
}

const JUDGE_SYSTEM =
  "You are the judge inside a program runtime. Decide whether the input satisfies the criterion and answer only " +
  "through the give_verdict tool. Answer true only when you are confident; when unsure, answer false.";
const CHOOSE_SYSTEM =
  "You are the judge inside a program runtime. Pick the option label that best fits the criterion for the input and " +
  "answer only through the choose_option tool. When options fit equally well, pick the one listed first.";

function judgeTask(kind: JudgeModelRequest["kind"], criterion: string, labels: string[]): string {
  switch (kind) {
    case "predicate":
    case "case":
      return `Criterion: ${criterion}`;
    case "require":
      return `Requirement: ${criterion}`;
    case "choose":
      return `Criterion: ${criterion}\n\nOptions, in order: ${labels.map((l) => JSON.stringify(l)).join(", ")}`;
    default: {
      const never: never = kind;
      return never;
    }
  }
}

/** The spec's text encoding of a call input, sent as its own content block. */
export function inputBlock(serialized: string): string {
  return `Input:\n---\n${serialized}\n---`;
}

/**
 * The loop's earlier turns as Messages API messages: each assistant turn as the model gave it, then a user
 * message of tool_result blocks in the order of its tool_use blocks. The newest result is cache-marked, so
 * each request of a long loop reads the conversation so far from the prompt cache (system, memory and this
 * make three of the API's four breakpoints).
 */
function historyMessages(history: Turn[]): MessageParam[] {
  const out: MessageParam[] = history.map((t): MessageParam => {
    if (t.role === "assistant") {
      // (the API refuses empty text blocks, which a model may still have sent)
      const content: ContentBlockParam[] = t.content
        .filter((b) => b.type !== "text" || b.text !== "")
        .map((b): ContentBlockParam => {
          switch (b.type) {
            case "text":
              return { type: "text", text: b.text };
            case "tool_use":
              return { type: "tool_use", id: b.id, name: b.name, input: b.input };
            case "server":
              return b.block as ContentBlockParam;
            default: {
              const never: never = b;
              return never;
            }
          }
        });
      return { role: "assistant", content };
    }
    if (t.role === "user") return { role: "user", content: [{ type: "text", text: t.text }] };
    const content: ToolResultBlockParam[] = t.results.map((r) => ({ type: "tool_result", tool_use_id: r.toolUseId, content: r.content, ...(r.isError ? { is_error: true } : {}) }));
    return { role: "user", content };
  });
  const last = out[out.length - 1];
  if (last && last.role === "user" && Array.isArray(last.content) && last.content.length > 0) {
    const block = last.content[last.content.length - 1] as ToolResultBlockParam | TextBlockParam;
    last.content[last.content.length - 1] = { ...block, cache_control: { type: "ephemeral" } };
  }
  return out;
}

/** Searches and fetches the API may run in one request: enough for a question, not a crawl. */
const SERVER_TOOL_MAX_USES = 5;

function serverTool(s: ServerTool): ToolUnion {
  switch (s) {
    case "web_search":
      return { type: "web_search_20250305", name: "web_search", max_uses: SERVER_TOOL_MAX_USES };
    case "web_fetch":
      return { type: "web_fetch_20250910", name: "web_fetch", max_uses: SERVER_TOOL_MAX_USES };
    default: {
      const never: never = s;
      return never;
    }
  }
}

/** What is wrong with a reply's body, as "a body that …" words; null for a message whose blocks can be read. */
function malformed(msg: unknown): string | null {
  if (typeof msg !== "object" || msg === null || Array.isArray(msg) || !Array.isArray((msg as { content?: unknown }).content)) return "a body that is not a message";
  for (const b of (msg as { content: unknown[] }).content) {
    if (typeof b !== "object" || b === null || typeof (b as { type?: unknown }).type !== "string") return "a content block that is not an object with a type";
    const block = b as Record<string, unknown>;
    if (block.type === "text" && typeof block.text !== "string") return "a text block without text";
    if (block.type === "tool_use" && (typeof block.id !== "string" || typeof block.name !== "string")) return "a tool_use block without a string id and name";
    // (sent back in the next request as it came: the API would refuse one whose input is not an object)
    if (block.type === "tool_use" && (typeof block.input !== "object" || block.input === null || Array.isArray(block.input))) return "a tool_use block whose input is not an object";
  }
  return null;
}

/** The one answer every use of the judge's tool gave, or null (none, an unusable one, or two that differ). */
function sole<T>(answers: (T | null)[]): T | null {
  const first = answers[0] ?? null;
  return answers.every((a) => a !== null && a === first) ? first : null;
}

function textOf(blocks: ContentBlock[]): string {
  let out = "";
  for (const b of blocks) if (b.type === "text") out += b.text;
  return out;
}

/** SDK failures → the error kinds of spec/language.md §2 and §4.1 (see spec/agent-calls.md for the table). */
function toProviderError(err: unknown): ProviderError {
  if (err instanceof Anthropic.APIUserAbortError) {
    // The call layer tells a timeout from a cancellation by which signal fired; this is only a fallback.
    return new ProviderError("timeout", "the request was aborted", true);
  }
  if (err instanceof Anthropic.APIConnectionTimeoutError) {
    return new ProviderError("timeout", "the request timed out", true);
  }
  if (err instanceof Anthropic.APIConnectionError) {
    const cause = err.cause instanceof Error ? `: ${describeCause(err.cause)}` : "";
    return new ProviderError("spawn_failed", `could not reach the Messages API${cause}`, true);
  }
  if (err instanceof Anthropic.APIError && typeof err.status === "number") {
    const status = err.status;
    const requestId = err.requestID ?? null;
    // a proxy's error page comes whole as the message: kept short, since it goes into the error value and every trace attempt
    const detail = brief(err.apiMessage ?? err.message);
    if (status === 429) {
      return new ProviderError("rejected", `rate limited (HTTP 429): ${detail}`, true, status, requestId, retryAfterMs(err.headers));
    }
    if (status >= 500) {
      const what = status === 529 ? "the API is overloaded" : "the API failed";
      return new ProviderError("spawn_failed", `${what} (HTTP ${status}): ${detail}`, true, status, requestId, retryAfterMs(err.headers));
    }
    return new ProviderError("rejected", `the API refused the request (HTTP ${status}): ${detail}`, false, status, requestId);
  }
  if (err instanceof Anthropic.AnthropicError) {
    return new ProviderError("rejected", `the SDK refused the request: ${err.message}`, false);
  }
  // A request too large or too deep to write (a tool input a model nested 100,000 deep, in the history it
  // sends back): sending it again would fail the same way.
  if (err instanceof RangeError) return new ProviderError("rejected", `the request could not be written: ${err.message}`, false);
  // A body cut off mid-response surfaces as a fetch/JSON error after the headers arrived.
  const message = err instanceof Error ? describeCause(err) : String(err);
  return new ProviderError("spawn_failed", `the request failed before a complete reply arrived: ${message}`, true);
}

/** The API's (or a proxy's) message, cut after MAX_DETAIL characters. */
function brief(message: string): string {
  if (message.length <= MAX_DETAIL) return message;
  const cut = cutText(message, MAX_DETAIL);
  return `${cut}… (${message.length - cut.length} characters more)`;
}
const MAX_DETAIL = 500;
/** Longer than any model id (they are some 30 characters). */
const MAX_MODEL_ID = 256;

function describeCause(e: Error): string {
  const inner = e.cause instanceof Error ? ` (${e.cause.message})` : "";
  return `${e.message}${inner}`;
}

/** `retry-after-ms`, then `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Headers | undefined | null): number | null {
  if (!headers) return null;
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const raw = headers.get("retry-after");
  if (raw === null) return null;
  // a number is seconds (a negative one is invalid: V8 would read "-5" as a date); otherwise an HTTP date
  if (/^\s*[-+]?\d/.test(raw)) {
    const secs = Number.parseFloat(raw);
    return Number.isFinite(secs) && secs >= 0 ? Math.round(secs * 1000) : null;
  }
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}
