// Property: whatever the parser makes of a mutated program, the resolver returns diagnostics and never throws.
// Mutations of real programs (conformance cases and examples) reach far more tree shapes than random text.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parse } from "../../grammar/index.ts";
import { resolveModule } from "../../src/resolve/resolver.ts";
import { buildLayout } from "../../src/resolve/scopes.ts";
import { ROOT } from "../support/cli.ts";
import { programsIn } from "../support/programs.ts";

function programs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return programsIn(dir).map((f) => readFileSync(f, "utf8"));
}

const SEEDS = [...programs(path.join(ROOT, "test/conformance/check")), ...programs(path.join(ROOT, "test/conformance/run"))];

const FRAGMENTS = [
  "x = 1",
  "  return x",
  "break",
  "def g(a):",
  "  constrain a():",
  "    require ?`ok`",
  "agent z(model=\"haiku\", memory={ scope: \"project\", key: k })",
  "y = pmap([1], g)",
  "@z `{x} {y.b}`(x, memory_mode=\"continue\")",
  "export y",
  "export @z",
  "from \"./lib/agents.vvm\" import @helper",
  "import \"s\" from \"github:a/b\"",
  "it = 2",
  "try:",
  "match x:",
  "  case error(e):",
  "    pass",
];

type Mutation = { op: "delete" | "duplicate" | "indent" | "dedent" | "insert"; at: number; pick: number };

const mutation = fc.record({
  op: fc.constantFrom<Mutation["op"]>("delete", "duplicate", "indent", "dedent", "insert"),
  at: fc.nat(),
  pick: fc.nat(),
});

function mutate(source: string, ms: Mutation[]): string {
  const lines = source.split("\n");
  for (const m of ms) {
    const i = lines.length === 0 ? 0 : m.at % lines.length;
    switch (m.op) {
      case "delete":
        lines.splice(i, 1);
        break;
      case "duplicate":
        lines.splice(i, 0, lines[i] ?? "");
        break;
      case "indent":
        lines[i] = "  " + (lines[i] ?? "");
        break;
      case "dedent":
        lines[i] = (lines[i] ?? "").replace(/^ {2}/, "");
        break;
      case "insert":
        lines.splice(i, 0, FRAGMENTS[m.pick % FRAGMENTS.length]!);
        break;
    }
  }
  return lines.join("\n");
}

describe("resolver robustness", () => {
  it("has seed programs", () => {
    expect(SEEDS.length).toBeGreaterThan(10);
  });

  it("never throws on a mutated program and finishes quickly", () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 8 }), (seed, ms) => {
        const source = mutate(SEEDS[seed % SEEDS.length]!, ms);
        const parsed = parse(source, "/virtual/main.vvm");
        if (!parsed.program) return;
        const started = performance.now();
        const found = resolveModule("/virtual/main.vvm", parsed.program, buildLayout(parsed.program), {
          programDir: "/virtual",
          importedAgents: new Map(),
          skills: new Set(["s"]),
          externallyUsed: new Set(),
          importedBy: null,
        });
        expect(performance.now() - started).toBeLessThan(2000);
        for (const d of found) {
          expect(d.span.line).toBeGreaterThanOrEqual(1);
          expect(d.span.col).toBeGreaterThanOrEqual(1);
          expect(d.message.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 400 },
    );
  });
});
