// The Memory Context: the system block a call with memory sends after the agent's prompt.
import type { MemoryMode } from "../memory-port.ts";
import type { MemoryLocation } from "./keys.ts";
import { MAX_RETAIN_CHARS, MAX_RETAIN_ITEMS, type ParsedDigest } from "./patch.ts";
import { factLine, type Recalled } from "./recall.ts";

export function memoryContext(loc: MemoryLocation, parsed: ParsedDigest, facts: Recalled, mode: MemoryMode): string {
  const limit = parsed.settings.digestLimit;
  const out: string[] = [`<memory scope="${loc.scope}" key=${JSON.stringify(loc.key)}>`, "## Digest"];
  if (parsed.unusable) out.push(`(not shown: ${parsed.unusable})`);
  else out.push(parsed.body.trim() === "" ? "(empty)" : parsed.body.replace(/\s+$/, ""));
  if (facts.shown.length > 0 || facts.hidden > 0) {
    out.push("", "## Retained facts (oldest first)");
    for (const f of facts.shown) out.push(`- ${factLine(f)}`);
    // the model should know that its memory holds more than it sees
    if (facts.hidden > 0) out.push(`(${facts.hidden} more retained ${facts.hidden === 1 ? "fact is" : "facts are"} not shown: only the newest${parsed.settings.recall === "relevant" ? " and those most relevant to this call" : ""} fit the budget)`);
  }
  out.push(
    "",
    "## Memory Update Protocol",
    "This memory persists between calls. To change it, end your reply with exactly one fenced block:",
    "```vvm-memory",
    `{"digest": "<the complete new digest; it replaces the current one>", "retain": ["<a short, self-contained fact worth recalling later>"]}`,
    "```",
    `Both keys are optional; leave the block out when nothing should change. Limits: digest ${limit} characters; at most ${MAX_RETAIN_ITEMS} retain items of ${MAX_RETAIN_CHARS} characters. Never store secrets (keys, tokens, passwords): a patch containing one is rejected whole. The block is removed from your reply; patches are ignored in dry_run calls.`,
  );
  if (mode === "dry_run") out.push("This call is read-only (dry_run): any vvm-memory block is ignored and nothing is saved.");
  else if (parsed.settings.readOnly) out.push("The digest is read-only: a new digest is refused; retain items are still saved.");
  else if (parsed.unusable) out.push("The digest cannot be replaced until a person fixes digest.md; retain items are still saved.");
  out.push("</memory>");
  return out.join("\n");
}
