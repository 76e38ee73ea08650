import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { readAll, scanTail } from "../../runtime/memory/ledger.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "vvm-ledger-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const line = (seq: number, facts: string[]) => JSON.stringify({ v: 1, ts: "t", seq, kind: "patch", retain: facts, digest_before: "a", digest_after: "b", provenance: null }) + "\n";

describe("scanTail", () => {
  it("agrees with a full read across chunk boundaries, long lines, bad lines and torn tails", async () => {
    const file = path.join(dir, "prop.jsonl");
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            { weight: 8, arbitrary: fc.array(fc.integer({ min: 1, max: 3000 }), { maxLength: 3 }).map((sizes) => ({ kind: "entry" as const, sizes })) },
            { weight: 1, arbitrary: fc.integer({ min: 1, max: 200_000 }).map((n) => ({ kind: "bad" as const, n })) },
          ),
          { maxLength: 60 },
        ),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 150_000 })),
        fc.integer({ min: 0, max: 20_000 }),
        async (items, torn, budget) => {
          let seq = 0;
          let text = "";
          const facts: string[] = [];
          for (const it of items) {
            if (it.kind === "bad") text += "x".repeat(it.n) + "\n";
            else {
              const fs = it.sizes.map((n, i) => `${seq + 1}.${i}:` + "f".repeat(n));
              facts.push(...fs);
              text += line(++seq, fs);
            }
          }
          text += "{".repeat(torn);
          await writeFile(file, text);
          const scan = await scanTail(nodeFs, file, budget, 64 * 1024 * 1024);
          const all = await readAll(nodeFs, file);
          expect(scan.tornBytes).toBe(torn);
          expect(all.tornBytes).toBe(torn);
          expect(scan.last?.seq ?? 0).toBe(seq);
          // the newest facts that fit, newest first, stopping at the first that does not fit
          const expected: string[] = [];
          let used = 0;
          for (let i = facts.length - 1; i >= 0 && used + facts[i].length + 3 <= budget; i--) {
            used += facts[i].length + 3;
            expected.push(facts[i]);
          }
          expect(scan.retains).toEqual(expected);
          // bad lines seen by the scan are exactly the full read's bad lines that lie in what it read
          for (const off of scan.badLines) expect(all.badLines).toContain(off);
          if (expected.length === facts.length) expect([...scan.badLines].sort((a, b) => a - b)).toEqual(all.badLines);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("never reads more than the scan cap", async () => {
    const file = path.join(dir, "cap.jsonl");
    await writeFile(file, Array.from({ length: 5000 }, (_, i) => line(i + 1, [])).join(""));
    let read = 0;
    const counting = { ...nodeFs, openRead: async (f: string) => {
      const h = (await nodeFs.openRead(f))!;
      return { ...h, size: h.size, close: () => h.close(), read: (s: number, l: number) => ((read += l), h.read(s, l)) };
    } };
    const scan = await scanTail(counting, file, 1_000_000, 100_000);
    expect(read).toBeLessThanOrEqual(100_000);
    expect(scan.last?.seq).toBe(5000);
  });

  it("measures a torn tail longer than the scan cap exactly", async () => {
    const file = path.join(dir, "longtorn.jsonl");
    await writeFile(file, line(1, ["a"]) + "{" + "y".repeat(300_000));
    const scan = await scanTail(nodeFs, file, 1000, 100_000);
    expect(scan.tornBytes).toBe(300_001);
    expect(scan.last?.seq).toBe(1);
    expect(scan.retains).toEqual(["a"]);
  });
});
