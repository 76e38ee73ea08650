// The floors of CONTRIBUTING.md, enforced: every file imports only its own floor or those below it,
// no two files import each other through any chain, and only the CLI touches the terminal, the
// environment or the process.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./support/cli.ts";

/** Lowest first. A file belongs to the first floor with a matching rule. */
const FLOORS: { name: string; files: RegExp }[] = [
  { name: "syntax", files: /^grammar\// },
  { name: "language facts", files: /^runtime\/[^/]+\.ts$/ },
  { name: "stdlib", files: /^stdlib\// },
  { name: "checker", files: /^src\/(check\.ts|program\.ts|resolve\/)/ },
  { name: "interpreter and services", files: /^runtime\/(interpreter|calls|memory|providers|tools|state)\// },
  { name: "cli", files: /^src\// },
];

/** Packages each floor may use, beyond node: builtins (a floor may use those of the floors below). */
const PACKAGES: Record<string, string[]> = {
  syntax: ["chevrotain"],
  "language facts": [],
  stdlib: [],
  checker: ["yaml", "picomatch"],
  "interpreter and services": ["@anthropic-ai/sdk", "@secretlint/core", "@secretlint/secretlint-rule-preset-recommend", "@secretlint/profiler", "@secretlint/types", "ajv", "ajv-formats", "async-mutex", "braces", "js-yaml", "minisearch", "picomatch", "re2js", "yaml"],
  cli: ["commander", "diff", "picocolors", "string-width"],
};

const SOURCES = ["grammar", "src", "runtime", "stdlib"];
const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith(".ts")) out.push(rel);
    }
  };
  for (const d of SOURCES) walk(d);
  return out.sort();
}

const floorOf = (file: string) => FLOORS.findIndex((f) => f.files.test(file));
const files = sourceFiles();
const graph = new Map<string, { local: string[]; packages: string[] }>();
for (const file of files) {
  const text = readFileSync(path.join(ROOT, file), "utf8");
  const local: string[] = [];
  const packages: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith(".")) local.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
    else if (!spec.startsWith("node:")) packages.push(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]);
  }
  graph.set(file, { local, packages });
}

describe("the floors", () => {
  it("place every source file", () => {
    expect(files.filter((f) => floorOf(f) < 0)).toEqual([]);
  });

  it("import only downward (or within their floor)", () => {
    const upward: string[] = [];
    for (const [file, { local }] of graph) {
      for (const target of local) {
        if (floorOf(target) > floorOf(file)) upward.push(`${file} (${FLOORS[floorOf(file)].name}) -> ${target} (${FLOORS[floorOf(target)]?.name})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("use only the packages of their floor or those below", () => {
    const wrong: string[] = [];
    for (const [file, { packages }] of graph) {
      const allowed = FLOORS.slice(0, floorOf(file) + 1).flatMap((f) => PACKAGES[f.name]);
      for (const p of packages) if (!allowed.includes(p)) wrong.push(`${file} -> ${p}`);
    }
    expect(wrong).toEqual([]);
  });

  it("have no circle of imports between files", () => {
    // Tarjan's strongly connected components: any with two or more files is a circle
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    const visit = (v: string) => {
      index.set(v, index.size);
      low.set(v, index.get(v)!);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v)?.local ?? []) {
        if (!graph.has(w)) continue;
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== v);
        if (component.length > 1) circles.push(component.sort());
      }
    };
    for (const f of files) if (!index.has(f)) visit(f);
    expect(circles).toEqual([]);
  });

  it("leave the environment (not even its type), the process and the terminal to the CLI", () => {
    const cli = FLOORS.findIndex((f) => f.name === "cli");
    const touching = files.filter((f) => floorOf(f) < cli && /\bprocess\.(env|argv|stdout|stderr|stdin|exit|exitCode)\b|\bNodeJS\.ProcessEnv\b/.test(readFileSync(path.join(ROOT, f), "utf8")));
    expect(touching).toEqual([]);
  });
});
