// What `export name` exports from a module frame (the loader's exports at the end of a module), and the
// entry module's exports as far as the run got before an uncaught raise (`vvm run --partial-exports`):
// every `export name` whose variable was already bound. `export <expression>` is never evaluated here
// (it may call a model after the program has failed), so it counts as missing, as unbound names do.
import type { ExportStmt } from "../../grammar/ast.ts";
import type { PartialExports } from "../context.ts";
import type { Value } from "../values.ts";
import type { ModuleCompiler } from "./compile.ts";
import type { Frame } from "./frame.ts";

export function partialExports(mc: ModuleCompiler, f: Frame, stmts: ExportStmt[]): PartialExports {
  const exports = new Map<string, Value>();
  const missing: string[] = [];
  for (const s of stmts) {
    const t = s.target;
    switch (t.kind) {
      case "agent":
        break;
      case "name": {
        const v = exportedName(mc, f, t.name);
        if (v === UNBOUND) missing.push(t.name);
        else if (v !== AGENT) exports.set(t.name, v);
        break;
      }
      case "expr":
        missing.push(mc.info.exportKeys.get(s)!);
        break;
      default: {
        const never: never = t;
        return never;
      }
    }
  }
  return { exports, missing: [...new Set(missing)].filter((k) => !exports.has(k)) };
}

/** `export name` of an agent: configuration, like `export @name`, never a value. */
export const AGENT = Symbol("agent");
/** `export name` of a variable not bound (yet). */
export const UNBOUND = Symbol("unbound");

/** What `export name` exports from this module frame now. */
export function exportedName(mc: ModuleCompiler, f: Frame, name: string): Value | typeof AGENT | typeof UNBOUND {
  const slot = mc.moduleScope.slots.get(name);
  const v = slot === undefined ? undefined : f.s[slot];
  if (v !== undefined) return v;
  return mc.agents.has(name) ? AGENT : UNBOUND;
}
