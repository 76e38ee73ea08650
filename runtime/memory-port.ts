// The boundary between the call layer and the memory store (runtime/memory/).
import type { Site, Value, VObject } from "./values.ts";

export const MEMORY_MODES = ["continue", "dry_run", "fresh"] as const;
export type MemoryMode = (typeof MEMORY_MODES)[number];
export const MEMORY_SCOPES = ["project", "user", "path"] as const;

/** Who is writing, for ledger provenance. Never includes raw inputs or outputs. */
export interface MemoryProvenance {
  site: Site;
  agentName: string;
  model: string;
  mode: MemoryMode;
}

/** What a memory session did, for the trace: counts and outcomes, never fact or digest text. */
export interface MemoryReport {
  scope: string;
  key: string;
  mode: MemoryMode;
  /** how long the call waited for the memory's lock */
  lock_wait_ms: number;
  facts_shown: number;
  facts_hidden: number;
  context_chars: number;
  /** after the reply: `applied` (entry `seq`), `rejected` (entry `seq`, `reason`), `refused` (nothing written, `reason`), `unchanged` (no patch), or `none` (dry_run, fresh, a failed call) */
  result: "applied" | "rejected" | "refused" | "unchanged" | "none";
  seq: number | null;
  reason: string | null;
}

export interface MemorySession {
  /** the Memory Context to send before the task, or null (`fresh`) */
  readonly context: string | null;
  /** what the session did so far (complete once `complete` or `release` resolved) */
  readonly report: MemoryReport;
  /**
   * After a successful reply: strip every `vvm-memory` block (all modes); in `continue`,
   * validate and apply the patch (or record why it was rejected). Releases the lock.
   * Resolves to the user-visible text.
   */
  complete(replyText: string): Promise<string>;
  /** After a failed call: release the lock, write nothing. */
  release(): Promise<void>;
  /**
   * `memory_search`: the retained facts of this memory that the Memory Context did not show, most relevant
   * to `query` first, each as its Memory Context line. Absent in `fresh` mode (the call sees no memory).
   */
  search?(query: string): Promise<string[]>;
}

export interface MemoryPort {
  /**
   * `memory` is the agent's `memory` configuration value as written (validated here).
   * Resolves to a session, or to an error value (`locked`, or `rejected` for a bad binding)
   * that the call returns without calling the model. `query` (the call's task and input) is what
   * relevance recall ranks retained facts against.
   */
  open(memory: Value, provenance: MemoryProvenance, signal: AbortSignal, query?: string): Promise<MemorySession | VObject>;
}
