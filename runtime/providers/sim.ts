// The offline simulator: deterministic, instant, free. Replies name the agent and the task so a
// program's data flow stays visible (typed calls get a placeholder of their schema's shape); judges answer "uncertain" (predicates false, choose first).
import { RefLoopFound } from "../json-schema.ts";
import { placeholder } from "./placeholder.ts";
import { ProviderError, type JudgeModelReply, type JudgeModelRequest, type ModelReply, type ModelRequest, type Provider, type Usage } from "../provider.ts";

export const ZERO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

/** `[sim:<agent>] <first non-blank line of the task>` */
function simReplyText(agentName: string, task: string): string {
  const line = task.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return `[sim:${agentName}] ${line}`.trimEnd();
}

/**
 * A placeholder of the schema, checked against it: a keyword the placeholder cannot honour (`pattern`, `not`, a
 * second `allOf` part) fails the call with the reason, rather than a re-ask that would get the same reply.
 */
async function typedReply(schema: Record<string, unknown>, enveloped: boolean, label: string): Promise<string> {
  const p = placeholder(schema, label);
  const refuse = (problem: string) => new ProviderError("rejected", `the simulator cannot make a value for this returns= schema: ${problem}`, false);
  if (!p.ok) throw refuse(p.problem);
  // (ajv is loaded already: the typed call compiled this schema)
  // problems are named from the value, as for a model's reply, also when it travels in the envelope
  const validate = (await import("../calls/schema-validator.ts")).validatorFor(schema, enveloped);
  let problem: string | undefined;
  try {
    problem = typeof validate === "function" ? validate(p.value)[0] : validate.problem;
  } catch (err) {
    if (!(err instanceof RefLoopFound)) throw err;
    problem = err.message;
  }
  if (problem !== undefined) throw refuse(problem);
  return JSON.stringify(p.value);
}

export class SimProvider implements Provider {
  readonly name = "sim";

  async complete(req: ModelRequest): Promise<ModelReply> {
    // a typed call gets a value of its schema's shape, its strings labelled like a text reply
    const text = req.output ? await typedReply(req.output, req.outputEnveloped === true, `[sim:${req.agentName}]`) : simReplyText(req.agentName, req.task);
    return { text, model: req.model, usage: ZERO_USAGE, requestId: null };
  }

  async judge(req: JudgeModelRequest): Promise<JudgeModelReply> {
    return { verdict: null, label: null, model: req.model, usage: ZERO_USAGE, requestId: null };
  }
}
