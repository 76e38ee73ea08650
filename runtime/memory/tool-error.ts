// Why a `vvm memory` command that writes changed nothing (maintain.ts). Its own small file, so the
// reading commands can tell it apart without loading the store.

/** The memory is not there, is in use, or the change was refused; the message says which and why. */
export class ToolError extends Error {
  override name = "ToolError";
  constructor(
    message: string,
    readonly kind: "missing" | "locked" | "refused",
  ) {
    super(message);
  }
}
