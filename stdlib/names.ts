// The standard-library names (spec/language.md §15). One list for the validator (placeholders, E041, W040)
// and the interpreter (global environment), so the two can never disagree.
export const STDLIB_NAMES = ["pack", "perm", "range", "map", "pmap", "filter", "reduce", "refine", "len", "json"] as const;

export type StdlibName = (typeof STDLIB_NAMES)[number];

const STDLIB_SET: ReadonlySet<string> = new Set(STDLIB_NAMES);

export function isStdlibName(name: string): name is StdlibName {
  return STDLIB_SET.has(name);
}
