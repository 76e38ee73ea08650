// Agent configurations: derivation with `.with(...)` (spec/language.md §3 merge rule) and inline agents.
import { VAgent, type Site, type Value, type VObject } from "../values.ts";

/** Scalars replace, objects merge one level deep (override keys win), lists replace. */
export function deriveAgent(base: VAgent, overrides: Map<string, Value>, site: Site): VAgent {
  const config: VObject = new Map(base.config);
  for (const [k, v] of overrides) {
    const old = config.get(k);
    config.set(k, old instanceof Map && v instanceof Map ? new Map([...old, ...v]) : v);
  }
  // a label (`support.with`, `<inline>`) names no agent a script rule could give: only real names are bases
  const labelled = base.name.endsWith(".with") || base.name === "<inline>";
  const name = base.name.endsWith(".with") ? base.name : `${base.name}.with`;
  return new VAgent(name, config, site, labelled ? base.bases : [base.name, ...base.bases]);
}

export function inlineAgent(config: Map<string, Value>, site: Site): VAgent {
  return new VAgent("<inline>", new Map(config), site);
}
