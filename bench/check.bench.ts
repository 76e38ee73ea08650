// Front-end speed: `node bin/vvm.js check` on a generated ~40,000-line program that is also valid Python,
// against `python3 -c "compile(...)"` on the same file, process to process, median of 5.
// Target: vvm at most 3x CPython's time (issue 2).
import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { builtCli, median, scratchDir } from "./support.ts";

const ROUNDS = 5;
const TARGET = 2;
const LINES = 40_000;

/** One section: 24 lines (no warnings either) using every statement form the two languages share. */
function section(n: number): string {
  return `# section ${n}: a function, a loop and some data
def combine_${n}(a, b):
    total = a + b
    items = [a, b, 1, 2, 3]
    for x in items:
        total = total + x
    if total > 10:
        total = total - 1
    elif total == 3:
        pass
    else:
        total = total + 2
    return total

data_${n} = {"name": "item ${n}", "values": [1, 2, 3], "nested": {"k": "v", "n": ${n}}}
count_${n} = 0
while count_${n} < 3:
    count_${n} = count_${n} + 1
result_${n} = combine_${n}(count_${n}, len(data_${n}["values"]))
label_${n} = "result " + "of section"
flags_${n} = [result_${n} >= 0, count_${n} != 2, label_${n} <= "z"]
if result_${n} < 0 and count_${n} > 0 or result_${n} == 7:
    result_${n} = result_${n} + data_${n}["nested"]["n"] + len(flags_${n})

`;
}

/** A program of about `lines` lines that both `vvm check` and CPython's `compile` accept. */
export function generateProgram(lines: number): string {
  const parts: string[] = [];
  const perSection = section(0).split("\n").length - 1;
  for (let i = 0; i * perSection < lines; i++) parts.push(section(i));
  return parts.join("");
}


function timed(cmd: string, args: string[]): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, maxBuffer: 64 * 1024 * 1024 });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 2).join(" ")} exited ${r.status}: ${r.stderr.slice(0, 2000)}`);
  return secs;
}

export async function run(): Promise<void> {
  const bin = builtCli();
  const dir = scratchDir("check");
  const file = path.join(dir, "big.vvm");
  const source = generateProgram(LINES);
  await writeFile(file, source);
  const lineCount = source.split("\n").length - 1;
  const py = ["-c", `import sys; f = sys.argv[1]; compile(open(f).read(), f, "exec")`, file];
  const v: number[] = [];
  const p: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order so neither side always runs on a warmer machine.
    if (r % 2 === 0) {
      v.push(timed(process.execPath, [bin, "check", file]));
      p.push(timed("python3", py));
    } else {
      p.push(timed("python3", py));
      v.push(timed(process.execPath, [bin, "check", file]));
    }
  }
  const vm = median(v);
  const pm = median(p);
  const ratio = vm / pm;
  process.stdout.write(
    `check ${Math.round(lineCount / 1000)}k lines: vvm ${vm.toFixed(2)}s, python ${pm.toFixed(2)}s, ratio ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? "ok" : "MISSED"}\n`,
  );
}
