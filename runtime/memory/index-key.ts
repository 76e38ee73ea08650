// recall.jsonl is derived, and anyone who can write a memory directory can write it: a cloned repository,
// an agent allowed to write there, another program. So each of its lines carries an HMAC under a key that
// only the user's own runtime reads (~/.vvm/recall.key, made on first use, mode 0600). A line without a
// valid one is damaged and the index is rebuilt from the ledger: facts the ledger does not hold, or that a
// `forget` removed, never come back through a planted index.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, constants, fstatSync, fsyncSync, linkSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { mkdirs } from "./fsio.ts";

/** Where the key is kept, under the user's home directory. */
export const KEY_FILE = path.join(".vvm", "recall.key");

/** 32 random bytes, written as 64 hex digits. */
const KEY_HEX = /^[0-9a-f]{64}$/;

/**
 * The key under `homeDir`. When there is none: with `create`, one is made (two processes making it at
 * once agree on the first); without, null. A key that cannot be read or made also gives null: recall
 * then reads the ledger itself, and no recall.jsonl is read or written (slower, never wrong).
 */
export function loadIndexKey(homeDir: string, create: boolean): Buffer | null {
  // an empty or relative HOME would be the working directory, most often the project: the key would be made
  // beside the memories it guards, or read from a .vvm/recall.key the project's archive brought along
  if (!path.isAbsolute(homeDir)) return null;
  const file = path.join(homeDir, KEY_FILE);
  const found = readKey(file);
  if (found !== undefined || !create) return found ?? null;
  try {
    mkdirs(path.dirname(file), 0o700);
    const tmp = `${file}.${randomBytes(9).toString("hex")}.tmp`;
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, randomBytes(32).toString("hex"));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // published whole under its name by a link, or not at all (another process was first: its key holds)
    try {
      linkSync(tmp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      unlinkSync(tmp);
    }
  } catch {
    return null;
  }
  return readKey(file) ?? null;
}

/** The key in `file`; undefined when there is no file, null when what is there is not a key of ours. */
function readKey(file: string): Buffer | null | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? undefined : null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== 64) return null;
    // a key others may read (or that someone else owns) is no secret of the user's
    if ((st.mode & 0o077) !== 0 || (process.getuid !== undefined && st.uid !== process.getuid())) return null;
    const buf = Buffer.alloc(64);
    const text = buf.subarray(0, readSync(fd, buf, 0, 64, 0)).toString("latin1");
    return KEY_HEX.test(text) ? Buffer.from(text, "hex") : null;
  } finally {
    closeSync(fd);
  }
}

/** The HMAC of `parts` one after another (strings as UTF-8), as hex. Parts, so that nothing long is copied to be joined. */
export function sign(key: Buffer, ...parts: (string | Buffer)[]): string {
  return hmac(key, parts).toString("hex");
}

export function verify(key: Buffer, mac: string, ...parts: (string | Buffer)[]): boolean {
  const want = hmac(key, parts);
  const got = Buffer.from(mac, "hex");
  return got.length === want.length && timingSafeEqual(got, want);
}

function hmac(key: Buffer, parts: (string | Buffer)[]): Buffer {
  const h = createHmac("sha256", key);
  for (const p of parts) h.update(p);
  return h.digest();
}
