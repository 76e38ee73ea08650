// The boundary between the evaluator and everything that talks to a model.
// The interpreter renders templates and evaluates arguments, then hands over one of these requests;
// it never knows which provider, judge model or memory store answers.

import type { Site, VAgent, Value } from "./values.ts";

/** Call options as evaluated at the call site (`retry=2, timeout="45s", ...`). Unknown ones are kept for the warning. */
export interface AgentCallRequest {
  agent: VAgent;
  /** the rendered template: the task text */
  task: string;
  /** the primary input (`it` when the call gave none) */
  input: Value;
  /** keyword options in source order, values already evaluated */
  options: Map<string, Value>;
  site: Site;
  /** the variable the call's result is assigned to (`x = @a ...`), for filesystem state's binding index */
  target?: string;
  /** cancels the call (pmap siblings failing, Ctrl-C) */
  signal: AbortSignal;
}

export type JudgeKind = "predicate" | "case" | "require";

export interface JudgeRequest {
  kind: JudgeKind;
  /** the rendered criterion */
  criterion: string;
  /** the value judged (`it` or the explicit input) */
  input: Value;
  site: Site;
  signal: AbortSignal;
}

export interface ChooseRequest {
  /** the rendered criterion */
  criterion: string;
  input: Value;
  /** option labels in source order */
  labels: string[];
  site: Site;
  signal: AbortSignal;
}

/**
 * What the interpreter needs from the model layer.
 * - `call` resolves to the reply (a string) or an error value; it never rejects for model failures.
 * - `judge` resolves to true/false (uncertain → false); a failed judge rejects with a VvmRaise (`thrown`).
 * - `choose` resolves to one of `labels` (uncertain → the first); failure rejects with a VvmRaise.
 */
export interface AgentRuntime {
  call(req: AgentCallRequest): Promise<Value>;
  judge(req: JudgeRequest): Promise<boolean>;
  choose(req: ChooseRequest): Promise<string>;
}
