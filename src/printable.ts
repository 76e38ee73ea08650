// Text that came from outside (memory files, a model's reply, a program's source or inputs) printed for a
// person: control characters (C0 but tab and, where lines are meant, newline; DEL; C1), the Unicode line and
// paragraph separators, and the bidi controls that reorder a line become visible escapes, so such text can
// never move the cursor, erase a line, set the window title, write the clipboard or make a line read
// differently than it is. JSON output needs none of this (JSON.stringify escapes C0; C1 and bidi controls are
// escaped here too when JSON is shown to a person).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex -- as above
const CONTROLS_AND_NEWLINE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** `text` safe to print: newlines kept when `lines` is true (the default), else escaped too. */
export function printable(text: string, lines = true): string {
  return text.replace(lines ? CONTROLS : CONTROLS_AND_NEWLINE, escape);
}

/** A message as vvm prints it on stderr: `vvm: `, the message on one line with its controls escaped. */
export function vvmLine(message: string): string {
  return `vvm: ${printable(message, false)}\n`;
}

/** One line safe to print with its columns kept (a caret under it must still point right): each control is `?`. */
export function printableColumns(line: string): string {
  return line.replace(CONTROLS_AND_NEWLINE, "?");
}
