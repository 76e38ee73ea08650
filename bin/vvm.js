#!/usr/bin/env node
// Entry point installed as `vvm`. `npm install` (prepare) bundles the TypeScript sources into dist/
// with esbuild: one bundle loads in a fraction of the time hundreds of separate modules take.
// Source maps are read only when an internal error is printed (src/stack-map.ts): its stack names our source files.
const { start } = await import("../dist/start.js");

await start();
