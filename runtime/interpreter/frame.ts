// Activation records and the control signals the compiled closures pass around.
import { thrown, VvmRaise, type CallEnv, type Site, type Value } from "../values.ts";

/** One function activation (or a module's top level). `undefined` in a slot means "not bound yet". */
export class Frame implements CallEnv {
  /** the value of a `return`, read when the body reports RETURN */
  ret: Value = null;
  /** the error value being handled by the innermost `except` of this activation (bare `raise`) */
  caught: Value | undefined = undefined;
  constructor(
    readonly s: (Value | undefined)[],
    /** the frame the function was defined in (closures), null at module level */
    readonly p: Frame | null,
    public it: Value,
    readonly depth: number,
    readonly signal: AbortSignal,
  ) {}
}

/** Statement completion codes: cheaper than exceptions for the common control transfers. */
export const NORMAL = 0;
export const BREAK = 1;
export const CONTINUE = 2;
export const RETURN = 3;
export type Completion = 0 | 1 | 2 | 3;

/**
 * Deepest VVM call nesting (Python's default too). Each VVM call takes several JS frames (about 1 KB of
 * Node's ~1 MB stack for a simple body), so a limit keeps deep recursion a catchable `thrown` error;
 * bodies that nest expressions deeply can still hit the JS limit first, which `asRaise` turns into `thrown`.
 */
export const RECURSION_LIMIT = 1000;

/** The longest string and list a value can be: V8's limits on 64-bit Node (a list is a FixedArray; measured). */
export const MAX_STRING_LENGTH = 2 ** 29 - 24;
export const MAX_LIST_LENGTH = 2 ** 27 - 3;
/** What a value too large is told, after what would have been made. */
export const TOO_LONG = {
  string: `a string holds at most ${MAX_STRING_LENGTH.toLocaleString("en")} characters`,
  list: `a list holds at most ${MAX_LIST_LENGTH.toLocaleString("en")} items`,
};

/** Turn what a `try` caught into a VVM raise, or null when it must keep propagating (interrupts, internal bugs). */
export function asRaise(err: unknown, site: Site | null): VvmRaise | null {
  if (err instanceof VvmRaise) return err;
  if (err instanceof RangeError) {
    try {
      // Node's own stack overflow (or an impossible array size): a program error, not a crash.
      const msg = err.message.includes("call stack")
        ? `recursion too deep: the JavaScript stack ran out (before the limit of ${RECURSION_LIMIT} nested calls, which calls through map, filter, reduce or deeply nested expressions can use up sooner)`
        : `value too large: ${/string length/i.test(err.message) ? TOO_LONG.string : /array length/i.test(err.message) ? TOO_LONG.list : err.message}`;
      return thrown(msg, site);
    } catch {
      // Too close to the stack's end to build even the error value: a caller further up, with room, will.
      return null;
    }
  }
  return null;
}
