// The Messages API stand-in in a worker thread, so its own request handling does not share the event loop
// with the runtime being measured (the real API is on another machine). It answers every request with one
// text reply after `delayMs`, both set by `configure`; with `toolTurns`, the first that many turns of each
// conversation ask for `tool` instead (a tool loop).
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { startStandin } from "../test/support/standin.ts";

const ROLE = "remote-standin";

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) {
  const standin = await startStandin();
  let reply = { text: "done", delayMs: 0 };
  standin.setHandler(() => ({ type: "text", ...reply }));
  type Configure = { op: "configure"; delayMs: number; text?: string; toolTurns?: number; tool?: { name: string; input: unknown } };
  parentPort!.on("message", (m: Configure | { op: "stats" }) => {
    if (m.op === "configure") {
      reply = { text: m.text ?? "done", delayMs: m.delayMs };
      const { toolTurns = 0, tool } = m;
      standin.reset().setHandler((req) => {
        // the request's turn: its messages are user, then assistant and user again per earlier turn
        const turn = ((req.body?.messages?.length ?? 1) + 1) / 2;
        return tool && turn <= toolTurns ? { type: "tool_use", calls: [tool], delayMs: reply.delayMs } : { type: "text", ...reply };
      });
      parentPort!.postMessage({ op: "configured" });
    } else {
      parentPort!.postMessage({ op: "stats", maxInFlight: standin.maxInFlight, requests: standin.requests.length });
    }
  });
  parentPort!.postMessage({ op: "ready", url: standin.url });
}

/** A stand-in in a worker thread, driven by messages. */
export class RemoteStandin {
  private constructor(
    private readonly worker: Worker,
    readonly url: string,
  ) {}

  static async start(): Promise<RemoteStandin> {
    // Workers do not inherit the tsx loader for their entry module: register it, then load this file.
    const entry = `import { register } from ${JSON.stringify(import.meta.resolve("tsx/esm/api"))}; register(); await import(${JSON.stringify(import.meta.url)});`;
    const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(entry)}`), { workerData: { role: ROLE } });
    const url = await new Promise<string>((resolve, reject) => {
      worker.once("error", reject);
      worker.once("message", (m: { url: string }) => resolve(m.url));
    });
    return new RemoteStandin(worker, url);
  }

  private ask<T>(msg: unknown): Promise<T> {
    return new Promise((resolve) => {
      this.worker.once("message", resolve);
      this.worker.postMessage(msg);
    });
  }

  /** Every later request is answered with `text` (default "done") after `delayMs`; the first `loop.toolTurns` turns of a conversation ask for `loop.tool`. */
  configure(delayMs: number, text?: string, loop?: { toolTurns: number; tool: { name: string; input: unknown } }): Promise<unknown> {
    return this.ask({ op: "configure", delayMs, text, ...loop });
  }

  stats(): Promise<{ maxInFlight: number; requests: number }> {
    return this.ask({ op: "stats" });
  }

  env(): Record<string, string> {
    return { ANTHROPIC_API_KEY: "sk-ant-bench", ANTHROPIC_BASE_URL: this.url };
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}
