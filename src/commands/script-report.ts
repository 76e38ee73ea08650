// What a scripted run (`--script FILE`) says at its end on stderr: the calls no rule answered and, under
// --strict-script, the rules that answered nothing (spec/agent-calls.md §6).
import { printable } from "../printable.ts";
import type { ScriptProvider, ScriptRule, Unanswered } from "../../runtime/providers/script.ts";
import { describeUnanswered } from "../../runtime/providers/script.ts";

/** A long list is cut here: the first few name the problem, the count says how big it is. */
const MAX_LISTED = 10;

/** The lines to print (each ends with a newline); none when the script answered everything it was asked. */
export function scriptReport(script: ScriptProvider, scriptName: string, showPath: (file: string) => string, warning: (s: string) => string): string {
  const { unanswered } = script;
  let out = "";
  const file = printable(scriptName, false);
  if (script.strict) {
    if (unanswered.length > 0) {
      out += `vvm: --strict-script: no rule of ${file} answered ${count(unanswered)}; each got error(kind="rejected"):\n`;
      out += listed(unanswered.map((c) => unansweredLine(c, showPath)));
    }
    const unused = script.unused();
    if (unused.length > 0) {
      out += `vvm: --strict-script: ${unused.length} rule${unused.length === 1 ? "" : "s"} of ${file} never answered anything:\n`;
      out += listed(unused.map((r) => describeRule(r)));
    }
  } else if (unanswered.length > 0) {
    // without --strict-script the simulator answers; said once, so a scripted run cannot pass on its answers unnoticed
    out += `vvm: ${warning("warning:")} no rule of ${file} answered ${count(unanswered)}, so the simulator did (first: ${unansweredLine(unanswered[0]!, showPath)}); --strict-script makes that an error\n`;
  }
  return out;
}

/** `1 call`, `2 judges`, `3 calls and 1 judge`. */
function count(list: readonly Unanswered[]): string {
  const calls = list.filter((c) => c.kind === "agent").length;
  const judges = list.length - calls;
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? "" : "s"}`;
  return calls > 0 && judges > 0 ? `${n(calls, "call")} and ${n(judges, "judge")}` : calls > 0 ? n(calls, "call") : n(judges, "judge");
}

export function unansweredLine(call: Unanswered, showPath: (file: string) => string): string {
  return printable(describeUnanswered(call, showPath), false);
}

/** `rule 3 (line 7): agent support, match "Triage"`: what the rule waits for. */
export function describeRule(r: ScriptRule): string {
  const parts = [`kind ${[...r.kinds].join("|")}`];
  if (r.agent !== null) parts.push(`agent ${r.agent}`);
  if (r.name !== null) parts.push(`name ${r.name}`);
  if (r.turn !== null) parts.push(`turn ${r.turn}`);
  if (r.match !== null) parts.push(`match ${JSON.stringify(r.match)}`);
  if (r.regex !== null) parts.push(`regex ${String(r.regex)}`);
  if (r.input !== null) parts.push(`input ${JSON.stringify(r.input)}`);
  return printable(`rule ${r.index} (line ${r.line}): ${parts.join(", ")}`, false);
}

function listed(lines: string[]): string {
  const shown = lines.slice(0, MAX_LISTED).map((l) => `  ${l}\n`);
  if (lines.length > MAX_LISTED) shown.push(`  … and ${lines.length - MAX_LISTED} more\n`);
  return shown.join("");
}
