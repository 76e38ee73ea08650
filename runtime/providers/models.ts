// Model aliases. The ids are the newest of each family in the installed SDK's `Model` list; a run may
// override them without a release (the CLI takes VVM_MODEL_HAIKU / _SONNET / _OPUS).
export const MODEL_ALIASES = {
  haiku: "claude-haiku-5-5",
  sonnet: "claude-sonnet-5-5",
  opus: "claude-opus-5-5",
} as const;

/** The model an agent without `model=` uses. */
export const DEFAULT_MODEL = "sonnet";

export type ModelAlias = keyof typeof MODEL_ALIASES;

/** Model ids a run uses instead of the built-in ones, by alias. */
export type ModelOverrides = Partial<Record<ModelAlias, string>>;

/** An alias becomes its model id (or the run's override, used as written); anything else is already an id. */
export function resolveModel(model: string, overrides: ModelOverrides): string {
  if (!Object.hasOwn(MODEL_ALIASES, model)) return model;
  const alias = model as ModelAlias;
  return overrides[alias] || MODEL_ALIASES[alias];
}
