// Which functions may suspend: the static analysis that keeps pure code on the synchronous path.
import { describe, expect, it, vi } from "vitest";
import { Analysis } from "../../runtime/interpreter/analysis.ts";
import { isFunction } from "../../runtime/values.ts";
import { runWithFakes } from "../support/fake-agents.ts";
import { programFile } from "../support/program.ts";

const SOURCE = `agent a(model="haiku")
def pure(x):
  return x + 1
def calls_pure(x):
  return pure(x)
def talks(x):
  return @a \`t\`(x)
def calls_talks(x):
  return talks(x)
def judges(x):
  return ?\`ok\`(x)
def even(n):
  if n == 0:
    return true
  return odd(n - 1)
def odd(n):
  if n == 0:
    return false
  return even(n - 1)
def ping(n):
  if n == 0:
    return @a \`done\`(())
  return pong(n - 1)
def pong(n):
  return ping(n)
def loops(xs):
  for x in xs:
    pass
  return xs
def higher(xs):
  return map(xs, pure)
def higher_dynamic(xs, f):
  return map(xs, f)
def param_call(f):
  return f(1)
def shadowed(x):
  pure = talks
  return pure(x)
export pure
export calls_pure
export talks
export calls_talks
export judges
export even
export odd
export ping
export pong
export loops
export higher
export higher_dynamic
export param_call
export shadowed
`;

describe("suspension analysis", () => {
  it("marks exactly the functions that can reach a call, judge, loop or unknown callee as async", async () => {
    const file = programFile(SOURCE);
    const r = await runWithFakes(file);
    expect(r.outcome.kind).toBe("ok");
    if (r.outcome.kind !== "ok") return;
    const flags = Object.fromEntries([...r.outcome.exports].map(([k, v]) => [k, isFunction(v) ? v.isAsync : "not a function"]));
    expect(flags).toEqual({
      pure: false,
      calls_pure: false,
      talks: true,
      calls_talks: true,
      judges: true,
      even: false,
      odd: false,
      ping: true,
      pong: true,
      loops: true,
      higher: false,
      higher_dynamic: true,
      param_call: true,
      shadowed: true,
    });
  });

  it("judges a chain of 3,000 defs, each calling the next and the last an agent, a few times each, not once per def per pass", async () => {
    const defs = Array.from({ length: 3000 }, (_, i) => `def f${i}(x):\n  return f${i + 1}(x)\n`).join("");
    const file = programFile(`agent a(model="haiku")\n${defs}def f3000(x):\n  return @a \`t\`(x)\nexport f0\n`);
    const judged = vi.spyOn(Analysis.prototype, "block");
    try {
      const r = await runWithFakes(file);
      const f0 = r.outcome.kind === "ok" ? (r.outcome.exports.get("f0") ?? null) : null;
      expect(isFunction(f0) && f0.isAsync).toBe(true);
      expect(judged.mock.calls.length).toBeLessThan(20_000); // passes until nothing changed: 4.5 million
    } finally {
      judged.mockRestore();
    }
  });
});
