// The evaluator's entry point: load every module once (imports first), run the entry, collect exports.
import type { ExportStmt, Stmt } from "../../grammar/ast.ts";
import type { CheckResult } from "../../src/program.ts";
import type { PartialExports, RunContext, RunOutcome } from "../context.ts";
import { isErrorValue, thrown, VAgent, type Value } from "../values.ts";
import { createStdlib } from "../../stdlib/index.ts";
import { ModuleCompiler } from "./compile.ts";
import { Interrupted } from "../abort.ts";
import { asRaise, type Frame } from "./frame.ts";
import { AGENT, exportedName, partialExports, UNBOUND } from "./partial-exports.ts";
import { SyncWatch } from "./sync-watch.ts";

/** What other modules (and the run's output) can see of a module after it ran. */
interface LoadedModule {
  /** export key → value, in export order */
  exports: Map<string, Value>;
  agents: Map<string, VAgent>;
}

export async function runProgram(checked: CheckResult, ctx: RunContext): Promise<RunOutcome> {
  const loader = new Loader(checked, ctx);
  try {
    const entry = await loader.load(checked.entry);
    return { kind: "ok", exports: entry.exports };
  } catch (err) {
    if (err instanceof Interrupted) return { kind: "interrupted" };
    const r = asRaise(err, null);
    if (r) {
      if (ctx.signal.aborted) return { kind: "interrupted" };
      return { kind: "raised", error: r.value, site: r.site, trail: r.trail, partial: loader.partial?.() ?? null };
    }
    throw err;
  }
}

class Loader {
  private readonly builtins;
  private readonly watch: SyncWatch;
  private readonly loaded = new Map<string, Promise<LoadedModule>>();
  /** set once the entry module's statements begin: its exports bound so far, for an uncaught raise */
  partial: (() => PartialExports) | null = null;

  constructor(
    private readonly checked: CheckResult,
    private readonly ctx: RunContext,
  ) {
    this.builtins = createStdlib({ concurrency: ctx.concurrency, progress: ctx.progress });
    this.watch = new SyncWatch(ctx.longSync);
  }

  /** Each module runs exactly once per run, keyed by its canonical path. */
  load(path: string): Promise<LoadedModule> {
    // The validator rejects import cycles; awaiting a module that is still loading would hang, so refuse.
    if (this.loading.has(path)) return Promise.reject(new Error(`internal: import cycle through ${path} reached the interpreter`));
    let p = this.loaded.get(path);
    if (!p) {
      this.loading.add(path);
      p = this.run(path).finally(() => this.loading.delete(path));
      this.loaded.set(path, p);
    }
    return p;
  }
  private readonly loading = new Set<string>();

  private async run(path: string): Promise<LoadedModule> {
    // Each module starts on a stack of its own: an async function runs synchronously up to its first await,
    // so a chain of thousands of imports nested every module's run in its importer's until the stack ran out
    // (with V8's 'Exception in PromiseRejectCallback' reports on stderr and an error without a place).
    await null;
    const info = this.checked.modules.get(path);
    if (!info) throw new Error(`internal: module ${path} was not loaded by the validator`);
    const mc = new ModuleCompiler(info, this.ctx, this.builtins, this.watch);
    const f = mc.moduleFrame();
    const body = info.program.body;

    // 1. Imports, in source order: the imported module runs (once) before this one's statements.
    for (const s of body) {
      if (s.kind !== "FromImport") continue;
      const target = info.imports.get(s);
      if (target === undefined) throw new Error(`internal: unresolved import ${s.path.value} in ${path}`);
      const m = await this.load(target);
      const local = s.alias ?? s.name;
      const site = mc.site(s.span);
      if (s.isAgent) {
        const a = m.agents.get(s.name);
        if (!a) throw thrown(`${s.path.value} does not export @${s.name}`, site);
        mc.agents.set(local, a);
      } else {
        const v = m.exports.get(s.name);
        if (v === undefined) throw thrown(`${s.path.value} does not export '${s.name}'`, site);
        f.s[mc.slotOf(mc.moduleScope, local)] = v;
      }
    }

    // 2. Hoisted declarations: agents (configuration literals and perm(...)), inputs, then functions.
    for (const s of body) {
      if (s.kind !== "AgentDecl") continue;
      const site = mc.site(s.span);
      const config = new Map<string, Value>();
      for (const k of s.kwargs) {
        const c = mc.expr(k.value, mc.moduleScope);
        config.set(k.name, c.async ? await c.run(f) : c.run(f));
      }
      mc.agents.set(s.name, new VAgent(s.name, config, site));
    }
    // Inputs: only the entry module declares them (E023 elsewhere). The value given, else the default.
    if (path === this.checked.entry) {
      for (const s of body) {
        if (s.kind !== "InputDecl") continue;
        let v = this.ctx.inputs?.get(s.name);
        if (v === undefined && s.default) {
          const c = mc.expr(s.default, mc.moduleScope);
          v = c.async ? await c.run(f) : c.run(f);
        }
        // The CLI refuses a run with a required input missing before anything runs; this is for other callers.
        if (v === undefined) throw thrown(`input '${s.name}' was not given (vvm run --arg ${s.name}=VALUE)`, mc.site(s.nameSpan));
        f.s[mc.slotOf(mc.moduleScope, s.name)] = v;
      }
    }
    mc.hoistDefs(f);
    if (path === this.checked.entry) {
      const exportStmts = body.filter((s): s is ExportStmt => s.kind === "Export");
      this.partial = () => partialExports(mc, f, exportStmts);
    }

    // 3. The statements.
    const main = mc.compileModuleBody();
    if (this.ctx.trace.enabled) this.ctx.trace.emit({ type: "module", phase: "start", path });
    if (main.async) await main.run(f);
    else main.run(f);
    if (this.ctx.trace.enabled) this.ctx.trace.emit({ type: "module", phase: "end", path });

    // 4. Exports, materialised now (hoisted: position and repetition do not matter).
    return { exports: await this.exports(mc, f, body.filter((s): s is ExportStmt => s.kind === "Export")), agents: this.agentExports(mc, body) };
  }

  private async exports(mc: ModuleCompiler, f: Frame, stmts: ExportStmt[]): Promise<Map<string, Value>> {
    const out = new Map<string, Value>();
    for (const s of stmts) {
      const t = s.target;
      switch (t.kind) {
        case "agent":
          break;
        case "name": {
          const v = exportedName(mc, f, t.name);
          if (v === UNBOUND) throw thrown(`exported name '${t.name}' was never given a value`, mc.site(t.nameSpan));
          if (v !== AGENT) out.set(t.name, v);
          break;
        }
        case "expr": {
          const c = mc.expr(t.expr, mc.moduleScope);
          let v: Value;
          try {
            v = c.async ? await c.run(f) : c.run(f);
          } catch (err) {
            // what a module-level statement does (ModuleCompiler.sited): the raise says where it was made
            throw (err instanceof RangeError && asRaise(err, mc.site(s.span))) || err;
          }
          // An object's fields become export keys (`export pack(a=x)` exports `a`); anything else is keyed by its source
          // text, an error value too (`export json(reply)`), so a failure stays one export and fails the run, and a
          // call's ref value under --state filesystem, so the exports' keys do not depend on where replies live.
          if (isErrorValue(v) || this.ctx.isBinding?.(v) === true || !(v instanceof Map)) out.set(mc.info.exportKeys.get(s)!, v);
          else for (const [k, x] of v) out.set(k, x);
          break;
        }
        default: {
          const never: never = t;
          return never;
        }
      }
    }
    return out;
  }

  private agentExports(mc: ModuleCompiler, body: Stmt[]): Map<string, VAgent> {
    const out = new Map<string, VAgent>();
    for (const s of body) {
      if (s.kind !== "Export") continue;
      const name = s.target.kind === "agent" || s.target.kind === "name" ? s.target.name : null;
      const a = name === null ? undefined : mc.agents.get(name);
      if (a && name !== null) out.set(name, a);
    }
    return out;
  }
}
