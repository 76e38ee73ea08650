// Per-file fixtures that register their own vitest hooks, so test files do not repeat the set-up.
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { Standin } from "./standin.ts";

/** A temporary directory for the whole file, created now and removed after its last test. */
export function useTempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh, empty folder per call, each inside one temporary directory for the whole file (useTempDir). */
export function useFreshDirs(prefix: string): () => string {
  const root = useTempDir(prefix);
  return () => mkdtempSync(path.join(root, "t-"));
}

/** The Messages API stand-in, listening for the whole file and reset (queue, handler, records) before each test. */
export function useStandin(): Standin {
  const standin = new Standin();
  beforeAll(async () => {
    await standin.start();
  });
  afterAll(() => standin.stop());
  beforeEach(() => {
    standin.reset();
  });
  return standin;
}
