// W040: a function mapped with `pmap` that continues a memory whose key does not depend on the item.
// Every concurrent call then queues on one memory lock and writes one shared memory, which is rarely meant.
import type { AgentCall, AgentDecl, Call, DefStmt, Expr, KwArg, Span, Stmt } from "../../grammar/ast.ts";
import { literalString } from "./agent-config.ts";
import { innerBlocks, isLambda } from "./scopes.ts";
import { childExprs, mentionedNames, stmtExprs } from "../../grammar/walk.ts";

export interface PmapSite {
  /** the `pmap(items, f)` call */
  call: Call;
  /** the function `f` names */
  def: DefStmt;
}

interface PmapWarning {
  call: AgentCall;
  span: Span;
  message: string;
}

/**
 * Looks at the agent calls written directly in the mapped function's body (nested `def`s and functions it calls
 * are not followed). A call is reported when its mode is `continue` (option absent or the literal "continue"),
 * its agent has memory (`.with(memory=...)`, inline `memory=`, or the declaration's `memory=`), and that memory
 * expression does not mention the function's first parameter or a local computed from it.
 */
export function checkPmapMemory(site: PmapSite, agentDecl: (name: string) => AgentDecl | null): PmapWarning[] {
  const { def } = site;
  const param = def.params[0];
  if (!param) return [];
  const stmts = flatten(def.body);
  const tainted = itemDependent(param.name, stmts);
  const out: PmapWarning[] = [];
  for (const call of agentCalls(stmts)) {
    const mode = call.kwargs.find((k) => k.name === "memory_mode");
    if (mode && literalString(mode.value) !== "continue") continue;
    const ref = call.agent;
    let memory: KwArg | undefined;
    let declared: KwArg | undefined;
    let agentLabel: string;
    if (ref.kind === "NamedAgent") {
      agentLabel = `@${ref.name}`;
      declared = agentDecl(ref.name)?.kwargs.find((k) => k.name === "memory");
      memory = ref.with?.find((k) => k.name === "memory") ?? declared;
    } else {
      agentLabel = "the inline agent";
      memory = ref.kwargs.find((k) => k.name === "memory");
    }
    if (!memory || memory.value.kind === "Unit" || [...mentionedNames(memory.value)].some((n) => tainted.has(n))) continue;
    // `.with(memory={scope: ...})` without a key keeps the declared key (objects merge one level deep).
    const key = describeKey(memory.value) ?? (declared ? describeKey(declared.value) : null) ?? "a fixed key";
    out.push({
      call,
      span: ref.span,
      message:
        `pmap(…, ${isLambda(def.name) ? "lambda" : def.name}) at line ${site.call.span.line} runs this memory_mode="continue" call to ${agentLabel} for every item ` +
        `on one memory (${key}) that does not depend on '${param.name}': the calls queue on its lock and all write the same memory; ` +
        `use a per-item key (.with(memory={..., key: ... + ${param.name}})) or memory_mode="fresh"/"dry_run" and merge afterwards`,
    });
  }
  return out;
}

function describeKey(e: Expr): string | null {
  if (e.kind !== "Object") return null;
  const key = e.entries.find((en) => en.key === "key");
  const k = key ? literalString(key.value) : null;
  return k !== null ? `key "${k}"` : null;
}

/** Statements of one function body, blocks flattened, nested `def`s left out. */
function flatten(body: readonly Stmt[]): Stmt[] {
  const out: Stmt[] = [];
  const stack: Stmt[] = [...body].reverse();
  while (stack.length > 0) {
    const s = stack.pop()!;
    if (s.kind === "Def") continue;
    out.push(s);
    const blocks = innerBlocks(s);
    for (let i = blocks.length - 1; i >= 0; i--) for (let j = blocks[i].length - 1; j >= 0; j--) stack.push(blocks[i][j]);
  }
  return out;
}

/**
 * The parameter and every local whose value is computed from it (to a fixed point, so loops are covered). The
 * fixed point is a search from the parameter over "mentioned in the value of" edges, one visit per statement:
 * re-scanning the body until nothing changed took a pass per link of a chain written in reverse order
 * (`b = a` below `c = b`), quadratic in the body's length.
 */
function itemDependent(param: string, stmts: readonly Stmt[]): Set<string> {
  // each statement that binds a name from a value: the names it binds, and which statements each name feeds
  const binds: string[][] = [];
  const feeds = new Map<string, number[]>();
  const edge = (from: Expr, targets: string[]): void => {
    const i = binds.push(targets) - 1;
    for (const name of mentionedNames(from)) {
      const list = feeds.get(name);
      if (list) list.push(i);
      else feeds.set(name, [i]);
    }
  };
  for (const s of stmts) {
    if (s.kind === "Assign") edge(s.value, [s.target]);
    else if (s.kind === "For") edge(s.iter, [s.target]);
    else if (s.kind === "Choose") edge(s.subject, [s.binding]);
    else if (s.kind === "Match") edge(s.subject, s.cases.flatMap((c) => (c.pattern.kind === "ErrorBind" ? [c.pattern.name] : [])));
  }
  const tainted = new Set([param]);
  const reached = new Set<number>();
  const queue = [param];
  while (queue.length > 0) {
    for (const i of feeds.get(queue.pop()!) ?? []) {
      if (reached.has(i)) continue;
      reached.add(i);
      for (const name of binds[i]!) {
        if (tainted.has(name)) continue;
        tainted.add(name);
        queue.push(name);
      }
    }
  }
  return tainted;
}

function agentCalls(stmts: readonly Stmt[]): AgentCall[] {
  const out: AgentCall[] = [];
  const stack: Expr[] = stmts.flatMap(stmtExprs);
  while (stack.length > 0) {
    const e = stack.pop()!;
    if (e.kind === "AgentCall") out.push(e);
    for (const c of childExprs(e)) stack.push(c);
  }
  return out.sort((a, b) => a.span.line - b.span.line || a.span.col - b.span.col);
}
