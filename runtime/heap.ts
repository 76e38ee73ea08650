// A program that keeps more values than Node's heap can hold would end in V8's fatal error: a native stack,
// exit 134, the exports and the trace's last lines lost. The interpreter looks at the heap every so many calls
// and loop iterations, and before making a long list, and raises `thrown` while there is still room
// to unwind, run `finally` blocks and report.
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { thrown, type Site } from "./values.ts";

/** What the program's values may fill: V8's old space, the heap's limit less its young generation (48 MB on 64-bit Node; 64 set aside). */
const LIMIT = getHeapStatistics().heap_size_limit - 64 * 2 ** 20;
/** Used past this share of the limit: collect the garbage, then look again. */
const LOOK_AT = 0.85;
/** Still used past this share after a full collection: the program's own values fill the heap. */
const FULL_AT = 0.8;

let collect: (() => void) | null | undefined;

/** A full garbage collection, so what is counted is what the program keeps (V8 exposes it only on request). */
function collectGarbage(): void {
  if (collect === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      collect = runInNewContext("gc") as () => void;
    } catch {
      collect = null;
    }
  }
  collect?.();
}

const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20).toLocaleString("en")} MB`;

/** Raises `out of memory` at `site` when the heap is nearly full of the program's values. */
export function checkHeap(site: Site): void {
  look(site, 0);
}

/** A list shorter than this is left to the periodic look: making it costs less than looking. */
const LONG_LIST = 65_536;

/** Before a list of `items` is made at `site` (8 bytes an item): raises `out of memory` when it would nearly fill the heap. */
export function checkRoomForList(items: number, site: Site): void {
  if (items >= LONG_LIST) look(site, items * 8);
}

function look(site: Site, bytes: number): void {
  if (getHeapStatistics().used_heap_size + bytes < LOOK_AT * LIMIT) return;
  collectGarbage();
  const used = getHeapStatistics().used_heap_size;
  if (used + bytes < FULL_AT * LIMIT) return;
  const what = bytes > 0 ? `this would add about ${mb(bytes)} to the ${mb(used)} the program's values take` : `the program's values take ${mb(used)}`;
  throw thrown(`out of memory: ${what}, of the ${mb(LIMIT)} Node's heap may hold; keep fewer or smaller values (or give Node more: NODE_OPTIONS=--max-old-space-size=<MB>)`, site);
}
