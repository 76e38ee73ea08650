// Static checks on agent configuration (declarations, `.with(...)`, inline agents) and agent-call options.
import type { Expr, KwArg, ObjectLit } from "../../grammar/ast.ts";
import { durationMs, parseDuration } from "../../runtime/duration.ts";
import { BACKOFFS as BACKOFF_LIST, CALL_OPTIONS as CALL_OPTION_LIST } from "../../runtime/options.ts";
import { negatedGlob } from "../../runtime/negated-glob.ts";
import { MEMORY_MODES as MEMORY_MODE_LIST, MEMORY_SCOPES as MEMORY_SCOPE_LIST } from "../../runtime/memory-port.ts";
import { perm } from "../../stdlib/basics.ts";
import { SIGNATURES } from "../../stdlib/signatures.ts";
import { VvmRaise, type Value } from "../../runtime/values.ts";
import { isLambda } from "./scopes.ts";
import { constantNumber } from "./constant-raises.ts";

/** Portable agent configuration keys (spec/language.md §3); others warn W020 and pass through. */
export const AGENT_KEYS: ReadonlySet<string> = new Set(["model", "prompt", "skills", "permissions", "memory"]);
/** Keys of this runtime's own features that W020 leaves alone: `returns` (spec/typed-results.md) is judged by W070/W071. */
export const FEATURE_KEYS: ReadonlySet<string> = new Set(["returns"]);

/** Keys outside the portable set that this runtime reads (spec/agent-calls.md): W020 says they are not portable. */
const RUNTIME_KEYS: ReadonlySet<string> = new Set(["max_turns", "max_tokens"]);

/** W020's message; a permission written as a key of its own (`bash="allow"`) is pointed into `permissions=perm(...)`. */
export function unknownKeyMessage(name: string): string {
  const portable = `portable keys: ${[...AGENT_KEYS].join(", ")}`;
  if (RUNTIME_KEYS.has(name)) return `agent configuration key '${name}' is not portable: this runtime reads it, other VVM runtimes may not (${portable})`;
  const unknown = `unknown agent configuration key '${name}' (${portable})`;
  if (!SIGNATURES.perm.params.includes(name)) return unknown;
  return `${unknown}; '${name}' is a permission and grants nothing here: write permissions=perm(${name}=...)`;
}

/** Portable agent-call options (spec/language.md §4.1); others warn W050 and are ignored. The runtime owns the lists. */
export const CALL_OPTIONS: ReadonlySet<string> = new Set(CALL_OPTION_LIST);
const MEMORY_MODES: ReadonlySet<string> = new Set(MEMORY_MODE_LIST);
const MEMORY_SCOPES: ReadonlySet<string> = new Set(MEMORY_SCOPE_LIST);
const BACKOFFS: ReadonlySet<string> = new Set(BACKOFF_LIST);

/** Helper constructors allowed in an agent declaration: pure functions of their (literal) arguments. */
const CONSTRUCTORS: ReadonlySet<string> = new Set(["perm"]);

/**
 * The outermost sub-expressions of an agent declaration value that are not configuration literals (E041).
 * Allowed: unit, booleans, numbers, strings, templates without placeholders, lists and objects of allowed values,
 * operators over allowed values, and `perm(...)` with allowed arguments. Everything else (names, member access,
 * indexing, other calls, agent calls, predicates, `it`) computes at run time.
 */
export function computedParts(root: Expr, isConstructor: (name: string) => boolean): Expr[] {
  // An explicit stack: `"a" + "b" + ...` chains can be far deeper than the call stack allows.
  const out: Expr[] = [];
  const stack: Expr[] = [root];
  while (stack.length > 0) {
    const e = stack.pop()!;
    switch (e.kind) {
      case "Unit":
      case "Bool":
      case "Number":
      case "String":
        break;
      case "TemplateExpr":
        if (!e.template.parts.every((p) => p.kind === "text")) out.push(e);
        break;
      case "List":
        for (const it of e.items) stack.push(it);
        break;
      case "Object":
        for (const en of e.entries) stack.push(en.value);
        break;
      case "Binary":
      case "Logical":
        stack.push(e.left, e.right);
        break;
      case "Not":
        stack.push(e.operand);
        break;
      case "Call":
        if (e.callee.kind === "Name" && CONSTRUCTORS.has(e.callee.name) && isConstructor(e.callee.name)) {
          for (const a of e.args) stack.push(a);
          for (const k of e.kwargs) stack.push(k.value);
        } else out.push(e);
        break;
      case "Name":
      case "It":
      case "Member":
      case "Index":
      case "AgentCall":
      case "Predicate":
        out.push(e);
        break;
      default: {
        const never: never = e;
        return never;
      }
    }
  }
  return out.sort((a, b) => a.span.line - b.span.line || a.span.col - b.span.col);
}

export function describeExpr(e: Expr): string {
  switch (e.kind) {
    case "Name":
      return isLambda(e.name) ? "a lambda" : `the variable '${e.name}'`;
    case "It":
      return "'it'";
    case "Member":
      return "a member access";
    case "Index":
      return "an index";
    case "Call":
      return e.callee.kind === "Name" ? `a call to '${e.callee.name}'` : "a function call";
    case "AgentCall":
      return "an agent call";
    case "Predicate":
      return "a semantic predicate";
    case "TemplateExpr":
      return "a template with placeholders";
    default:
      return "a computed value";
  }
}

/** A literal string value, or null when the expression is not one. */
export function literalString(e: Expr): string | null {
  if (e.kind === "String") return e.value;
  if (e.kind === "TemplateExpr" && e.template.parts.every((p) => p.kind === "text")) {
    return e.template.parts.map((p) => (p.kind === "text" ? p.value : "")).join("");
  }
  return null;
}

export interface ValueProblem {
  at: Expr;
  message: string;
}

/**
 * W021: a literal configuration value of the wrong shape. Only literals are judged; computed values pass.
 * In `.with(...)` the memory object merges one level deep into the base agent's, so fields may be missing there.
 */
export function configValueProblems(kw: KwArg, kind: "decl" | "with" | "inline"): ValueProblem[] {
  const partial = kind === "with";
  const v = foldNumbers(kw.value);
  switch (kw.name) {
    case "model":
    case "prompt":
      return isNonStringLiteral(v) ? [{ at: v, message: `agent '${kw.name}' should be a string` }] : [];
    case "skills":
      if (isNonListLiteral(v)) return [{ at: v, message: "agent 'skills' should be a list of skill names" }];
      return [];
    case "memory":
      // unit is no memory (the call layer opens none): `.with(memory=())` drops a base agent's memory
      if (v.kind === "Unit") return [];
      return v.kind === "Object" ? memoryProblems(v, partial) : isLiteral(v) ? [{ at: v, message: "agent 'memory' should be an object { scope, key }, or () for none" }] : [];
    case "permissions":
      return permProblems(v, kind === "decl");
    case "max_turns":
    case "max_tokens":
      // keys this runtime reads (W020 still says they are not portable); the run raises on a bad value
      return isLiteral(v) && !(v.kind === "Number" && Number.isInteger(v.value) && v.value >= 1)
        ? [{ at: v, message: `agent '${kw.name}' should be a whole number of at least 1 (the call raises otherwise)` }]
        : [];
    default:
      return [];
  }
}

/** The entries of a literal `perm(...)` or permissions object, by key; none for a computed value. */
export function permissionEntries(v: Expr): { key: string; value: Expr }[] {
  if (v.kind === "Call" && v.callee.kind === "Name" && v.callee.name === "perm") return v.kwargs.map((k) => ({ key: k.name, value: k.value }));
  if (v.kind === "Object") return v.entries.map((e) => ({ key: e.key, value: e.value }));
  return [];
}

/**
 * W023: what an agent asks for that this runtime does not grant, so it never goes unnoticed: network="prompt"
 * and `execute` globs without bash. W024: `execute`
 * globs beside bash="allow"/"prompt", which cannot be enforced (a shell starts any program). Only literal
 * values are judged: `perm(...)` with literal arguments or an object literal.
 */
export function ungrantedProblems(kw: KwArg): (ValueProblem & { code: "W023" | "W024" })[] {
  const entries = kw.name === "permissions" ? permissionEntries(kw.value) : [];
  const out: (ValueProblem & { code: "W023" | "W024" })[] = [];
  const bashEntry = entries.find((e) => e.key === "bash");
  const bash = bashEntry === undefined ? "deny" : literalString(bashEntry.value);
  for (const { key, value } of entries) {
    const mode = literalString(value);
    if (key === "network" && mode === "prompt") {
      out.push({
        code: "W023",
        at: value,
        message: 'permission network="prompt" grants nothing: web search and web fetch run inside the API, where nobody can be asked before each use; use "allow" or "deny" (spec/agent-calls.md §8)',
      });
    }
    if (key === "execute" && value.kind === "List" && value.items.length > 0) {
      if (bash === "allow" || bash === "prompt") {
        out.push({
          code: "W024",
          at: value,
          message: `execute globs cannot be enforced beside bash="${bash}": the bash tool's shell can start any program, listed or not (spec/agent-calls.md §8)`,
        });
      } else if (bash === "deny" || bash === null) {
        out.push({ code: "W023", at: value, message: 'execute globs are not granted by this runtime: there is no tool that runs only the listed programs (bash="allow" runs any command; spec/agent-calls.md §8)' });
      }
    }
  }
  return out;
}

/**
 * A literal `perm(...)`: run the standard library's own `perm` on the literal arguments, so the check and
 * the run agree word for word (in a declaration the run would raise while configuring agents, before any
 * statement; at a call site, when the statement runs).
 */
function permProblems(v: Expr, inDecl: boolean): ValueProblem[] {
  if (v.kind !== "Call" || v.callee.kind !== "Name" || v.callee.name !== "perm") return permissionsLiteralProblems(v);
  const args = v.args.map(literalValue);
  const kwargs = new Map<string, Value | undefined>(v.kwargs.map((k) => [k.name, literalValue(k.value)]));
  if (args.includes(undefined) || [...kwargs.values()].includes(undefined)) return [];
  const problem = permRefusal(args as Value[], kwargs as Map<string, Value>, v);
  const when = inDecl ? "the run would stop here, while configuring agents" : "raises thrown whenever this runs";
  return problem === null ? [] : [{ at: v, message: problem.raised ? `${problem.message} (${when})` : problem.message }];
}

/**
 * Permissions written as a literal rather than `perm(...)`: the call layer reads an object's fields as `perm`
 * reads its keywords (a unit field as absent) and raises at every call of the agent when it cannot, so `perm`
 * judges each field. Unit is no permissions; any other literal is refused.
 */
function permissionsLiteralProblems(v: Expr): ValueProblem[] {
  if (v.kind !== "Object") {
    return isLiteral(v) && v.kind !== "Unit" ? [{ at: v, message: "agent 'permissions' should be perm(...) or an object of permissions (calls on this agent raise)" }] : [];
  }
  const keys = SIGNATURES.perm.params;
  const out: ValueProblem[] = [];
  for (const e of v.entries) {
    const value = literalValue(e.value);
    if (!keys.includes(e.key)) out.push({ at: v, message: `permissions has an unknown key '${e.key}' (expected ${keys.join(", ")}; calls on this agent raise)` });
    else if (value !== undefined && value !== null) {
      const problem = permRefusal([], new Map([[e.key, value]]), e.value);
      // (perm names its keyword as perm(read=...): here it is a field)
      if (problem !== null) out.push({ at: e.value, message: `${problem.message.replace(/^perm\((\w+)=\.\.\.\)/, "permissions $1=")}${problem.raised ? " (calls on this agent raise)" : ""}` });
    }
  }
  return out;
}

/** What `perm` says of these arguments (`raised`), or of a negated glob in them, which the call layer refuses; null when both accept them. */
function permRefusal(args: Value[], kwargs: Map<string, Value>, at: Expr): { message: string; raised: boolean } | null {
  try {
    const granted = perm(args, kwargs, null, { path: "", span: at.span }) as Map<string, Value>;
    // the call layer refuses a negated glob too (runtime/tools/permissions.ts): it would allow everything else
    for (const key of ["read", "write", "execute"]) {
      const bad = (granted.get(key) as string[]).find(negatedGlob);
      if (bad !== undefined) return { message: `permissions ${key}=: the glob ${JSON.stringify(bad)} is negated; permission globs list what is allowed (calls on this agent raise)`, raised: false };
    }
    return null;
  } catch (err) {
    if (!(err instanceof VvmRaise)) throw err;
    // (the raise's message is "thrown: <what perm said>")
    return { message: err.message.replace(/^thrown: /, ""), raised: true };
  }
}

/** The value of a literal expression (unit, booleans, numbers, strings, lists and objects of them), or undefined. */
export function literalValue(e: Expr): Value | undefined {
  switch (e.kind) {
    case "Unit":
      return null;
    case "Bool":
    case "Number":
    case "String":
      return e.value;
    case "List": {
      const items = e.items.map(literalValue);
      return items.includes(undefined) ? undefined : (items as Value[]);
    }
    case "Object": {
      const out = new Map<string, Value>();
      for (const en of e.entries) {
        const x = literalValue(en.value);
        if (x === undefined) return undefined;
        out.set(en.key, x);
      }
      return out;
    }
    case "Binary":
      return constantNumber(e);
    default:
      return literalString(e) ?? undefined;
  }
}

/** `e`, or the number literal it folds to (`retry=0 - 1` is judged as the literal -1 would be). */
function foldNumbers(e: Expr): Expr {
  const n = e.kind === "Binary" ? constantNumber(e) : undefined;
  return n === undefined ? e : { kind: "Number", value: n, span: e.span };
}

function memoryProblems(o: ObjectLit, partial: boolean): ValueProblem[] {
  const out: ValueProblem[] = [];
  const get = (k: string) => o.entries.find((e) => e.key === k);
  const scope = get("scope");
  const key = get("key");
  const pathEntry = get("path");
  for (const e of o.entries) {
    if (e.key !== "scope" && e.key !== "key" && e.key !== "path") {
      out.push({ at: o, message: `unknown memory field '${e.key}' (expected scope, key, path)` });
    }
  }
  let scopeValue: string | null = null;
  if (!scope) {
    if (!partial) out.push({ at: o, message: "memory needs a 'scope' (\"project\", \"user\" or \"path\")" });
  } else {
    scopeValue = literalString(scope.value);
    if (scopeValue !== null && !MEMORY_SCOPES.has(scopeValue)) {
      out.push({ at: scope.value, message: `memory scope "${scopeValue}" is not "project", "user" or "path"` });
    } else if (scopeValue === null && isLiteral(scope.value)) {
      out.push({ at: scope.value, message: "memory scope should be \"project\", \"user\" or \"path\"" });
    }
  }
  if (!key) {
    if (!partial) out.push({ at: o, message: "memory needs a 'key' string" });
  } else {
    const k = literalString(key.value);
    if (k === null && isLiteral(key.value)) out.push({ at: key.value, message: "memory key should be a string" });
    else if (k !== null && k.trim() === "") out.push({ at: key.value, message: k === "" ? "memory key is empty" : "memory key is blank (only whitespace)" });
  }
  if (scopeValue === "path" && !pathEntry && !partial) out.push({ at: o, message: "memory scope \"path\" needs a 'path'" });
  if (scopeValue !== null && scopeValue !== "path" && pathEntry) {
    out.push({ at: pathEntry.value, message: `memory 'path' is only allowed with scope "path"; calls on this agent return error(kind="rejected")` });
  }
  return out;
}

/** W051: a literal call-option value the runtime cannot use. Computed values are checked at run time. */
export function optionValueProblem(kw: KwArg): string | null {
  const v = foldNumbers(kw.value);
  if (!isLiteral(v)) return null;
  const s = literalString(v);
  switch (kw.name) {
    case "retry":
      if (v.kind !== "Number" || !Number.isInteger(v.value) || v.value < 0) return "retry should be a whole number of retries (0 or more)";
      return null;
    case "backoff":
      return s !== null && BACKOFFS.has(s) ? null : `backoff should be "fixed" or "exponential"`;
    case "timeout":
      // the runtime's rule (runtime/duration.ts), so a value that passes here also runs
      if (v.kind === "Number") return durationMs(v.value) !== null ? null : "timeout should be a positive duration such as \"30s\"";
      if (s === null) return "timeout should be a duration such as \"30s\" or \"5m\"";
      {
        if (parseDuration(s) === null) return `timeout "${s}" is not a duration (use ms, s, m or h, e.g. "30s")`;
        if (durationMs(s) === null) return "timeout should be longer than zero";
      }
      return null;
    case "name":
      return s !== null ? null : "name should be a string label";
    case "memory_mode":
      return s !== null && MEMORY_MODES.has(s) ? null : `memory_mode should be "continue", "dry_run" or "fresh"`;
    default:
      return null;
  }
}

/** Literal syntax whose value is fully known statically (lists and objects included). */
function isLiteral(e: Expr): boolean {
  switch (e.kind) {
    case "Unit":
    case "Bool":
    case "Number":
    case "String":
    case "List":
    case "Object":
      return true;
    case "TemplateExpr":
      return e.template.parts.every((p) => p.kind === "text");
    default:
      return false;
  }
}

function isNonStringLiteral(e: Expr): boolean {
  return isLiteral(e) && literalString(e) === null;
}

function isNonListLiteral(e: Expr): boolean {
  return isLiteral(e) && e.kind !== "List";
}
