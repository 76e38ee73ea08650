// A 10-turn tool loop (9 turns of read_file, then the answer) through the runtime vs the same conversation
// made with raw SDK requests, against the Messages API stand-in in a worker thread. The runtime's side checks
// the permission, resolves the path and reads the file each turn; the raw side answers each tool use with the
// file's text it already holds. Target: runtime at most 1.3x per turn (spec/agent-calls.md §8).
import Anthropic from "@anthropic-ai/sdk";
import type { MessageParam, ToolUnion } from "@anthropic-ai/sdk/resources/messages/messages";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { resolveModel } from "../runtime/providers/models.ts";
import { Toolbox } from "../runtime/tools/toolbox.ts";
import { VAgent, type Value } from "../runtime/values.ts";
import { perm } from "../stdlib/basics.ts";
import { RemoteStandin } from "./remote-standin.ts";
import { interleaved, median, scratchDir, standinRuntime } from "./support.ts";

const TURNS = 10;
const LOOPS = 20;
const ROUNDS = 5;
const TARGET = 1.3;
const FILE_TEXT = "# Notes\n" + Array.from({ length: 40 }, (_, i) => `- line ${i} of the notes`).join("\n") + "\n";

export async function run(): Promise<void> {
  const dir = scratchDir("tool-loop");
  const standin = await RemoteStandin.start();
  try {
    await mkdir(path.join(dir, "docs"));
    await writeFile(path.join(dir, "docs", "notes.md"), FILE_TEXT);
    await standin.configure(0, "done", { toolTurns: TURNS - 1, tool: { name: "read_file", input: { path: "docs/notes.md" } } });
    const site = { path: path.join(dir, "bench.vvm"), span: { line: 1, col: 1, endLine: 1, endCol: 1 } };
    const permissions = perm([], new Map<string, Value>([["read", ["docs/**"]]]), null, site);
    const agent = new VAgent("reader", new Map<string, Value>([["model", "haiku"], ["prompt", "You read notes."], ["permissions", permissions]]), site);
    const runtime = standinRuntime(standin.url, dir);
    const signal = new AbortController().signal;
    const viaRuntime = async (i: number) => {
      const out = await runtime.call({ agent, task: `Summarise the notes (${i}).`, input: null, options: new Map(), site, signal });
      if (out !== "done") throw new Error(`loop ${i} failed: ${JSON.stringify(out)}`);
    };

    // the raw side sends what the provider sends: the same system block, tools and growing conversation
    const toolbox = await Toolbox.create({ read: ["docs/**"], write: [], execute: [], bash: "deny", network: "deny" }, { programDir: dir, agent: "reader", shell: { env: {}, confirm: null } });
    const tools: ToolUnion[] = toolbox.specs.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema as { type: "object" } }));
    const client = new Anthropic({ apiKey: "sk-ant-bench", baseURL: standin.url, maxRetries: 0 });
    const raw = async (i: number) => {
      const messages: MessageParam[] = [{ role: "user", content: [{ type: "text", text: `Summarise the notes (${i}).` }] }];
      for (let turn = 1; ; turn++) {
        const last = messages[messages.length - 1];
        if (turn > 1 && Array.isArray(last.content)) {
          const blocks = last.content;
          blocks[blocks.length - 1] = { ...blocks[blocks.length - 1], cache_control: { type: "ephemeral" } } as (typeof blocks)[number];
        }
        const msg = await client.messages.create({ model: resolveModel("haiku", {}), max_tokens: 8192, system: [{ type: "text", text: "You read notes.", cache_control: { type: "ephemeral" } }], tools, messages });
        const uses = msg.content.filter((b) => b.type === "tool_use");
        if (uses.length === 0) {
          if (turn !== TURNS) throw new Error(`raw loop ${i} ended at turn ${turn}`);
          return;
        }
        if (Array.isArray(last.content)) last.content = last.content.map(({ cache_control: _, ...b }: { cache_control?: unknown }) => b) as typeof last.content;
        messages.push({ role: "assistant", content: msg.content.map((b) => (b.type === "tool_use" ? { type: "tool_use", id: b.id, name: b.name, input: b.input } : { type: "text", text: (b as { text: string }).text })) });
        messages.push({ role: "user", content: uses.map((u) => ({ type: "tool_result", tool_use_id: u.id, content: FILE_TEXT.replace(/\n$/, "") })) });
      }
    };

    const { a, b } = await interleaved(LOOPS, ROUNDS, viaRuntime, raw);
    const perTurn = (ms: number) => ms / (LOOPS * TURNS);
    const ra = perTurn(median(a));
    const rb = perTurn(median(b));
    const ratio = ra / rb;
    process.stdout.write(
      `${TURNS}-turn tool loop (read_file x ${TURNS - 1}), runtime vs raw SDK, per turn: ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? "ok" : "MISSED"} — ` +
        `runtime ${ra.toFixed(2)} ms, SDK ${rb.toFixed(2)} ms per turn (median of ${ROUNDS} rounds of ${LOOPS} loops)\n`,
    );
  } finally {
    await standin.stop();
  }
}
