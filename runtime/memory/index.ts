// Persistent agent memory (digest + ledger). Work in progress: the full store lands in follow-up commits.
import type { MemoryMode, MemoryPort, MemoryProvenance, MemorySession } from "../memory-port.ts";
import { makeError, type VObject } from "../values.ts";

export interface MemoryStoreOptions {
  entryDir: string;
  homeDir: string;
  lockTimeoutMs: number;
  budgetTokens: number;
  warn: (message: string) => void;
}

export type MemoryStore = MemoryPort & { close(): Promise<void> };

export function createMemoryStore(_opts: MemoryStoreOptions): MemoryStore {
  return {
    async open(_memory: VObject, _mode: MemoryMode, _prov: MemoryProvenance, _signal: AbortSignal): Promise<MemorySession | VObject> {
      return makeError("rejected", "agent memory is not implemented yet");
    },
    async close() {},
  };
}
