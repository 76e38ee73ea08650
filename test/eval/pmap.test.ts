// pmap: real concurrency bounded by the run's limit, input order, first failure in input order, cancellation.
import { describe, expect, it } from "vitest";
import { makeError, type Value } from "../../runtime/values.ts";
import { runWithFakes } from "../support/fake-agents.ts";
import { programFile } from "../support/program.ts";

const WORKER = `agent w(model="haiku")
def work(x):
  return @w \`item {x}\`(x)
`;

const err = (m: string): Value => makeError("custom", m);

describe("pmap", () => {
  it("overlaps calls up to the concurrency limit and keeps input order", async () => {
    const file = programFile(`${WORKER}out = pmap(range(10), work)\nexport out\n`);
    const r = await runWithFakes(
      file,
      { delayMs: (req) => 40 - 3 * (req.input as number), replies: [["item", (req) => `done ${String(req.input)}`]] },
      { concurrency: 3 },
    );
    expect(r.exports?.out).toEqual(Array.from({ length: 10 }, (_, i) => `done ${i}`));
    expect(r.agents.maxInFlight).toBe(3);
  });

  it("returns the first error value in input order, even when a later one failed first", async () => {
    const file = programFile(`${WORKER}out = pmap(range(6), work)\nexport out\n`);
    const r = await runWithFakes(
      file,
      {
        delayMs: (req) => (req.input === 1 ? 60 : 5),
        replies: [
          ["item 1", err("one")],
          ["item 3", err("three")],
        ],
      },
      { concurrency: 6 },
    );
    expect(r.exports?.out).toEqual({ error: { kind: "custom", message: "one" } });
  });

  it("cancels the items after a failure and never starts the rest", async () => {
    const file = programFile(`${WORKER}out = pmap(range(8), work)\nexport out\n`);
    const r = await runWithFakes(
      file,
      { delayMs: (req) => (req.input === 0 ? 5 : 500), replies: [["item 0", err("zero")]] },
      { concurrency: 2 },
    );
    expect(r.exports?.out).toEqual({ error: { kind: "custom", message: "zero" } });
    expect(r.agents.cancelled).toBe(1); // item 1 was in flight
    expect(r.agents.calls().length).toBe(2); // items 2..7 never started
  });

  it("a raise wins over a later error value; the raise propagates", async () => {
    const file = programFile(`agent w(model="haiku")
def work(x):
  if x == 2:
    raise "raised at 2"
  return @w \`item {x}\`(x)
try:
  pmap(range(5), work)
except as e:
  got = e.error.message
export got
`);
    const r = await runWithFakes(file, { delayMs: 5, replies: [["item 3", err("three")]] });
    expect(r.exports?.got).toBe("raised at 2");
  });

  it("runs functions that cannot suspend like map, and fails on non-lists", async () => {
    const file = programFile(`def inc(x):
  return x + 1
out = pmap([1, 2], inc)
try:
  pmap(3, inc)
except as e:
  bad = e.error.message
export out
export bad
`);
    const r = await runWithFakes(file);
    expect(r.exports).toEqual({ out: [2, 3], bad: "pmap() needs a list for 'items', got number" });
  });
});
