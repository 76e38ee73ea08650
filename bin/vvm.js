#!/usr/bin/env node
// Entry point installed as `vvm`. `npm install` (prepare) bundles the TypeScript sources into dist/
// with esbuild: one bundle loads in a fraction of the time hundreds of separate modules take.
// Source maps are read only when an internal error is printed (src/stack-map.ts): its stack names our source files.
let start;
try {
  ({ start } = await import("../dist/start.js"));
} catch (err) {
  // before vvm's own handlers exist (src/start.ts says the same of what happens later): one line, no stack
  const code = err?.code;
  if (code === "EMFILE" || code === "ENFILE") {
    const which = code === "EMFILE" ? "this process's limit on open files (ulimit -n)" : "the system's limit on open files";
    process.stderr.write(`vvm: cannot start: ${which} was reached (${code}) while loading vvm; raise it and run again\n`);
    process.exit(71);
  }
  if (code !== "ERR_MODULE_NOT_FOUND") throw err;
  process.stderr.write("vvm: cannot start: the bundle in dist/ is missing (npm install or npm run build makes it)\n");
  process.exit(70);
}

await start();
