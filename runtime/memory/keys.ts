// Memory bindings → directories. The key encoding is reversible, lower-case only (safe on
// case-insensitive file systems), never yields `.`/`..`/separators/NUL/reserved device names,
// and stays far below the 255-byte name limit. See spec/memory.md §"Key encoding".
import { createHash } from "node:crypto";
import { lstatSync, realpathSync } from "node:fs";
import path from "node:path";
import { MEMORY_SCOPES } from "../memory-port.ts";
import type { Value } from "../values.ts";

export type MemoryScope = (typeof MEMORY_SCOPES)[number];

function isScope(v: Value | undefined): v is MemoryScope {
  return typeof v === "string" && (MEMORY_SCOPES as readonly string[]).includes(v);
}

export interface MemoryLocation {
  scope: MemoryScope;
  /** the key as used for identity: NFC-normalised */
  key: string;
  /** the directory that holds every memory of this scope (`.vvm/memory`, or the `path`) */
  root: string;
  /** `<root>/<escape(key)>` */
  dir: string;
}

/** Every encoded name starts with this, so no name is a reserved device name, empty, or starts with `-`. */
const PREFIX = "k-";
/** Longest encoded body kept verbatim; longer keys keep a prefix and gain a hash suffix. */
const MAX_BODY = 160;
const HASH_MARK = "_h";
/** Longest accepted key, in UTF-8 bytes. */
const MAX_KEY_BYTES = 1024;

const PLAIN = /^[a-z0-9-]$/;

/**
 * `k-` + every UTF-8 byte outside `[a-z0-9-]` written as `_` + two lower-case hex digits.
 * Keys whose encoding exceeds 160 characters keep the first ≤160 characters (never splitting an
 * escape) followed by `_h` + 32 hex digits of SHA-256 of the key; `h` is not a hex digit, so a
 * hashed name never equals a verbatim one. The original key is also stored in meta.json.
 */
export function escapeKey(key: string): string {
  const nfc = key.normalize("NFC");
  let body = "";
  for (const byte of Buffer.from(nfc, "utf8")) {
    const ch = String.fromCharCode(byte);
    body += byte < 0x80 && PLAIN.test(ch) ? ch : "_" + byte.toString(16).padStart(2, "0");
  }
  if (body.length <= MAX_BODY) return PREFIX + body;
  let cut = MAX_BODY;
  // do not end inside an `_xx` escape
  const lastEscape = body.lastIndexOf("_", cut - 1);
  if (lastEscape >= 0 && lastEscape > cut - 3) cut = lastEscape;
  const hash = createHash("sha256").update(nfc, "utf8").digest("hex").slice(0, 32);
  return PREFIX + body.slice(0, cut) + HASH_MARK + hash;
}

/**
 * The start of the name a memory's directory takes while `vvm memory rm` removes it (`.rm-<name>.<random>`):
 * hidden, never a key's name (no `k-` first), and a name never holds a `.`, so one name's prefix is never
 * the start of another's.
 */
export function removalPrefix(name: string): string {
  return `${REMOVAL}${name}.`;
}
const REMOVAL = ".rm-";

/** The name of the memory directory an entry of the root holds while it is removed, or null when it is no such entry. */
export function removedName(entry: string): string | null {
  const m = REMOVED.exec(entry);
  return m === null ? null : m[1];
}
/** `.rm-`, a memory directory's name, `.`, the random part: anything else under the root is not an rm's, and never touched. */
const REMOVED = new RegExp(`^${REMOVAL.replace(".", "\\.")}(${PREFIX}[a-z0-9_-]+)\\.[0-9a-f]+$`);

/** The key an encoded name stands for, or null when the name is not ours or was shortened with a hash. */
export function unescapeKey(name: string): string | null {
  // macOS may hand back NFD names; ours are ASCII, so normalising changes nothing for valid names
  const n = name.normalize("NFC");
  if (!n.startsWith(PREFIX)) return null;
  const body = n.slice(PREFIX.length);
  const bytes: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === "_") {
      const hex = body.slice(i + 1, i + 3);
      if (!/^[0-9a-f]{2}$/.test(hex)) return null; // `_h…`: shortened name, key lives in meta.json
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (PLAIN.test(ch)) {
      bytes.push(ch.charCodeAt(0));
    } else {
      return null;
    }
  }
  const decoded = new TextDecoder("utf-8", { fatal: true });
  try {
    return decoded.decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}

export class BindingError extends Error {
  override name = "BindingError";
}

function describe(v: Value | undefined): string {
  if (v === undefined) return "missing";
  if (v === null) return "unit";
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v);
  if (Array.isArray(v)) return "a list";
  if (v instanceof Map) return "an object";
  return typeof v === "object" ? "a function or agent" : String(v);
}

/**
 * Validate an agent's `memory` value and resolve its directory, without I/O (`verifyContainment`
 * does the symlink check). Throws BindingError with a user-facing message.
 */
export function resolveBinding(memory: Value, entryDir: string, homeDir: string): MemoryLocation {
  if (!(memory instanceof Map)) throw new BindingError(`memory must be an object {scope, key}, got ${describe(memory)}`);
  for (const k of memory.keys()) {
    if (k !== "scope" && k !== "key" && k !== "path") {
      throw new BindingError(`memory has an unknown field "${k}" (expected scope, key and, for scope "path", path)`);
    }
  }
  const scope = memory.get("scope");
  if (!isScope(scope)) {
    throw new BindingError(`memory.scope must be "project", "user" or "path", got ${describe(scope)}`);
  }
  const rawKey = memory.get("key");
  if (typeof rawKey !== "string" || rawKey.length === 0) {
    throw new BindingError(`memory.key must be a non-empty string, got ${describe(rawKey)}`);
  }
  // a key of only spaces is nearly always an interpolation gone wrong; it would share one memory silently
  if (rawKey.trim() === "") throw new BindingError(`memory.key is blank (only whitespace)`);
  if (/[\uD800-\uDFFF]/u.test(rawKey)) throw new BindingError(`memory.key contains an unpaired surrogate`);
  const key = rawKey.normalize("NFC");
  if (Buffer.byteLength(key, "utf8") > MAX_KEY_BYTES) {
    throw new BindingError(`memory.key is ${Buffer.byteLength(key, "utf8")} bytes long; the limit is ${MAX_KEY_BYTES}`);
  }
  const p = memory.get("path");
  if (scope !== "path" && p !== undefined) throw new BindingError(`memory.path is only allowed with scope "path" (scope is "${scope}")`);
  if (scope === "path" && (typeof p !== "string" || p.length === 0)) throw new BindingError(`memory.path must be a non-empty string when scope is "path", got ${describe(p)}`);
  const root = memoryRoot(scope, entryDir, homeDir, p as string | undefined);
  const dir = path.join(root, escapeKey(key));
  assertInside(root, dir);
  return { scope, key, root, dir };
}

/** A path that cannot hold memories (ENOTDIR): a file stands where it, or a folder above it, belongs. */
export const notAFolder = (root: string) => `${root}, or a folder on the way to it, is a file, not a directory`;

/**
 * The directory that holds every memory of a scope: `<entryDir>/.vvm/memory`, `<homeDir>/.vvm/memory`, or
 * `p` (scope "path") resolved against `entryDir`. Throws BindingError.
 */
export function memoryRoot(scope: MemoryScope, entryDir: string, homeDir: string, p?: string): string {
  switch (scope) {
    case "project":
      return path.join(entryDir, ".vvm", "memory");
    case "user":
      // an empty or relative HOME would put "user" memory wherever the run starts, even into the project's
      if (!path.isAbsolute(homeDir)) throw new BindingError(`scope "user" needs an absolute home directory; HOME is ${JSON.stringify(homeDir)}`);
      return path.join(homeDir, ".vvm", "memory");
    case "path":
      if (p === undefined || p.length === 0) throw new BindingError(`scope "path" needs a path`);
      if (p.includes("\0")) throw new BindingError(`memory.path contains a NUL character`);
      return path.resolve(entryDir, p);
    default: {
      const never: never = scope;
      throw new BindingError(`unknown scope ${String(never)}`);
    }
  }
}

function assertInside(root: string, target: string): void {
  const rel = path.relative(root, target);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel) || rel.includes(path.sep)) {
    throw new BindingError(`memory directory would fall outside ${root}`);
  }
}

/**
 * A project's `.vvm` and `.vvm/memory` must be real directories where they exist: a cloned repository
 * ships them, and a link there would hand the project the user's own memories (`~/.vvm`) or any other
 * directory. (A user or path root is the user's, or the program's, choice and may be a link.) Checked
 * before anything is created under the root, since `mkdir -p` goes through links. Throws BindingError.
 */
export function assertProjectRootReal(scope: MemoryScope, root: string): void {
  if (scope !== "project") return;
  for (const p of [path.dirname(root), root]) {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (st === undefined) return;
    if (!st.isDirectory()) {
      throw new BindingError(`${p} is ${st.isSymbolicLink() ? "a symbolic link" : "not a directory"}: a project's memories must be in a real directory (a cloned repository could point it at your own memories)`);
    }
  }
}

/**
 * The directory's real path, which must be a direct child of the root's real path (no symlink escapes);
 * null when it does not exist.
 */
export async function verifyContainment(loc: MemoryLocation): Promise<string | null> {
  assertProjectRootReal(loc.scope, loc.root);
  const realRoot = realPath(loc.root);
  const realDir = realRoot === null ? null : realPath(loc.dir);
  // nothing there yet: nothing to escape through
  if (realRoot === null || realDir === null) return null;
  try {
    assertInside(realRoot, realDir);
  } catch {
    throw new BindingError(`memory directory ${loc.dir} resolves to ${realDir}, outside ${realRoot} (symbolic link?)`);
  }
  return realDir;
}

/**
 * Where the directory is now (null: gone). A session compares it with what verifyContainment gave
 * at open: the same real path is still inside the root, so the root need not be resolved again.
 */
export function currentRealDir(loc: MemoryLocation): string | null {
  return realPath(loc.dir);
}

function realPath(p: string): string | null {
  try {
    // synchronous: a few syscalls, cheaper than a thread-pool round trip
    return realpathSync.native(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}
