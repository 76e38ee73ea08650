// The checker on programs built to be long in one direction, each at two sizes: the larger twice the smaller,
// so a check whose work grows with the program's size takes about twice as long, and one that grows with its
// square four times. Target: at most 3x (linear). Each shape once took tens of seconds (quadratic) before it
// was fixed; timed here rather than in the unit tests, which check only what the checker reports for them.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { checkProgram } from "../src/check.ts";
import { median, scratchDir } from "./support.ts";

const TARGET = 3;

/** A program built long in one direction: its files at size `n` (N in `what`). */
interface Shape {
  what: string;
  n: number;
  files: (n: number) => Record<string, string>;
}

const SHAPES: Shape[] = [
  {
    // W040 judged every call of the function again at each pmap of it
    what: "W040: N pmaps of a function making N memory calls",
    n: 2_000,
    files: (n) => ({
      "main.vvm": `agent shared(model="haiku", memory={ scope: "project", key: "k" })\ndef work(item):\n${"  y = @shared `go`(item)\n".repeat(n)}  return y\n${"r = pmap([1], work)\n".repeat(n)}export r\n`,
    }),
  },
  {
    // W040's item-dependent locals: one pass over the body per link of a chain written bottom-up
    what: "W040: a key derived through a chain of N assignments written bottom-up",
    n: 20_000,
    files: (n) => ({
      "main.vvm": `agent shared(model="haiku", memory={ scope: "project", key: "k" })\ndef work(item):\n  while true:\n${Array.from({ length: n }, (_, i) => `    k${i} = k${i + 1}\n`).join("")}    k${n} = item\n  return @shared.with(memory={ scope: "project", key: k0 }) \`go\`(item)\nr = pmap([1], work)\nexport r\n`,
    }),
  },
  {
    // E090 scanned a module's exports again at every import of it
    what: "E090: N imports from a module of N exports",
    n: 8_000,
    files: (n) => {
      const names = Array.from({ length: n }, (_, i) => `v${i}`);
      return {
        "main.vvm": names.map((v) => `from "./m.vvm" import ${v === "v0" ? "missing" : v}\n`).join("") + `export pack(${names.slice(1).join(", ")})\n`,
        "m.vvm": names.map((v) => `${v} = 1\nexport ${v}\n`).join(""),
      };
    },
  },
];

/** The median time of three checks of the program, in ms. */
async function timed(files: Record<string, string>): Promise<number> {
  const dir = scratchDir("shape");
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await checkProgram(path.join(dir, "main.vvm"));
    times.push(performance.now() - t0);
  }
  return median(times);
}

export async function run(): Promise<void> {
  // the checker's code compiled and warm before the first timing
  for (const shape of SHAPES) await timed(shape.files(shape.n / 8));
  for (const shape of SHAPES) {
    const half = await timed(shape.files(shape.n / 2));
    const whole = await timed(shape.files(shape.n));
    const ratio = whole / half;
    console.log(
      `${shape.what.replaceAll("N", shape.n.toLocaleString("en"))}: ${whole.toFixed(0)} ms; at half the size ${half.toFixed(0)} ms, ${ratio.toFixed(2)}x (target <= ${TARGET}x: linear) ${ratio <= TARGET ? "ok" : "MISSED"}`,
    );
  }
}
