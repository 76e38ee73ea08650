import { appendFile, readFile, rm, truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeFs } from "../../runtime/memory/fsio.ts";
import { BackwardLines, ForwardLines, readAll, scanTail, type RawLine, type TailCache } from "../../runtime/memory/ledger.ts";
import { useTempDir } from "../support/fixtures.ts";
import { patchLine } from "./helpers.ts";

const dir = useTempDir("vvm-ledger-");

describe("line readers", () => {
  /** The complete, non-empty lines of `text` split the plain way: offset and content. */
  function expected(text: Buffer): { lines: { start: number; text: string }[]; torn: number } {
    const lines: { start: number; text: string }[] = [];
    let start = 0;
    for (let nl = text.indexOf(0x0a); nl >= 0; nl = text.indexOf(0x0a, start)) {
      if (nl > start) lines.push({ start, text: text.subarray(start, nl).toString("latin1") });
      start = nl + 1;
    }
    return { lines, torn: text.length - start };
  }
  const shape = (lines: RawLine[]) => lines.map((l) => ({ start: l.start, text: l.bytes === null ? `(${l.length} bytes)` : l.bytes.toString("latin1") }));
  const clip = (lines: { start: number; text: string }[], max: number) => lines.map((l) => (l.text.length > max ? { start: l.start, text: `(${l.text.length} bytes)` } : l));

  it("backwards and forwards, they find the same lines as a plain split, across chunk boundaries, long lines and torn tails", async () => {
    const file = path.join(dir, "lines.txt");
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 200_000 })), { maxLength: 30 }),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 150_000 })),
        fc.oneof(fc.constant(Infinity), fc.integer({ min: 1, max: 100_000 })),
        async (lengths, torn, max) => {
          const text = Buffer.from(lengths.map((n, i) => String.fromCharCode(97 + (i % 26)).repeat(n) + "\n").join("") + "{".repeat(torn), "latin1");
          await writeFile(file, text);
          const want = expected(text);
          const h = (await nodeFs.openRead(file))!;
          try {
            const back = new BackwardLines(h, { maxLineBytes: max });
            const got: RawLine[] = [];
            for await (const batch of back) got.push(...batch);
            expect(back.tornBytes).toBe(want.torn);
            expect(shape(got.reverse())).toEqual(clip(want.lines, max));
            const fwd = new ForwardLines(h, max);
            const ahead: RawLine[] = [];
            for await (const batch of fwd) ahead.push(...batch);
            expect(fwd.tornBytes).toBe(want.torn);
            expect(shape(ahead)).toEqual(clip(want.lines, max));
          } finally {
            await h.close();
          }
        },
      ),
      { numRuns: 80 },
    );
  });

  it("backwards, reads only as far as its reader goes", async () => {
    const file = path.join(dir, "far.jsonl");
    await writeFile(file, Array.from({ length: 20_000 }, (_, i) => patchLine(i + 1, [`fact ${i + 1}`])).join(""));
    let read = 0;
    const h = (await nodeFs.openRead(file))!;
    try {
      const counting = { ...h, size: h.size, read: (s: number, l: number) => ((read += l), h.read(s, l)) };
      let n = 0;
      for await (const batch of new BackwardLines(counting)) {
        n += batch.length;
        if (n >= 20) break;
      }
      expect(h.size).toBeGreaterThan(2_000_000);
      expect(read).toBe(64 * 1024);
    } finally {
      await h.close();
    }
  });
});


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
        async (items, torn) => {
          let seq = 0;
          let text = "";
          for (const it of items) {
            if (it.kind === "bad") text += "x".repeat(it.n) + "\n";
            else text += patchLine(++seq, it.sizes.map((n, i) => `${seq + 1}.${i}:` + "f".repeat(n)));
          }
          text += "{".repeat(torn);
          await writeFile(file, text);
          const scan = await scanTail(nodeFs, file, 64 * 1024 * 1024);
          const all = await readAll(nodeFs, file);
          expect(scan.tornBytes).toBe(torn);
          expect(all.tornBytes).toBe(torn);
          expect(scan.last?.seq ?? 0).toBe(seq);
          // bad lines seen by the scan are exactly the full read's bad lines that lie in what it read:
          // at least every line that starts in the last 32 KiB of the file
          for (const off of scan.badLines) expect(all.badLines).toContain(off);
          const window = Math.max(0, text.length - 32 * 1024);
          expect(scan.badLines.filter((o) => o >= window).sort((a, b) => a - b)).toEqual(all.badLines.filter((o) => o >= window));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("never reads more than the scan cap", async () => {
    const file = path.join(dir, "cap.jsonl");
    await writeFile(file, Array.from({ length: 5000 }, (_, i) => patchLine(i + 1, [])).join(""));
    let read = 0;
    const counting = { ...nodeFs, openRead: async (f: string) => {
      const h = (await nodeFs.openRead(f))!;
      return { ...h, size: h.size, close: () => h.close(), read: (s: number, l: number) => ((read += l), h.read(s, l)) };
    } };
    const scan = await scanTail(counting, file, 100_000);
    expect(read).toBeLessThanOrEqual(100_000);
    expect(scan.last?.seq).toBe(5000);
  });

  it("measures a torn tail longer than the scan cap exactly", async () => {
    const file = path.join(dir, "longtorn.jsonl");
    await writeFile(file, patchLine(1, ["a"]) + "{" + "y".repeat(300_000));
    const scan = await scanTail(nodeFs, file, 100_000);
    expect(scan.tornBytes).toBe(300_001);
    expect(scan.last?.seq).toBe(1);
  });
});

describe("scanTail with a cache", () => {
  type Op =
    | { kind: "append"; sizes: number[] }
    | { kind: "bad"; n: number }
    | { kind: "torn"; n: number }
    | { kind: "truncate"; keep: number }
    | { kind: "flip"; at: number }
    | { kind: "rewrite" }
    | { kind: "blank" }
    | { kind: "delete" }
    | { kind: "none" };
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 10, arbitrary: fc.array(fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 30_000 })), { maxLength: 3 }).map((sizes) => ({ kind: "append" as const, sizes })) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 70_000 }).map((n) => ({ kind: "bad" as const, n })) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 70_000 }).map((n) => ({ kind: "torn" as const, n })) },
    { weight: 1, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((keep) => ({ kind: "truncate" as const, keep })) },
    { weight: 2, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((at) => ({ kind: "flip" as const, at })) },
    { weight: 1, arbitrary: fc.constant({ kind: "rewrite" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "blank" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "delete" as const }) },
    { weight: 3, arbitrary: fc.constant({ kind: "none" as const }) },
  );

  it("always returns exactly what a fresh scan returns, whatever happens to the file between calls", async () => {
    const file = path.join(dir, "cached.jsonl");
    let seq = 0;
    await fc.assert(
      // caps below and above the 64 KiB chunk
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), fc.constantFrom(10_000, 100_000, 1024 * 1024), async (ops, cap) => {
        await writeFile(file, "");
        const caches = new Map<string, TailCache>();
        const current = () => readFile(file).catch(() => Buffer.alloc(0));
        for (const o of ops) {
          switch (o.kind) {
            case "append":
              seq++;
              await appendFile(file, patchLine(seq, o.sizes.map((n, i) => `${seq}.${i}:` + "f".repeat(n))));
              break;
            case "bad":
              await appendFile(file, "x".repeat(o.n) + "\n");
              break;
            case "torn":
              await appendFile(file, "{".repeat(o.n));
              break;
            case "truncate": {
              const size = (await current()).length;
              if (size > 0) await truncate(file, Math.floor(size * o.keep));
              break;
            }
            case "flip": {
              // an in-place edit of one byte: same size, same inode
              const buf = await current();
              if (buf.length === 0) break;
              const at = Math.min(buf.length - 1, Math.floor(buf.length * o.at));
              buf[at] = buf[at] === 0x0a ? 0x78 : buf[at] === 0x66 ? 0x0a : 0x66;
              await writeFile(file, buf);
              break;
            }
            case "rewrite": {
              // same size and content shifted: what an editor's save may leave
              const buf = await current();
              await writeFile(file, Buffer.concat([buf.subarray(1), buf.subarray(0, 1)]));
              break;
            }
            case "blank":
              await appendFile(file, "\n");
              break;
            case "delete":
              await rm(file, { force: true });
              break;
            case "none":
              break;
          }
          const cached = await scanTail(nodeFs, file, cap, caches);
          const fresh = await scanTail(nodeFs, file, cap);
          expect(cached).toEqual(fresh);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("forgets lines that a grown ledger pushed out of the scan window", async () => {
    const file = path.join(dir, "window.jsonl");
    await writeFile(file, patchLine(1, ["old fact"]) + "not json\n" + patchLine(2, ["another"]));
    const caches = new Map<string, TailCache>();
    expect((await scanTail(nodeFs, file, 10_000, caches)).badLines).toHaveLength(1);
    await appendFile(file, "x".repeat(70_000) + "\n" + patchLine(3, ["new"]));
    const after = await scanTail(nodeFs, file, 10_000, caches);
    expect(after).toEqual(await scanTail(nodeFs, file, 10_000));
    expect(after.last?.seq).toBe(3);
  });

  it("parses an unchanged ledger once, and only the new lines of one that grew", async () => {
    const file = path.join(dir, "once.jsonl");
    await writeFile(file, Array.from({ length: 500 }, (_, i) => patchLine(i + 1, [`fact ${i + 1}`])).join(""));
    const caches = new Map<string, TailCache>();
    const first = await scanTail(nodeFs, file, 1024 * 1024, caches);
    expect(first.last?.seq).toBe(500);
    const parse = JSON.parse;
    let parsed = 0;
    JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
      parsed++;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    try {
      const again = await scanTail(nodeFs, file, 1024 * 1024, caches);
      expect(again).toEqual(first);
      expect(parsed).toBe(0);
      await appendFile(file, patchLine(501, ["fact 501"]) + "{not json}\n");
      const grown = await scanTail(nodeFs, file, 1024 * 1024, caches);
      expect(parsed).toBe(2);
      expect(grown.last?.seq).toBe(501);
      expect(grown.badLines).toHaveLength(1);
      expect(grown).toEqual(await scanTail(nodeFs, file, 1024 * 1024));
    } finally {
      JSON.parse = parse;
    }
  });
});
