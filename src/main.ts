// Run the CLI straight from the sources (tests and development: `node --import tsx src/main.ts`).
import { start } from "./start.ts";

await start();
