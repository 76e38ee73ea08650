// Per-run state handed to the interpreter (starlark-go's Thread): everything that does I/O or varies per run.
import type { AgentRuntime } from "./agent-runtime.ts";
import type { ProgressPort } from "./progress-port.ts";
import type { Narrator, TraceSink } from "./trace.ts";
import type { RaiseStep, Site, Value } from "./values.ts";

export interface RunContext {
  agents: AgentRuntime;
  trace: TraceSink;
  /** aborted on Ctrl-C: loops and pending calls stop promptly */
  signal: AbortSignal;
  /** pmap's limit on calls in flight */
  concurrency: number;
  /** told each binding as it is made (`vvm run --narrate`); absent: nothing is reported */
  narrator?: Narrator;
  /** told how far each `pmap` is (the CLI's progress line); absent: nobody is watching */
  progress?: ProgressPort;
  /** the program's inputs by name (`vvm run --arg/--input`), bound to the entry module's `input` declarations */
  inputs?: ReadonlyMap<string, Value>;
  /**
   * told when the program has computed for a second without letting the event loop turn (deep recursion, a map
   * over a huge list), when nothing can notice `signal` until it is done; again after each later such stretch
   */
  longSync?: () => void;
  /**
   * whether `v` is a ref value this run made (`--state filesystem`): `export <expression>` keeps one whole under the
   * expression, as in context it would keep the reply it stands for, rather than spreading its fields
   */
  isBinding?: (v: Value) => boolean;
}

/** How a run ended. Exports are keyed by export name (see spec/semantics.md for `export <expression>`). */
export type RunOutcome =
  | { kind: "ok"; exports: Map<string, Value> }
  | { kind: "raised"; error: Value; site: Site | null; trail: RaiseStep[]; partial: PartialExports | null }
  | { kind: "interrupted" };

/**
 * After an uncaught raise: the entry module's `export name`s already bound (export order), and the export
 * keys that were not (null when the raise came before the entry module's statements began).
 */
export interface PartialExports {
  exports: Map<string, Value>;
  missing: string[];
}
