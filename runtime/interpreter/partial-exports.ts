// The entry module's exports as far as the run got before an uncaught raise (`vvm run --partial-exports`):
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
        const slot = mc.moduleScope.slots.get(t.name);
        const v = slot === undefined ? undefined : f.s[slot];
        if (v !== undefined) exports.set(t.name, v);
        // `export name` of an agent is configuration, never a value
        else if (!mc.agents.has(t.name)) missing.push(t.name);
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
