// VVM_PRICES=FILE: a JSON object of model ids to rates in dollars per million tokens, added to the built-in
// price table (runtime/providers/prices.ts) or replacing a model's rates there, for one run.
import path from "node:path";
import { DEFAULT_PRICES, type ModelPrice, type PriceTable } from "../../runtime/providers/prices.ts";
import { parseJson } from "../../runtime/json.ts";
import { FileRefused, readTextFile } from "../../runtime/text-file.ts";
import { UsageError } from "../io.ts";

/** A price table lists a few models: a larger file (or a device) is refused. */
const MAX_PRICES_BYTES = 2 ** 20;

const FIELDS = { input: "input", output: "output", cache_write: "cacheWrite", cache_read: "cacheRead" } as const;

/** The run's price table: the built-in one, with VVM_PRICES's models over it when the variable is set. */
export function priceTable(env: NodeJS.ProcessEnv, cwd: string): PriceTable {
  const file = env.VVM_PRICES;
  if (!file) return DEFAULT_PRICES;
  const bad = (what: string) => new UsageError(`VVM_PRICES=${file}: ${what}`);
  let text: string;
  try {
    text = readTextFile(path.resolve(cwd, file), MAX_PRICES_BYTES);
  } catch (err) {
    if (err instanceof FileRefused) throw bad(err.message);
    throw err;
  }
  // said with a line and column, as --input is; JSON.parse's message quotes the file's text around the fault,
  // which for a file named by mistake (a credentials file) printed its secrets on the terminal and in CI logs
  const checked = parseJson(text, { uniqueFields: true });
  if (!checked.ok) throw new UsageError(`VVM_PRICES=${file}:${checked.line}:${checked.column}: not JSON: ${checked.problem}`);
  const data = checked.value;
  if (!(data instanceof Map)) {
    throw bad('expected an object of model ids, such as {"claude-sonnet-5-5": {"input": 2, "output": 10, "cache_write": 2.5, "cache_read": 0.1}}');
  }
  // without a prototype: a model named "__proto__" is a key like any (on {} it would set the prototype and vanish)
  const out: Record<string, ModelPrice> = Object.assign(Object.create(null) as Record<string, ModelPrice>, DEFAULT_PRICES);
  for (const [model, rates] of data) {
    if (!(rates instanceof Map)) throw bad(`${JSON.stringify(model)}: expected an object of rates`);
    const price: Partial<Record<keyof ModelPrice, number>> = {};
    for (const [key, value] of rates) {
      if (!Object.hasOwn(FIELDS, key)) throw bad(`${JSON.stringify(model)}: unknown field ${JSON.stringify(key)} (expected ${Object.keys(FIELDS).join(", ")})`);
      // (a number too large to hold, 1e400, was refused as JSON above)
      if (typeof value !== "number" || value < 0) throw bad(`${JSON.stringify(model)}.${key}: expected dollars per million tokens, a number of at least 0`);
      price[FIELDS[key as keyof typeof FIELDS]] = value;
    }
    const missing = Object.keys(FIELDS).filter((k) => price[FIELDS[k as keyof typeof FIELDS]] === undefined);
    if (missing.length > 0) throw bad(`${JSON.stringify(model)}: missing ${missing.join(", ")}`);
    out[model] = price as ModelPrice;
  }
  return out;
}
