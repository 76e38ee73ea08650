// Model aliases. The ids are the newest of each family in the installed SDK's `Model` list;
// VVM_MODEL_HAIKU / VVM_MODEL_SONNET / VVM_MODEL_OPUS override them without a release.
export const MODEL_ALIASES = {
  haiku: "claude-haiku-5-5",
  sonnet: "claude-sonnet-5-5",
  opus: "claude-opus-5-5",
} as const;

/** The model an agent without `model=` uses. */
export const DEFAULT_MODEL = "sonnet";

/** An alias becomes its model id (or the VVM_MODEL_* override, used as written); anything else is already an id. */
export function resolveModel(model: string, env: NodeJS.ProcessEnv): string {
  if (!Object.hasOwn(MODEL_ALIASES, model)) return model;
  return env[`VVM_MODEL_${model.toUpperCase()}`] || MODEL_ALIASES[model as keyof typeof MODEL_ALIASES];
}
