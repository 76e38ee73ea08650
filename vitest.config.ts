import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/support/setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: keep workers few so process-level tests (locks, crash loops) are not starved.
    maxWorkers: 2,
  },
});
