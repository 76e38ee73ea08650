// `--input FILE` reads at most MAX_INPUT_BYTES: a file that never ends (a device, a pipe nobody closes) or is
// huge is a usage error, not a run that eats memory until it dies (`vvm test`'s input_file names such files too).
import { describe, expect, it } from "vitest";
import { MAX_INPUT_BYTES } from "../../src/commands/inputs.ts";
import { runCli } from "../support/cli.ts";
import { writeProgram } from "../support/program.ts";

describe("vvm run --input size", () => {
  it("an endless file is exit 64 naming the limit", async () => {
    const p = writeProgram({ "main.vvm": "input x = 1\nexport x\n" });
    const r = await runCli(["run", "main.vvm", "--provider", "sim", "--input", "/dev/zero"], { cwd: p.dir });
    p.cleanup();
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 64, stdout: "", stderr: `vvm: --input /dev/zero: larger than ${MAX_INPUT_BYTES / 2 ** 20} MiB\n` });
  }, 20_000);
});
