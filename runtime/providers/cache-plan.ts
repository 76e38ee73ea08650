// Which blocks of a request are marked for prompt caching. A mark makes the API write everything before
// it to the cache at 1.25x the input price, and a later request with the same prefix reads it at 0.1x:
// a mark pays only when the prefix is sent again. So the stable prefix (tools and the agent's prompt) is
// marked whenever it is long enough to be cached at all, and the Memory Context only once the very same
// context has already been sent in this run (spec/agent-calls.md §1, "Prompt caching").
import { sha256 } from "../memory/keys.ts";

/**
 * The smallest prefix, in tokens, each model caches; a shorter one is sent uncached whatever its marks.
 * Models not listed use DEFAULT_MIN_CACHE_TOKENS. Published minimums (Anthropic's prompt caching page,
 * read 2026-11-25) for the families it lists; the 5.5 models are not listed there yet.
 */
const MIN_CACHE_TOKENS: Record<string, number> = {
  "claude-opus-4-5": 4096,
  "claude-opus-4-6": 4096,
  "claude-haiku-4-5": 4096,
  "claude-sonnet-4-5": 1024,
  "claude-sonnet-4-6": 1024,
  "claude-opus-5": 512,
};

/**
 * A low guess on purpose: marking a prefix shorter than the real minimum costs nothing (the API just
 * does not cache it), while a guess that is too high would give up caching that pays.
 */
export const DEFAULT_MIN_CACHE_TOKENS = 1024;

/** Contexts remembered per run; past this the oldest are forgotten (a run this long re-learns them). */
const MAX_REMEMBERED = 4096;

export function minCacheTokens(model: string): number {
  // (own keys only: a model named "constructor" would find what every object inherits)
  return Object.hasOwn(MIN_CACHE_TOKENS, model) ? MIN_CACHE_TOKENS[model]! : DEFAULT_MIN_CACHE_TOKENS;
}

/** Tokens of a text, estimated as the API's tokenizers average on English and JSON: about 4 characters each. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Which of a request's blocks carry `cache_control`. */
interface CacheMarks {
  /** the system prompt block (it caches the tools before it too) */
  system: boolean;
  /** the Memory Context block */
  memory: boolean;
}

/** One per provider, so per run: it remembers which Memory Contexts were already sent. */
export class CachePlanner {
  private readonly sent = new Set<string>();

  /**
   * `prefix` is the text of what comes before the memory (tools as sent, then the system prompt). The
   * prompt is marked when that prefix reaches the model's minimum. The Memory Context is marked when this
   * model, prefix and context were sent before in this run (a `dry_run` fan-out, a digest no reply changed)
   * and the prefix up to it reaches the minimum: a context that changes every call is never marked, so it
   * is never billed as a cache write that nothing reads.
   */
  plan(model: string, prefix: string, system: string, memoryContext: string | null): CacheMarks {
    const min = minCacheTokens(model);
    const markSystem = system !== "" && estimateTokens(prefix.length) >= min;
    if (memoryContext === null) return { system: markSystem, memory: false };
    const key = sha256(`${model}\0${prefix}\0${memoryContext}`);
    const again = this.sent.has(key);
    this.remember(key);
    return { system: markSystem, memory: again && estimateTokens(prefix.length + memoryContext.length) >= min };
  }

  private remember(key: string): void {
    this.sent.delete(key);
    this.sent.add(key);
    if (this.sent.size > MAX_REMEMBERED) this.sent.delete(this.sent.values().next().value as string);
  }
}
