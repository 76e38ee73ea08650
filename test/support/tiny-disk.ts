// A tiny tmpfs (256 KiB) for the tests of a full disk. Mounting one needs root on Linux (as CI runs);
// elsewhere those tests skip, and say why in one line.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";

/** Mounts one for the enclosing suite: the getter gives its path, or null when the tests must skip. */
export function useTinyDisk(tests: string): () => string | null {
  let mount: string | null = null;
  beforeAll(() => {
    let why: string;
    if (process.platform !== "linux" || process.getuid?.() !== 0) why = "needs root on Linux to mount a tmpfs";
    else {
      const dir = mkdtempSync(path.join(os.tmpdir(), "vvm-full-"));
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", dir], { stdio: "pipe" });
        mount = dir;
        return;
      } catch (err) {
        why = `mount -t tmpfs failed: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`;
        rmSync(dir, { recursive: true, force: true });
      }
    }
    process.stdout.write(`${tests} skipped: ${why}\n`);
  });
  afterAll(() => {
    if (mount === null) return;
    execFileSync("umount", [mount]);
    rmSync(mount, { recursive: true, force: true });
  });
  return () => mount;
}

/** Fill the file system at `dir` to the last byte: the file `filler` in it, whose path is returned. */
export function fill(dir: string): string {
  const file = path.join(dir, "filler");
  const block = Buffer.alloc(4096, 1);
  writeFileSync(file, "");
  for (let n = 4096; n >= 1; n = Math.floor(n / 2)) {
    for (;;) {
      try {
        writeFileSync(file, block.subarray(0, n), { flag: "a" });
      } catch {
        break;
      }
    }
  }
  return file;
}
