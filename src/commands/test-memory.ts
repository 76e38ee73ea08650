// The memories a test's run left, read as `vvm memory` reads them (no lock, no write, no link followed):
// the digest, the ledger's entry kinds and the retained facts, for expectations and snapshots.
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { retainedFacts } from "../../runtime/memory/forget.ts";
import { readLog } from "../../runtime/memory/history.ts";
import { inspectMemory, listMemories, memoryFiles, type Inspection } from "../../runtime/memory/inspect.ts";
import { memoryRoot, resolveBinding } from "../../runtime/memory/keys.ts";
import { obj } from "../../runtime/values.ts";

export interface MemoryState {
  scope: "project" | "user";
  key: string;
  /** the digest's body (what calls are shown); null when it is unusable */
  digest: string | null;
  /** the ledger's entry kinds, oldest first */
  ledger: string[];
  /** retained facts no `forget` names, oldest first */
  facts: string[];
}

export interface Roots {
  /** the program's directory (project scope) */
  entryDir: string;
  /** the HOME of the run (user scope) */
  homeDir: string;
}

/** The memory a key names, or null when the run left none. */
export async function readMemory(scope: MemoryState["scope"], key: string, roots: Roots, signal: AbortSignal): Promise<MemoryState | null> {
  const loc = resolveBinding(obj({ scope, key }), roots.entryDir, roots.homeDir);
  const found = await inspectMemory(loc, { fs: nodeFs, signal });
  return found === null ? null : state(scope, key, found);
}

/** Every memory of the project and user scopes, sorted by scope then key. */
export async function allMemories(roots: Roots, signal: AbortSignal): Promise<MemoryState[]> {
  const out: MemoryState[] = [];
  for (const scope of ["project", "user"] as const) {
    const root = memoryRoot(scope, roots.entryDir, roots.homeDir);
    for (const m of await listMemories(scope, root, { fs: nodeFs, signal })) {
      if (m.inspection !== null) out.push(await state(scope, m.key ?? m.name, m.inspection));
    }
  }
  return out;
}

async function state(scope: MemoryState["scope"], key: string, i: Inspection): Promise<MemoryState> {
  const ledgerFile = memoryFiles(i.loc.dir).ledger;
  const log = await readLog(nodeFs, ledgerFile, {});
  const facts = await retainedFacts(nodeFs, ledgerFile);
  return {
    scope,
    key,
    digest: i.digest.parsed.unusable ? null : i.digest.parsed.body,
    ledger: (log?.lines ?? []).flatMap((l) => (l.entry === null ? [] : [l.entry.kind])),
    facts: (facts ?? []).filter((f) => !f.forgotten).map((f) => f.text),
  };
}
