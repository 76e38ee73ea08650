// Reading error values in tests.
import { isErrorValue, toJSON, type Value, type VObject } from "../../runtime/values.ts";

/** The `error` part of an error value as plain JSON (kind and message as strings), or null for any other value. */
export function errorOf(v: unknown): ({ kind: string; message: string } & Record<string, unknown>) | null {
  if (!(v instanceof Map) || !isErrorValue(v as VObject)) return null;
  const e = toJSON((v as VObject).get("error") as Value) as Record<string, unknown>;
  return { ...e, kind: String(e.kind), message: String(e.message) };
}
