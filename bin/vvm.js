#!/usr/bin/env node
// Entry point installed as `vvm`. The TypeScript sources are compiled to dist/ by `npm install` (prepare).
import { start } from "../dist/src/start.js";

await start();
