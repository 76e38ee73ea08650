// Shared fixtures for the memory tests: temp project dirs, a store with captured warnings, provenance.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createMemoryStore, type MemoryStoreOptions } from "../../runtime/memory/index.ts";
import { escapeKey, sha256 } from "../../runtime/memory/keys.ts";
import { readAll } from "../../runtime/memory/ledger.ts";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import type { MemoryMode, MemoryProvenance, MemorySession } from "../../runtime/memory-port.ts";
import { isErrorValue, obj, type VObject } from "../../runtime/values.ts";

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "vvm-mem-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export function prov(mode: MemoryMode = "continue", line = 3): MemoryProvenance {
  return { site: { path: "/proj/main.vvm", span: { line, col: 1, endLine: line, endCol: 10 } }, agentName: "helper", model: "sonnet", mode };
}

export function makeStore(dir: string, extra: Partial<MemoryStoreOptions> = {}) {
  const warnings: string[] = [];
  const store = createMemoryStore({
    entryDir: dir,
    homeDir: path.join(dir, "home"),
    lockTimeoutMs: 5000,
    budgetTokens: 2000,
    warn: (m) => warnings.push(m),
    ...extra,
  });
  return { store, warnings };
}

export const binding = (key: string, scope = "project", p?: string): VObject =>
  obj(p === undefined ? { scope, key } : { scope, key, path: p });

export const memDir = (dir: string, key: string) => path.join(dir, ".vvm", "memory", escapeKey(key));

export function patchReply(patch: unknown, text = "Visible answer."): string {
  return `${text}\n\n\`\`\`vvm-memory\n${typeof patch === "string" ? patch : JSON.stringify(patch)}\n\`\`\`\n`;
}

export async function session(store: ReturnType<typeof makeStore>["store"], key: string, mode: MemoryMode = "continue"): Promise<MemorySession> {
  const s = await store.open(binding(key), prov(mode), new AbortController().signal);
  if (s instanceof Map && isErrorValue(s)) throw new Error(`open failed: ${JSON.stringify([...(s.get("error") as Map<string, unknown>)])}`);
  return s as MemorySession;
}

/** One full call: open, reply, complete. Returns the visible text. */
export async function call(store: ReturnType<typeof makeStore>["store"], key: string, reply: string, mode: MemoryMode = "continue"): Promise<string> {
  const s = await session(store, key, mode);
  return s.complete(reply);
}

/** One `patch` ledger line (with its newline) that leaves an empty digest empty: for ledgers written directly. */
export function patchLine(seq: number, retain: string[]): string {
  const empty = sha256("");
  return JSON.stringify({ v: 1, ts: "t", seq, kind: "patch", retain, digest_before: empty, digest_after: empty, provenance: null }) + "\n";
}

export async function ledger(dir: string, key: string) {
  return readAll(nodeFs, path.join(memDir(dir, key), "ledger.jsonl"));
}

export async function digestText(dir: string, key: string): Promise<string | null> {
  try {
    return await readFile(path.join(memDir(dir, key), "digest.md"), "utf8");
  } catch {
    return null;
  }
}


/** The Memory Context with each fact's `[#seq date] ` left out, for comparing facts alone. */
export const plainFacts = (context: string | null): string => (context ?? "").replace(/^- \[#\d+ [^\]]*\] /gm, "- ");
