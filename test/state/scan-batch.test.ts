// state.md's names and summaries are scanned for secrets in batches, one scan per write rather than one per
// call (runtime/state/state-file.ts), and a batch still withholds exactly the texts that hold a secret.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { newRun, removeRuns } from "./helpers.ts";
import { WITHHELD, withoutSecrets } from "../../runtime/state/summary.ts";

const scans = vi.hoisted(() => ({ count: 0, longest: 0 }));
vi.mock("../../runtime/memory/secrets.ts", async (importActual) => {
  const actual = await importActual<typeof import("../../runtime/memory/secrets.ts")>();
  return {
    ...actual,
    scanTexts: (...args: Parameters<typeof actual.scanTexts>) => {
      scans.count++;
      for (const group of args[0]) for (const text of group) scans.longest = Math.max(scans.longest, text.length);
      return actual.scanTexts(...args);
    },
  };
});

afterEach(removeRuns);

it("scans a wide pmap's names and summaries a batch at a time, and withholds only the one with a secret", async () => {
  const run = await newRun();
  const github = "ghp_" + "R8x2kQ9mZ4vB7nL1pW3tY6uH0jC5dF8gA2sE";
  // more calls than one scan reads (256 texts), finishing together
  const calls = 300;
  await Promise.all(
    Array.from({ length: calls }, (_, i) =>
      run.bind({ name: `item_${i}`, agent: "worker", text: i === 150 ? `Token is ${github} for CI.` : `Item ${i} was handled.`, retries: 0, pause: async () => true }),
    ),
  );
  await run.finish("completed", "Completed");
  const md = readFileSync(path.join(run.dir, "state.md"), "utf8");
  expect(md).toContain("| item_150 | bindings/b000151.md | (withheld: looks like a secret) |");
  expect(md).not.toContain("ghp_");
  for (const i of [0, 149, 151, 299]) expect(md).toContain(`| item_${i} | bindings/b${String(i + 1).padStart(6, "0")}.md | Item ${i} was handled. |`);
  // 300 names and summaries: a handful of scans, not one per call
  expect(scans.count).toBeGreaterThanOrEqual(3);
  expect(scans.count).toBeLessThan(20);
});

// each group is checked as if scanned alone: the view's limits on decoding (256 base64/hex runs, 64 KB) are
// its own, so neighbours full of ids cannot use them up
const b64 = Buffer.from("ghp_" + "R8x2kQ9mZ4vB7nL1pW3tY6uH0jC5dF8gA2sE").toString("base64");

it("a base64-encoded token is withheld behind 250 replies full of UUIDs", async () => {
  const run = await newRun();
  const req = (i: number, text: string) => ({ name: `item_${i}`, agent: "worker", text, retries: 0, pause: async () => true });
  await Promise.all(Array.from({ length: 300 }, (_, i) => run.bind(req(i, i === 250 ? `The CI credential is ${b64} for deploys.` : `Order ${randomUUID()} shipped to ${randomUUID()}, invoice ${randomUUID()}.`))));
  await run.finish("completed", "Completed");
  const md = readFileSync(path.join(run.dir, "state.md"), "utf8");
  expect(md).toContain(`| item_250 | bindings/b000251.md | ${WITHHELD} |`);
  expect(md).not.toContain(b64.slice(0, 24));
});

it("groups are found as if alone: after 40 texts of hex ids, and next to a match that runs on into them", async () => {
  const hex = (i: number, k: number) => (i * 31 + k).toString(16).padStart(4, "0").repeat(8);
  const filler = Array.from({ length: 40 }, (_, i) => [`Built ${[0, 1, 2, 3, 4, 5, 6].map((k) => hex(i, k)).join(" ")}.`]);
  const out = await withoutSecrets([...filler, ["deploy", `The CI credential is ${b64} for deploys.`]]);
  expect(out.at(-1)).toEqual(["deploy", WITHHELD]);
  expect(out[0]).toEqual(filler[0]);
  // neighbours whose match would run on into the next group (found by review): an AWS label with its
  // value's room left blank, before or after; a netrc line whose password is in the group's second text
  const aws = "SecretAccessKey=CorrectHorseBatteryStapl/OnTheMoonTonigh";
  const label = ["aws_secret_access_key =" + " ".repeat(16)];
  expect((await withoutSecrets([label, [aws]]))[1]).toEqual([WITHHELD]);
  expect((await withoutSecrets([["SecretAccessKey=CorrectHor\u200bseBatteryStapl/OnTheMoonTonigh"], label]))[0]).toEqual([WITHHELD]);
  expect((await withoutSecrets([["machine h login u password"], ["", "machine api.example.com login deploy password Xk9mQ2vT7rLp"]]))[1]).toEqual(["", WITHHELD]);
  // a group with no texts is no trouble
  expect(await withoutSecrets([["A plain summary."], [], [aws]])).toEqual([["A plain summary."], [], [WITHHELD]]);
});

it("a name= as long as a document is scanned as far as state.md can show of it, and a secret in that part is withheld", async () => {
  const run = await newRun();
  const github = "ghp_" + "R8x2kQ9mZ4vB7nL1pW3tY6uH0jC5dF8gA2sE";
  const doc = "word ".repeat(400_000); // 2 MB: scanning all of it took ~250 ms, for every call named after it
  const req = (name: string) => ({ name, agent: "worker", text: "Done.", retries: 0, pause: async () => true });
  scans.longest = 0;
  await run.bind(req(doc));
  await run.bind(req(`${github} ${doc}`));
  // the cell is made of the first 4,096 characters: what only follows more white space than the scan reads never shows
  await run.bind(req(`${" ".repeat(20_000)}${github}`));
  await run.finish("completed", "Completed");
  expect(scans.longest).toBeLessThanOrEqual(4 * 4096 + 10);
  const md = readFileSync(path.join(run.dir, "state.md"), "utf8");
  expect(md).toContain("| word word word word word word word word word word word… | bindings/b000001.md | Done. |");
  expect(md).toContain(`| ${WITHHELD} | bindings/b000002.md | Done. |`);
  expect(md).toContain("| … | bindings/b000003.md | Done. |");
  expect(md).not.toContain("ghp_");
});
