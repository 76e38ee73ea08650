// Interpreter speed: a 1,000,000-iteration `while` loop calling a two-argument `def`, run by the built CLI
// (`node bin/vvm.js run`) and by `python3` on the equivalent program, process to process, median of 5.
// Target: vvm at most 1.2x CPython's time.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { builtCli, median, scratchDir } from "./support.ts";

const ROUNDS = 5;
const TARGET = 1.2;

const VVM = `def step(acc, i):
  return acc + i - 1

total = 0
i = 0
while i < 1000000:
  total = step(total, i)
  i = i + 1

export total
`;

const PYTHON = `def step(acc, i):
    return acc + i - 1

total = 0
i = 0
while i < 1000000:
    total = step(total, i)
    i = i + 1

print(total)
`;

const EXPECTED = 499998500000;

// The same loop timed inside each process (no start-up), to tell interpreter speed from start-up cost.
const PYTHON_INNER = `import time
t = time.perf_counter()
${PYTHON.replace("print(total)\n", "")}print(total, time.perf_counter() - t)
`;


/**
 * Loop-only times (median of 5): runProgram in this process vs python's perf_counter. The sources are
 * compiled by tsx, which is esbuild's transform, as in the bundle (the bundle exports only the CLI).
 */
async function inner(vvmFile: string, pyFile: string): Promise<void> {
  const { checkProgram } = await import("../src/check.ts");
  const { runProgram } = await import("../runtime/interpreter/index.ts");
  const checked = await checkProgram(vvmFile);
  const ctx = {
    agents: { call: () => Promise.reject(new Error("no calls")), judge: () => Promise.reject(new Error("no judges")), choose: () => Promise.reject(new Error("no choices")) },
    trace: { enabled: false, emit() {} },
    signal: new AbortController().signal,
    concurrency: 1,
  };
  const v: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const out = await runProgram(checked, ctx);
    v.push((performance.now() - t0) / 1000);
    if (out.kind !== "ok" || out.exports.get("total") !== EXPECTED) throw new Error(`in-process run failed: ${out.kind}`);
  }
  await writeFile(pyFile, PYTHON_INNER);
  const p: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const out = spawnSync("python3", [pyFile], { encoding: "utf8" });
    const [total, secs] = out.stdout.trim().split(" ");
    if (Number(total) !== EXPECTED) throw new Error(`python computed ${total}`);
    p.push(Number(secs));
  }
  const vm = median(v);
  const pm = median(p);
  process.stdout.write(`loop only, without start-up: vvm ${vm.toFixed(3)}s, python ${pm.toFixed(3)}s, ratio ${(vm / pm).toFixed(2)}x\n`);
}

/** CPU seconds used by this process's waited-for children (Linux /proc; null elsewhere). */
function childCpu(): number | null {
  try {
    // fields after the command name: cutime and cstime are the 14th and 15th (1-based 16, 17 overall)
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return null;
  }
}

const cpu: { vvm: number[]; python: number[] } = { vvm: [], python: [] };

function timed(cmd: string, args: string[], check: (stdout: string) => void): number {
  const c0 = childCpu();
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { encoding: "utf8", env: { ...process.env, NO_COLOR: "1", ANTHROPIC_API_KEY: "" } });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const c1 = childCpu();
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  check(r.stdout);
  if (c0 !== null && c1 !== null) cpu[cmd === "python3" ? "python" : "vvm"].push(c1 - c0);
  return secs;
}

export async function run(): Promise<void> {
  const bin = builtCli();
  const dir = scratchDir("loop");
  const vvmFile = path.join(dir, "loop.vvm");
  const pyFile = path.join(dir, "loop.py");
  await writeFile(vvmFile, VVM);
  await writeFile(pyFile, PYTHON);
  const checkVvm = (out: string) => {
    const total = (JSON.parse(out) as { total: number }).total;
    if (total !== EXPECTED) throw new Error(`vvm computed ${total}, expected ${EXPECTED}`);
  };
  const checkPy = (out: string) => {
    if (Number(out.trim()) !== EXPECTED) throw new Error(`python computed ${out.trim()}, expected ${EXPECTED}`);
  };
  const v: number[] = [];
  const p: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order so neither side always runs on a warmer machine.
    if (r % 2 === 0) {
      v.push(timed(process.execPath, [bin, "run", vvmFile], checkVvm));
      p.push(timed("python3", [pyFile], checkPy));
    } else {
      p.push(timed("python3", [pyFile], checkPy));
      v.push(timed(process.execPath, [bin, "run", vvmFile], checkVvm));
    }
  }
  const vm = median(v);
  const pm = median(p);
  const ratio = vm / pm;
  process.stdout.write(
    `loop 1M calls: vvm ${vm.toFixed(2)}s, python ${pm.toFixed(2)}s, ratio ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? "ok" : "MISSED"}\n`,
  );
  if (cpu.vvm.length === ROUNDS && cpu.python.length === ROUNDS) {
    // CPU time is steadier than wall time on a busy machine (it includes V8's compiler and GC threads).
    const cv = median(cpu.vvm);
    const cp = median(cpu.python);
    process.stdout.write(`loop 1M calls, CPU time: vvm ${cv.toFixed(2)}s, python ${cp.toFixed(2)}s, ratio ${(cv / cp).toFixed(2)}x\n`);
  }
  await inner(vvmFile, path.join(dir, "inner.py"));
}
