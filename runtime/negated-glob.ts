// Whether a permission glob is negated, read alike by the checker (W021) and the call layer (thrown), which
// both refuse one: it would allow everything else (spec/agent-calls.md §8).

/**
 * A `!` first, or after leading `./` (picomatch.scan skips those, so `./!secret/**` is as negated as
 * `!secret/**`; split into its folders and rest it would have granted secret/**, the folder it excludes).
 */
export function negatedGlob(g: string): boolean {
  return /^(?:\.\/)*!/.test(g);
}
