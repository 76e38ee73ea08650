// Chevrotain, loaded from the single-file ESM bundle the package ships (lib/chevrotain.min.mjs).
// The package entry (lib/src/api.js) pulls in hundreds of small modules (lodash-es among them), which costs
// about 300 ms of CPU at every `vvm` start; the bundle is the same release in one file and loads in ~15 ms.
// Only values come from here; types still come from "chevrotain".
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

type Chevrotain = typeof import("chevrotain");

async function load(): Promise<Chevrotain> {
  try {
    const entry = createRequire(import.meta.url).resolve("chevrotain"); // …/chevrotain/lib/src/api.js
    const bundle = path.join(path.dirname(entry), "..", "chevrotain.min.mjs");
    return (await import(pathToFileURL(bundle).href)) as Chevrotain;
  } catch {
    // A layout without the bundle still works, only slower to start.
    return await import("chevrotain");
  }
}

const chevrotain = await load();

export const { createToken, createTokenInstance, EmbeddedActionsParser, EOF, Lexer } = chevrotain;
