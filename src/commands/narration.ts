// `vvm run --narrate`: the run told step by step on stderr as it happens, after upstream's narrated runtime
// (each binding with a short preview of its value, each agent call's start and end with its duration, each
// judge's answer), adapted to a terminal: one line each, with the time since the run started and where in
// the program. Never on stdout; colour only where useColor allows it; untrusted text printed escaped.
import pc from "picocolors";
import { renderWhole } from "../../runtime/render.ts";
import type { MemoryReport } from "../../runtime/memory-port.ts";
import type { Narrator } from "../../runtime/trace.ts";
import type { Site, Value } from "../../runtime/values.ts";
import { printable } from "../printable.ts";

/** Longest value preview, in characters. */
const PREVIEW = 60;

interface NarratorOptions {
  /** writes one line (the CLI erases the progress line first) */
  line: (text: string) => void;
  color: boolean;
  /** a program path as the person reads it (relative to the working directory) */
  showPath: (file: string) => string;
  /** milliseconds, for the time since the run started */
  now?: () => number;
}

/** The interpreter's narrator, and what only the CLI sees: the exports at the end of the run. */
export interface CliNarrator extends Narrator {
  exported(name: string, value: Value): void;
}

export function createNarrator({ line, color, showPath, now = () => performance.now() }: NarratorOptions): CliNarrator {
  const c = pc.createColors(color);
  const start = now();
  const at = (site: Site) => c.dim(`${showPath(site.path)}:${site.span.line}:${site.span.col}`);
  const say = (text: string, site: Site | null) => line(`${c.dim(`vvm [${((now() - start) / 1000).toFixed(2)}s]`)} ${text}${site === null ? "" : `  ${at(site)}`}`);
  const secs = (ms: number) => `${(ms / 1000).toFixed(2)}s`;
  return {
    binding: (name, value, site) => say(`${c.cyan(name)} = ${preview(value)}`, site),
    callStarted: (call) => say(`→ @${printable(call.agent, false)} #${call.id} (${printable(call.model, false)})`, call.site),
    callFinished: (call) =>
      say(
        `← @${printable(call.agent, false)} #${call.id} ${secs(call.ms)} ${tokens(call.tokens)}${call.errorKind === null ? "" : ` ${c.red(`error(kind=${printable(call.errorKind, false)})`)}`}`,
        call.site,
      ),
    memory: ({ id, agent, report: r }) => say(`  @${printable(agent, false)} #${id} memory ${printable(r.key, false)} (${r.mode}): ${memoryResult(r)}`, null),
    exported: (name, value) => say(`export ${c.cyan(printable(name, false))} = ${preview(value)}`, null),
    judged: (j) => say(`? ${j.kind} (${printable(j.model, false)}) → ${printable(j.answer, false)} ${secs(j.ms)}`, j.site),
  };
}

/** `1,204 in / 310 out tok`: a call's tokens over its attempts and tool turns (input counts cached prompt tokens too). */
function tokens(t: { input: number; output: number }): string {
  return `${t.input.toLocaleString("en")} in / ${t.output.toLocaleString("en")} out tok`;
}

/** A value on one line, at most PREVIEW characters: strings quoted, lists and objects as compact JSON. */
export function preview(v: Value): string {
  // (only the start of a list or object is rendered: the value can be of any size)
  const text = typeof v === "string" ? JSON.stringify(flat(v.slice(0, PREVIEW * 4))) : flat(renderWhole(v, PREVIEW * 4));
  const short = text.length <= PREVIEW ? text : text.slice(0, PREVIEW - 1) + "…";
  const size = typeof v === "string" && v.length > PREVIEW ? ` (${v.length} chars)` : Array.isArray(v) ? ` (${v.length} item${v.length === 1 ? "" : "s"})` : "";
  return printable(short + size, false);
}

/** `applied, seq 12`, `rejected, seq 13: <reason>`, `refused: <reason>`, `unchanged` or `none`. */
function memoryResult(r: MemoryReport): string {
  const seq = r.seq === null ? "" : `, seq ${r.seq}`;
  const why = r.reason === null ? "" : `: ${printable(r.reason, false)}`;
  switch (r.result) {
    case "applied":
      return `applied${seq}`;
    case "rejected":
    case "refused":
      return `${r.result}${seq}${why}`;
    case "unchanged":
    case "none":
      return r.result;
    default: {
      const never: never = r.result;
      return never;
    }
  }
}

function flat(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}
