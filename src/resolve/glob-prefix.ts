// A permission glob's fixed folders and its wildcard rest, and where a path leads through links, read alike by
// the checker (W026) and the call layer (runtime/tools/globs.ts), so a warning covers exactly the places a call
// would grant.
import { realpathSync } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";

/**
 * `docs/**\/*.md` → `{ fixed: "docs", rest: "**\/*.md" }` (picomatch.scan); a glob without a wildcard is all
 * fixed (`rest` null). The fixed part keeps no escapes: `data \(old\)` names the folder `data (old)`.
 */
export function splitGlob(glob: string): { fixed: string; rest: string | null } {
  const scan = picomatch.scan(glob);
  return { fixed: (scan.isGlob ? scan.base : glob).replace(/\\(.)/g, "$1"), rest: scan.isGlob ? scan.glob : null };
}

/**
 * The real path of `abs` as far as it exists: links in its existing part resolved, the missing rest appended
 * as written. (A path that does not exist yet still has a definite real location: where it would be created.)
 * Any other failure to resolve (a link loop, a resolution longer than PATH_MAX, no permission) throws: the
 * path as written would name the link rather than where an open would lead.
 */
export function realish(abs: string): string {
  // synchronous on purpose: one realpath(3), no heavier than the open that follows it, where a trip through
  // libuv's thread pool waits for the event loop to wake and cost a tool turn ~0.3 ms (bench/tool-loop)
  try {
    return realpathSync.native(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // missing, or under something that is not a directory (an open fails there too): only then is the rest as written
    if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
    const parent = path.dirname(abs);
    if (parent === abs) return abs;
    return path.join(realish(parent), path.basename(abs));
  }
}

/** `p` relative to `dir` when `p` is `dir` or inside it ("" for `dir` itself), else null. Posix paths. */
export function relativeUnder(dir: string, p: string): string | null {
  if (p === dir) return "";
  const prefix = dir.endsWith("/") ? dir : dir + "/";
  return p.startsWith(prefix) ? p.slice(prefix.length) : null;
}
