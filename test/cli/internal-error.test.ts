// A bug of ours is said as one, wherever it is thrown: the internal-error message and exit 70, also for a
// throw in a callback or a promise nobody awaited (Node's own report would exit 1, an error export's code).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, testEnv } from "../support/cli.ts";

/** `vvm check missing.vvm` (it waits on the file system) with `fault` scheduled before it starts. */
function withFault(fault: string) {
  const script = `const { start } = await import(${JSON.stringify(path.join(ROOT, "src/start.ts"))}); ${fault}; await start();`;
  return spawnSync(process.execPath, ["--import", import.meta.resolve("tsx"), "--input-type=module", "-e", script, "check", "missing.vvm"], { cwd: ROOT, encoding: "utf8", env: testEnv() });
}

describe("an internal error", () => {
  it.each([
    ["a throw in a callback", 'queueMicrotask(() => { throw new Error("boom in a callback") })', "boom in a callback"],
    ["a promise nobody awaited", 'Promise.reject(new Error("nobody awaited me"))', "nobody awaited me"],
  ])("from %s is said as a bug of vvm's, exit 70", (_what, fault, message) => {
    const r = withFault(fault);
    expect(r.status, r.stderr).toBe(70);
    expect(r.stderr).toContain("vvm: internal error (this is a bug in vvm");
    expect(r.stderr).toContain(message);
  });

  it.each([
    ["EMFILE", "a throw in a callback", 'queueMicrotask(() => { throw Object.assign(new Error("EMFILE: too many open files, open \'x.js\'"), { code: "EMFILE" }) })', "this process's limit on open files (ulimit -n)"],
    ["ENFILE", "a promise nobody awaited", 'Promise.reject(Object.assign(new Error("ENFILE: file table overflow"), { code: "ENFILE" }))', "the system's limit on open files"],
  ])("%s (no file descriptor left), from %s, is the machine's limit, not a bug: said so, exit 71", (code, _what, fault, which) => {
    const r = withFault(fault);
    expect(r.status, r.stderr).toBe(71);
    expect(r.stderr).toContain(`vvm: stopped: ${which} was reached (${code}); raise it, or lower --concurrency, and run again\n`);
    expect(r.stderr).not.toContain("internal error");
  });
});
