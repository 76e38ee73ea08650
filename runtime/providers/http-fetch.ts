// The SDK's fetch, over node:http(s). Node's own fetch (undici) ends a request whose headers, or the gap
// between two pieces of its body, take more than 300 s: a non-streaming reply that takes the model over
// five minutes failed as `timeout` (or `spawn_failed`) whatever `timeout=` said, and the default 10-minute
// deadline never fired. Here only the request's signal ends a request: the call layer's deadline and
// cancellation (spec/agent-calls.md §3).
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";

/** Statuses whose response has no body (the Response constructor refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

export function fetchWithoutIdleLimit(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array)) {
      // (the SDK sends its JSON requests as strings)
      return reject(new TypeError("fetchWithoutIdleLimit sends only string or byte bodies"));
    }
    const send = url.protocol === "https:" ? https.request : http.request;
    const req = send(url, { method: init.method ?? "GET", headers: Object.fromEntries(new Headers(init.headers)), signal: init.signal ?? undefined }, (res) => {
      const headers = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      const status = res.statusCode ?? 0;
      const stream = NO_BODY.has(status) || init.method === "HEAD" ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
      try {
        resolve(new Response(stream, { status, statusText: res.statusMessage ?? "", headers }));
      } catch (err) {
        // a status outside 200–599 from a broken server: a failed request, never a crash
        res.destroy();
        reject(err);
      }
    });
    req.on("error", reject);
    req.end(body ?? undefined);
  });
}
