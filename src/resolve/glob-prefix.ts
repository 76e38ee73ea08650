// A permission glob's fixed folders and its wildcard rest, read alike by the checker (W026) and the call
// layer (runtime/tools/globs.ts), so a warning covers exactly the folders a call resolves through links.
import picomatch from "picomatch";

/**
 * `docs/**\/*.md` → `{ fixed: "docs", rest: "**\/*.md" }` (picomatch.scan); a glob without a wildcard is all
 * fixed (`rest` null). The fixed part keeps no escapes: `data \(old\)` names the folder `data (old)`.
 */
export function splitGlob(glob: string): { fixed: string; rest: string | null } {
  const scan = picomatch.scan(glob);
  return { fixed: (scan.isGlob ? scan.base : glob).replace(/\\(.)/g, "$1"), rest: scan.isGlob ? scan.glob : null };
}
