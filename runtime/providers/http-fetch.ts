// The SDK's fetch, over node:http(s). Node's own fetch (undici) ends a request whose headers, or the gap
// between two pieces of its body, take more than 300 s: a non-streaming reply that takes the model over
// five minutes failed as `timeout` (or `spawn_failed`) whatever `timeout=` said, and the default 10-minute
// deadline never fired. Here only the request's signal ends a request: the call layer's deadline and
// cancellation (spec/agent-calls.md §3). What fetch did besides is kept: 307/308 redirects are followed and
// a compressed body is decompressed. Node's fetch takes no options for those limits; the undici package's
// Agent would (headersTimeout/bodyTimeout 0), but its releases for Node 20 (6.x) took ~110 ms to import here,
// and 7.x needs Node 22.
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import zlib from "node:zlib";

/** Statuses whose response has no body (the Response constructor refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);
/** As fetch: more redirects than this is a failed request. */
const MAX_REDIRECTS = 20;

export function fetchWithoutIdleLimit(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const body = init.body;
  if (body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array)) {
    // (the SDK sends its JSON requests as strings)
    return Promise.reject(new TypeError("fetchWithoutIdleLimit sends only string or byte bodies"));
  }
  return send(new URL(input instanceof Request ? input.url : input), init, body ?? undefined, 0);
}

function send(url: URL, init: RequestInit, body: string | Uint8Array | undefined, redirects: number): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const request = url.protocol === "https:" ? https.request : http.request;
    const req = request(url, { method: init.method ?? "GET", headers: Object.fromEntries(new Headers(init.headers)), signal: init.signal ?? undefined }, (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      // a 307/308 asks for the same request elsewhere (the body is a string, so it can be sent again)
      if ((status === 307 || status === 308) && location !== undefined) {
        res.resume();
        if (redirects >= MAX_REDIRECTS) return reject(new Error(`more than ${MAX_REDIRECTS} redirects`));
        return resolve(send(new URL(location, url), init, body, redirects + 1));
      }
      const headers = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      const stream = NO_BODY.has(status) || init.method === "HEAD" ? null : (Readable.toWeb(decoded(res)) as ReadableStream<Uint8Array>);
      try {
        resolve(new Response(stream, { status, statusText: res.statusMessage ?? "", headers }));
      } catch (err) {
        // a status outside 200–599 from a broken server: a failed request, never a crash
        res.destroy();
        reject(err);
      }
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The body as sent, decompressed when the server compressed it (fetch did; a proxy may, unasked). */
function decoded(res: http.IncomingMessage): Readable {
  const encoding = (res.headers["content-encoding"] ?? "").trim().toLowerCase();
  const unzip = encoding === "gzip" || encoding === "x-gzip" ? zlib.createGunzip() : encoding === "deflate" ? zlib.createInflate() : encoding === "br" ? zlib.createBrotliDecompress() : null;
  if (unzip === null) return res;
  // an error on either side (a reset, a corrupt body) ends the stream the SDK reads
  res.on("error", (err) => unzip.destroy(err));
  return res.pipe(unzip);
}
