// Typed results (`returns=`, spec/typed-results.md): the JSON Schema a call sends as its output format, the
// reply read back into a VVM value and validated, a re-ask with the problems when it does not fit, and the
// memory patch that travels beside the value.
import { parseJson } from "../json.ts";
import { rebase, RefLoopFound } from "../json-schema.ts";
import { fillOptional, isObjectShape, parseShape, pathText, shapeSchema, type Shape } from "../shapes.ts";
import type { Turn } from "../provider.ts";
import { clipped } from "../text.ts";
import { makeError, thrown, toJSON, type Site, type Value, type VObject, type VvmRaise } from "../values.ts";
// type-only: ajv loads on the first typed call
import type { Validator } from "./schema-validator.ts";

export interface Typed {
  shape: Shape;
  /** the reply is `{"value": …, "memory_patch": …}` rather than the value itself */
  envelope: boolean;
  /** the JSON Schema sent as the request's output format */
  wire: Record<string, unknown>;
  validate: Validator;
}

/** How much of a reply that did not fit the error value keeps. */
const PREVIEW_CHARS = 500;

/** The Memory Update Protocol's patch, as a field of the reply (spec/memory.md; checked again when applied). */
const PATCH_SCHEMA = {
  type: "object",
  description:
    "Changes to your memory, as the Memory Update Protocol describes (digest: the complete new digest; retain: short facts worth recalling). " +
    "Leave this field out when nothing should change. It replaces the vvm-memory block: this reply is JSON only.",
  properties: { digest: { type: "string" }, retain: { type: "array", items: { type: "string" } } },
  additionalProperties: false,
};

/**
 * Read `returns=` (a shape, or unit for none). A shape the runtime cannot use is the program's mistake: it raises
 * `thrown` at the call before anything is sent, with the message `vvm check` gives as W070/W071.
 */
export async function prepareTyped(returns: Value, withMemory: boolean, site: Site): Promise<Typed | null> {
  if (returns === null) return null;
  // values never change, so an agent's `returns=` (one object for all its calls) is read and compiled once
  const cacheable = typeof returns === "object";
  const hit = cacheable ? prepared.get(returns)?.[withMemory ? 1 : 0] : undefined;
  if (hit !== undefined) return hit;
  const typed = await readTyped(returns, withMemory, site);
  if (cacheable) {
    const both = prepared.get(returns) ?? [undefined, undefined];
    both[withMemory ? 1 : 0] = typed;
    prepared.set(returns, both);
  }
  return typed;
}

/** Typed calls already read, by their `returns=` value: without and with memory. */
const prepared = new WeakMap<object, [Typed | undefined, Typed | undefined]>();

async function readTyped(returns: Value, withMemory: boolean, site: Site): Promise<Typed> {
  const parsed = parseShape(returns);
  if (!parsed.ok) {
    const p = parsed.problems[0]!;
    throw thrown(`returns=: ${p.path.length > 0 ? `${pathText(p.path)}: ` : ""}${p.message}`, site);
  }
  const schema = shapeSchema(parsed.shape);
  // The output format must be an object; a list or a word, and any call whose agent has memory, is wrapped.
  const envelope = withMemory || !isObjectShape(parsed.shape);
  const wire = envelope
    ? { type: "object", properties: { value: rebase(schema, "/properties/value"), ...(withMemory ? { memory_patch: PATCH_SCHEMA } : {}) }, required: ["value"], additionalProperties: false }
    : schema;
  const validate = (await loadValidator()).validatorFor(wire, envelope);
  if (typeof validate !== "function") throw unusable(validate.problem, site);
  return { shape: parsed.shape, envelope, wire, validate };
}

function unusable(problem: string, site: Site | null): VvmRaise {
  return thrown(`returns=: the JSON Schema cannot be used: ${problem}`, site);
}

type Decoded = { ok: true; value: Value; /** the patch as a vvm-memory block, "" when the reply has none */ patch: string } | { ok: false; errors: string[] };

/** The reply's text as JSON, validated; optional fields the reply left out read as unit. */
export function decodeReply(typed: Typed, text: string): Decoded {
  // a field given twice is refused, not read as its last value: which one the model meant is unknowable (a second
  // "memory_patch" would otherwise replace the first unseen, where two vvm-memory blocks are refused)
  const r = parseJson(text, { fenced: true, uniqueFields: true });
  if (!r.ok) return { ok: false, errors: [`the reply is not JSON: ${r.problem} (line ${r.line}, column ${r.column})`] };
  let errors: string[];
  try {
    errors = typed.validate(toJSON(r.value));
  } catch (err) {
    if (err instanceof RefLoopFound) throw unusable(err.message, null);
    throw err;
  }
  if (errors.length > 0) return { ok: false, errors };
  if (!typed.envelope) return { ok: true, value: fillOptional(typed.shape, r.value), patch: "" };
  const o = r.value as VObject;
  const patch = o.get("memory_patch");
  // the memory store reads patches from vvm-memory blocks; JSON text holds no line that could close the fence
  return { ok: true, value: fillOptional(typed.shape, o.get("value") ?? null), patch: patch === undefined ? "" : "```vvm-memory\n" + JSON.stringify(toJSON(patch)) + "\n```" };
}

interface Counts {
  attempts: number;
  turns: number;
  toolUses: number;
}

/** One ask of the model: the tool loop from `firstTurn`, continuing the conversation in `history`. */
export type Ask<F> = (history: Turn[], firstTurn: number) => Promise<(Counts & { ok: true; text: string }) | (Counts & F)>;

type TypedOutcome<F> =
  | (Counts & { ok: true; value: Value; patch: string; reasks: number })
  /** the last reply still did not fit: error(kind="rejected") with the problems */
  | (Counts & { ok: false; rejected: VObject; reasks: number })
  | (Counts & F & { reasks: number });

/**
 * Ask, validate, and re-ask up to `reasks` times with the problems of the reply before (the model sees its own
 * reply and what is wrong with it), as long as the call has made fewer than `maxTurns` requests (a re-ask is one
 * more). A request that fails ends it with that failure.
 */
export async function askTyped<F extends { ok: false }>(typed: Typed, reasks: number, maxTurns: number, model: string, ask: Ask<F>): Promise<TypedOutcome<F>> {
  const history: Turn[] = [];
  const total: Counts = { attempts: 0, turns: 0, toolUses: 0 };
  for (let n = 0; ; n++) {
    const out = await ask(history, total.turns + 1);
    total.attempts += out.attempts;
    total.toolUses += out.toolUses;
    total.turns = out.turns;
    if (!out.ok) return { ...out, ...total, reasks: n };
    const d = decodeReply(typed, out.text);
    if (d.ok) return { ok: true, value: d.value, patch: d.patch, reasks: n, ...total };
    if (n >= reasks || total.turns >= maxTurns) {
      const more = d.errors.length > 1 ? ` (and ${d.errors.length - 1} more)` : "";
      const after = n > 0 ? ` after ${n} re-ask${n === 1 ? "" : "s"}` : "";
      const limit = n < reasks ? ` (max_turns=${maxTurns} allows no more requests)` : "";
      const message = `the reply does not fit returns=${after}${limit}: ${d.errors[0]}${more}`;
      const data = new Map<string, Value>([
        ["errors", d.errors],
        ["reply_preview", clipped(out.text, PREVIEW_CHARS)],
        ["reasks", n],
        ["attempts", total.attempts],
        ["model", model],
      ]);
      return { ok: false, rejected: makeError("rejected", message, data), reasks: n, ...total };
    }
    // (the API refuses an empty assistant turn)
    history.push({ role: "assistant", content: [{ type: "text", text: out.text === "" ? "(an empty reply)" : out.text }] }, { role: "user", text: correction(d.errors) });
  }
}

function correction(errors: string[]): string {
  return [
    "Your reply does not fit the JSON Schema of the output format:",
    ...errors.map((e) => `- ${e}`),
    "Answer again with the whole JSON value, corrected, and nothing else.",
  ].join("\n");
}

let validatorModule: Promise<typeof import("./schema-validator.ts")> | null = null;
function loadValidator(): Promise<typeof import("./schema-validator.ts")> {
  return (validatorModule ??= import("./schema-validator.ts"));
}
