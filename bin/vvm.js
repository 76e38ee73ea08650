#!/usr/bin/env node
// Entry point installed as `vvm`. `npm install` (prepare) bundles the TypeScript sources into dist/
// with esbuild: one bundle loads in a fraction of the time hundreds of separate modules take.
// Source maps are on so that an internal error's stack names our source files.
process.setSourceMapsEnabled(true);
const { start } = await import("../dist/start.js");

await start();
