// A local stand-in for the Messages API (POST /v1/messages), good enough for the real SDK.
// Tests queue answers (or install a handler), point the SDK at `url` with a dummy key, and read
// back the recorded requests. Start and stop it inside each test file.
import http, { type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { placeholder } from "../../runtime/providers/placeholder.ts";
import { PromptCache } from "./standin-cache.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  // The request body as the SDK sent it (JSON).
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

interface UsageOverride {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** What the stand-in does with one request. `delayMs` waits before answering. */
type StandinAction =
  | { type: "text"; text: string; delayMs?: number; usage?: UsageOverride; stopReason?: string }
  | { type: "tool"; input: unknown; name?: string; delayMs?: number }
  /** an agent turn asking for tools: optional text, then one tool_use block per call, stop_reason "tool_use" */
  | { type: "tool_use"; calls: { name: string; input: unknown; id?: string }[]; text?: string; delayMs?: number; usage?: UsageOverride }
  /**
   * the API running its own tools (web_search, web_fetch) within one reply: a server_tool_use block and its
   * result per use, then `text`; `pause_turn` when the API paused its loop. A 400 when a tool is not offered.
   */
  | { type: "server_tools"; uses: { name: "web_search" | "web_fetch"; input: Record<string, unknown> }[]; text?: string; stopReason?: "end_turn" | "pause_turn"; delayMs?: number }
  /** a judge reply that ignores the forced tool */
  | { type: "no_tool"; text?: string; delayMs?: number }
  | { type: "error"; status: number; message?: string; retryAfter?: string; retryAfterMs?: number; delayMs?: number }
  /** headers and part of the body, then the socket is destroyed */
  | { type: "truncate"; text?: string; delayMs?: number }
  /** the connection is destroyed before any response */
  | { type: "reset"; delayMs?: number }
  /** this exact body, with status 200 unless told (a broken server or proxy) */
  | { type: "body"; body: string; contentType?: string; status?: number; delayMs?: number }
  /** never answers; only the client giving up ends it */
  | { type: "hang" };

type StandinHandler = (req: RecordedRequest, index: number) => StandinAction | Promise<StandinAction>;

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

export class Standin {
  url = "";
  readonly requests: RecordedRequest[] = [];
  /** the most requests in flight at once */
  maxInFlight = 0;
  /** requests whose client closed the connection before the answer was sent (aborts, timeouts) */
  abandoned = 0;
  private inFlight = 0;
  private queue: StandinAction[] = [];
  private handler: StandinHandler | null = null;
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  /** prompt caching as the API does it (standin-cache.ts); `cache.minTokens` sets the minimum */
  readonly cache = new PromptCache();
  private seq = 0;

  constructor() {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Answers for the next requests, in order; after they run out the handler (or the default) answers. */
  enqueue(...actions: StandinAction[]): this {
    this.queue.push(...actions);
    return this;
  }

  setHandler(h: StandinHandler | null): this {
    this.handler = h;
    return this;
  }

  reset(): this {
    this.queue = [];
    this.handler = null;
    this.requests.length = 0;
    this.maxInFlight = 0;
    this.abandoned = 0;
    this.cache.clear();
    return this;
  }

  /** The environment a CLI run needs to use the stand-in through the real SDK. */
  env(): Record<string, string> {
    return { ANTHROPIC_API_KEY: "sk-ant-standin-dummy", ANTHROPIC_BASE_URL: this.url };
  }

  private async handle(req: http.IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      body = null;
    }
    const rec: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body };
    const index = this.requests.length;
    this.requests.push(rec);
    if (req.method !== "POST" || !req.url?.startsWith("/v1/messages")) {
      return send(res, 404, { type: "error", error: { type: "not_found_error", message: `no route ${req.method} ${req.url}` } }, this.requestId());
    }
    // what the real API refuses about a conversation with tools, it refuses here too
    const invalid = surrogateProblem(body) ?? conversationProblem(body) ?? outputFormatProblem(body);
    if (invalid !== null) {
      return send(res, 400, { type: "error", error: { type: "invalid_request_error", message: invalid } }, this.requestId());
    }
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const action = this.queue.shift() ?? (await (this.handler ?? defaultHandler)(rec, index));
      await this.respond(rec, action, res);
    } finally {
      this.inFlight--;
    }
  }

  private requestId(): string {
    return `req_standin_${++this.seq}`;
  }

  private async respond(rec: RecordedRequest, action: StandinAction, res: ServerResponse): Promise<void> {
    if (action.type === "hang") {
      await new Promise<void>((resolve) => res.on("close", resolve));
      this.abandoned++;
      return;
    }
    if (action.delayMs) {
      const gone = await Promise.race([
        new Promise<boolean>((r) => setTimeout(() => r(false), action.delayMs)),
        new Promise<boolean>((r) => res.on("close", () => r(true))),
      ]);
      if (gone) {
        this.abandoned++;
        return;
      }
    }
    const id = this.requestId();
    switch (action.type) {
      case "text":
        return send(res, 200, this.message(rec, [{ type: "text", text: action.text }], action.stopReason ?? "end_turn", action.usage), id);
      case "tool": {
        const name = action.name ?? rec.body?.tool_choice?.name ?? "tool";
        return send(res, 200, this.message(rec, [{ type: "tool_use", id: `toolu_${id}`, name, input: action.input }], "tool_use"), id);
      }
      case "tool_use": {
        const blocks: unknown[] = action.text ? [{ type: "text", text: action.text }] : [];
        action.calls.forEach((c, i) => blocks.push({ type: "tool_use", id: c.id ?? `toolu_${id}_${i}`, name: c.name, input: c.input }));
        return send(res, 200, this.message(rec, blocks, "tool_use", action.usage), id);
      }
      case "server_tools": {
        const offered = new Set((rec.body?.tools ?? []).map((t: { type?: string }) => t.type));
        const blocks: unknown[] = [];
        for (const [i, u] of action.uses.entries()) {
          const type = u.name === "web_search" ? "web_search_20250305" : "web_fetch_20250910";
          if (!offered.has(type)) return send(res, 400, { type: "error", error: { type: "invalid_request_error", message: `the model used ${u.name}, but no tool of type ${type} was offered` } }, id);
          const useId = `srvtoolu_${id}_${i}`;
          blocks.push({ type: "server_tool_use", id: useId, name: u.name, input: u.input });
          blocks.push(u.name === "web_search" ? webSearchResult(useId, String(u.input.query ?? "")) : webFetchResult(useId, String(u.input.url ?? "")));
        }
        if (action.text) blocks.push({ type: "text", text: action.text });
        return send(res, 200, this.message(rec, blocks, action.stopReason ?? "end_turn"), id);
      }
      case "no_tool":
        return send(res, 200, this.message(rec, [{ type: "text", text: action.text ?? "I think it probably does." }], "end_turn"), id);
      case "error": {
        const headers: Record<string, string> = {};
        if (action.retryAfter !== undefined) headers["retry-after"] = action.retryAfter;
        if (action.retryAfterMs !== undefined) headers["retry-after-ms"] = String(action.retryAfterMs);
        const type = ERROR_TYPES[action.status] ?? (action.status >= 500 ? "api_error" : "invalid_request_error");
        return send(res, action.status, { type: "error", error: { type, message: action.message ?? `stand-in ${action.status}` } }, id, headers);
      }
      case "truncate": {
        const full = JSON.stringify(this.message(rec, [{ type: "text", text: action.text ?? "x".repeat(4096) }], "end_turn"));
        res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(full)), "request-id": id });
        res.write(full.slice(0, Math.floor(full.length / 2)));
        // Let the partial body reach the client before the connection dies.
        await new Promise((r) => setTimeout(r, 20));
        res.socket?.destroy();
        return;
      }
      case "reset":
        res.socket?.destroy();
        return;
      case "body":
        res.writeHead(action.status ?? 200, { "content-type": action.contentType ?? "application/json", "content-length": String(Buffer.byteLength(action.body)), "request-id": id });
        res.end(action.body);
        return;
      default: {
        const never: never = action;
        throw new Error(`unknown stand-in action ${JSON.stringify(never)}`);
      }
    }
  }

  /** A Messages API reply; the usage imitates prompt caching of the marked blocks. */
  private message(rec: RecordedRequest, content: unknown[], stopReason: string, usage: UsageOverride = {}) {
    const body = rec.body ?? {};
    const cached = this.cache.usage(body);
    return {
      id: `msg_${this.seq}`,
      type: "message",
      role: "assistant",
      model: body.model ?? "unknown",
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input_tokens ?? cached.input_tokens,
        output_tokens: usage.output_tokens ?? Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
        cache_read_input_tokens: usage.cache_read_input_tokens ?? cached.cache_read_input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens ?? cached.cache_creation_input_tokens,
      },
    };
  }
}

/** The API's JSON parser refuses a string with half a surrogate pair (JSON.stringify writes one as a `\ud83d` escape). */
function surrogateProblem(body: unknown): string | null {
  const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  const walk = (v: unknown): boolean =>
    typeof v === "string" ? lone.test(v) : Array.isArray(v) ? v.some(walk) : typeof v === "object" && v !== null ? Object.entries(v).some(([k, x]) => lone.test(k) || walk(x)) : false;
  return walk(body) ? "The request body is not valid JSON: no low surrogate in string" : null;
}

/**
 * The Messages API's rules for tool conversations (a 400 when broken): messages alternate, starting with the
 * user; every tool_use of an assistant turn is answered by a tool_result in the very next user message, and
 * results answer only those; a conversation with tool blocks must define tools.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function conversationProblem(body: any): string | null {
  const messages = body?.messages;
  if (!Array.isArray(messages)) return null;
  let hasToolBlocks = false;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const want = i % 2 === 0 ? "user" : "assistant";
    if (m?.role !== want) return `messages.${i}: expected role "${want}", got ${JSON.stringify(m?.role)} (roles must alternate, starting with user)`;
    const blocks: { type: string; id?: string; tool_use_id?: string; text?: string }[] = Array.isArray(m.content) ? m.content : [];
    if (Array.isArray(m.content) && m.content.length === 0) return `messages.${i}: content must not be empty`;
    for (const b of blocks) if (b.type === "text" && b.text === "") return `messages.${i}: text content blocks must be non-empty`;
    const uses = blocks.filter((b) => b.type === "tool_use").map((b) => b.id);
    if (new Set(uses).size < uses.length) return `messages.${i}: \`tool_use\` ids must be unique`;
    const serverUses = blocks.filter((b) => b.type === "server_tool_use").map((b) => b.id);
    if (serverUses.length > 0) hasToolBlocks = true;
    const serverResults = new Set(blocks.filter((b) => b.type === "web_search_tool_result" || b.type === "web_fetch_tool_result").map((b) => b.tool_use_id));
    const unanswered = serverUses.filter((u) => !serverResults.has(u));
    if (unanswered.length > 0 && i < messages.length - 1) return `messages.${i}: \`server_tool_use\` blocks without their results: ${unanswered.join(", ")}`;
    const results = blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id);
    if (uses.length > 0 || results.length > 0) hasToolBlocks = true;
    if (m.role === "user" && results.length > 0) {
      const before = messages[i - 1];
      const asked = new Set((Array.isArray(before?.content) ? before.content : []).filter((b: { type: string }) => b.type === "tool_use").map((b: { id: string }) => b.id));
      for (const r of results) if (!asked.has(r)) return `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${r}`;
    }
    if (m.role === "assistant" && uses.length > 0) {
      const next = messages[i + 1];
      if (next === undefined) return `messages.${i}: the last message may not be an assistant turn with tool_use blocks`;
      const answered = new Set((Array.isArray(next.content) ? next.content : []).filter((b: { type: string }) => b.type === "tool_result").map((b: { tool_use_id: string }) => b.tool_use_id));
      const missing = uses.filter((u) => !answered.has(u));
      if (missing.length > 0) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
  }
  if (hasToolBlocks && !(Array.isArray(body.tools) && body.tools.length > 0)) return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  return null;
}

/**
 * Structured output (`output_config.format`): the API takes a `json_schema` format whose every object schema
 * says `additionalProperties: false`, and refuses the request otherwise.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function outputFormatProblem(body: any): string | null {
  const format = body?.output_config?.format;
  if (format === undefined || format === null) return null;
  if (format.type !== "json_schema") return `output_config.format.type: expected "json_schema", got ${JSON.stringify(format.type)}`;
  if (typeof format.schema !== "object" || format.schema === null || Array.isArray(format.schema)) return "output_config.format.schema: expected a JSON Schema object";
  const open = (s: unknown, at: string): string | null => {
    if (typeof s !== "object" || s === null) return null;
    const o = s as Record<string, unknown>;
    if (o.type === "object" && o.additionalProperties !== false) return `${at}: objects must set additionalProperties to false`;
    for (const [k, v] of Object.entries(o)) {
      const inner = k === "properties" || k === "$defs" ? Object.entries(v as object).map(([n, x]) => open(x, `${at}.${k}.${n}`)).find((p) => p !== null) : typeof v === "object" ? open(v, `${at}.${k}`) : null;
      if (inner) return inner;
    }
    return null;
  };
  return open(format.schema, "output_config.format.schema");
}

function webSearchResult(toolUseId: string, query: string) {
  const slug = query.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  return {
    type: "web_search_tool_result",
    tool_use_id: toolUseId,
    content: [{ type: "web_search_result", url: `https://example.com/${slug}`, title: `About ${query}`, encrypted_content: `enc-${slug}`, page_age: null }],
  };
}

function webFetchResult(toolUseId: string, url: string) {
  return {
    type: "web_fetch_tool_result",
    tool_use_id: toolUseId,
    content: { type: "web_fetch_result", url, retrieved_at: "2026-01-01T00:00:00Z", content: { type: "document", source: { type: "text", media_type: "text/plain", data: `the page at ${url}` }, title: url } },
  };
}

function send(res: ServerResponse, status: number, payload: unknown, requestId: string, headers: Record<string, string> = {}): void {
  const data = JSON.stringify(payload);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(data)), "request-id": requestId, ...headers });
  res.end(data);
}

/**
 * Without a queue or handler: agent calls get `[standin] <first line of the task>` (typed calls a placeholder of
 * their schema's shape, its strings "[standin]"), verdicts are
 * true and choose picks the LAST label (so runs differ visibly from the simulator).
 */
export const defaultHandler: StandinHandler = (req) => {
  const body = req.body ?? {};
  const choice = body.tool_choice;
  if (choice?.type === "tool") {
    const tool = (body.tools ?? []).find((t: { name: string }) => t.name === choice.name);
    const labels: string[] | undefined = tool?.input_schema?.properties?.label?.enum;
    return { type: "tool", input: labels ? { label: labels[labels.length - 1] } : { verdict: true } };
  }
  // a typed call: a value of the schema's shape, as JSON text
  const format = body.output_config?.format;
  if (format?.type === "json_schema") {
    const p = placeholder(format.schema, "[standin]");
    return { type: "text", text: p.ok ? JSON.stringify(p.value) : `(no placeholder: ${p.problem})` };
  }
  const first = body.messages?.[0]?.content?.[0]?.text ?? "";
  return { type: "text", text: `[standin] ${String(first).split("\n")[0]}` };
};

export async function startStandin(): Promise<Standin> {
  return new Standin().start();
}
