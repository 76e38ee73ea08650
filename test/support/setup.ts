// Runs before every test file (vitest.config.ts `setupFiles`).
import { afterAll } from "vitest";
import { removeLeftoverPrograms } from "./program.ts";

// programs written to temporary directories never outlive their test file
afterAll(removeLeftoverPrograms);
