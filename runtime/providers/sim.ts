// The offline simulator: deterministic, instant, free. Replies name the agent and the task so a
// program's data flow stays visible (typed calls get a placeholder of their schema's shape); judges answer "uncertain" (predicates false, choose first).
import { placeholder } from "./placeholder.ts";
import { ProviderError, type JudgeModelReply, type JudgeModelRequest, type ModelReply, type ModelRequest, type Provider, type Usage } from "../provider.ts";

export const ZERO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

/** `[sim:<agent>] <first non-blank line of the task>` */
function simReplyText(agentName: string, task: string): string {
  const line = task.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return `[sim:${agentName}] ${line}`.trimEnd();
}

/** A placeholder of the schema, or the call fails saying why none can be made (one too large). */
function typedReply(schema: Record<string, unknown>, label: string): string {
  const p = placeholder(schema, label);
  if (!p.ok) throw new ProviderError("rejected", `the simulator cannot make a value for this returns= schema: ${p.problem}`, false);
  return JSON.stringify(p.value);
}

export class SimProvider implements Provider {
  readonly name = "sim";

  async complete(req: ModelRequest): Promise<ModelReply> {
    // a typed call gets a value of its schema's shape, its strings labelled like a text reply
    const text = req.output ? typedReply(req.output, `[sim:${req.agentName}]`) : simReplyText(req.agentName, req.task);
    return { text, model: req.model, usage: ZERO_USAGE, requestId: null };
  }

  async judge(req: JudgeModelRequest): Promise<JudgeModelReply> {
    return { verdict: null, label: null, model: req.model, usage: ZERO_USAGE, requestId: null };
  }
}
