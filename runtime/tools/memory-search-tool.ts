// memory_search: the agent's own retained facts that its Memory Context left out, found by the recall
// ranking (runtime/memory/recall.ts). It reads through the call's memory session only, so it can never
// reach another key's memory (spec/agent-calls.md §8).
import type { ToolOutput } from "./file-tools.ts";
import { ToolFailed } from "./sandbox.ts";

/** The call's memory session's search (MemorySession.search). */
export type MemorySearch = (query: string) => Promise<string[]>;

export const MEMORY_SEARCH_LIMITS = { facts: 20, chars: 8000, queryChars: 2000 };

export async function memorySearchTool(search: MemorySearch, args: { query: string }): Promise<ToolOutput> {
  const query = args.query.trim();
  if (query === "") throw new ToolFailed("query is empty; give the words the facts you want would contain", "bad_input");
  if (query.length > MEMORY_SEARCH_LIMITS.queryChars) throw new ToolFailed(`query is longer than ${MEMORY_SEARCH_LIMITS.queryChars} characters`, "bad_input");
  const found = await search(query);
  if (found.length === 0) return { text: `no retained fact beyond those in the Memory Context matches ${JSON.stringify(query)}` };
  const lines: string[] = [];
  let chars = 0;
  for (const line of found) {
    if (lines.length >= MEMORY_SEARCH_LIMITS.facts || (chars + line.length + 3 > MEMORY_SEARCH_LIMITS.chars && lines.length > 0)) break;
    lines.push(`- ${line}`);
    chars += line.length + 3;
  }
  const more = found.length - lines.length;
  return { text: lines.join("\n") + (more > 0 ? `\n\n[memory_search: ${more} more matching fact${more === 1 ? "" : "s"} not shown; use more specific words]` : "") };
}
