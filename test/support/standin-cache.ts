// The stand-in's prompt cache, imitating the Messages API's: a `cache_control` mark caches the request up to
// and including its block (tools, then system, then messages, in that order); a later request that starts
// with a cached prefix reads it; a prefix shorter than the minimum is never cached. Tokens are estimated as
// one per 4 characters of the blocks' JSON. The three counts add up to the whole prompt.
import { createHash } from "node:crypto";

interface CacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/** The blocks of a request in the order the API caches them, each with whether it carries a mark. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function blocksOf(body: any): { json: string; marked: boolean }[] {
  const out: { json: string; marked: boolean }[] = [];
  // the mark itself is not part of the prompt: a marked and an unmarked block are the same content
  const add = ({ cache_control, ...rest }: { cache_control?: unknown }) => out.push({ json: JSON.stringify(rest), marked: Boolean(cache_control) });
  for (const t of Array.isArray(body?.tools) ? body.tools : []) add(t);
  if (typeof body?.system === "string") add({ type: "text", text: body.system } as never);
  else for (const b of Array.isArray(body?.system) ? body.system : []) add(b);
  for (const m of Array.isArray(body?.messages) ? body.messages : []) {
    if (typeof m?.content === "string") add({ type: "text", text: m.content } as never);
    else for (const b of Array.isArray(m?.content) ? m.content : []) add(b);
  }
  return out;
}

export class PromptCache {
  /** prefixes cached so far, by model and content hash */
  private readonly entries = new Set<string>();
  /** the smallest prefix, in tokens, that is cached (the real API's minimum is 512 to 4,096 by model) */
  minTokens = 1024;

  clear(): void {
    this.entries.clear();
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  usage(body: any): CacheUsage {
    const blocks = blocksOf(body);
    const hash = createHash("sha256").update(String(body?.model ?? ""));
    let chars = 0;
    // each mark's prefix: its key and its size
    const marks: { key: string; tokens: number }[] = [];
    for (const b of blocks) {
      hash.update(b.json);
      chars += b.json.length;
      if (b.marked) marks.push({ key: hash.copy().digest("hex"), tokens: Math.ceil(chars / 4) });
    }
    const total = Math.ceil(chars / 4);
    // the longest cached prefix is read; every longer marked prefix that is long enough is written
    let read = 0;
    for (const m of marks) if (this.entries.has(m.key)) read = Math.max(read, m.tokens);
    let written = read;
    for (const m of marks) {
      if (m.tokens <= read || m.tokens < this.minTokens) continue;
      this.entries.add(m.key);
      written = Math.max(written, m.tokens);
    }
    return { input_tokens: total - written, cache_read_input_tokens: read, cache_creation_input_tokens: written - read };
  }
}
