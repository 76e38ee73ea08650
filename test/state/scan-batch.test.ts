// state.md's names and summaries are scanned for secrets in batches, one scan per write rather than one per
// call (runtime/state/state-file.ts), and a batch still withholds exactly the texts that hold a secret.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { newRun, removeRuns } from "./helpers.ts";
import { WITHHELD, withoutSecrets } from "../../runtime/state/summary.ts";

const scans = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../runtime/memory/secrets.ts", async (importActual) => {
  const actual = await importActual<typeof import("../../runtime/memory/secrets.ts")>();
  return {
    ...actual,
    scanTexts: (...args: Parameters<typeof actual.scanTexts>) => {
      scans.count++;
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
