import { describe, expect, it } from "vitest";
import { DEFAULT_DIGEST_LIMIT, digestFile, extractBlocks, MAX_DIGEST_FILE_BYTES, parseDigest, parsePatch } from "../../runtime/memory/patch.ts";
import { parseMeta } from "../../runtime/memory/state.ts";

const block = (body: string, fence = "```") => `${fence}vvm-memory\n${body}\n${fence}\n`;

describe("extractBlocks", () => {
  it("strips the block and returns its body", () => {
    const r = extractBlocks(`Hello.\n\n${block('{"retain":["a"]}')}`);
    expect(r.visible).toBe("Hello.");
    expect(r.blocks).toEqual([{ body: '{"retain":["a"]}\n', closed: true }]);
  });

  it("leaves text without blocks untouched", () => {
    const text = "  spaced\n\n\n\ntext  ";
    expect(extractBlocks(text)).toEqual({ visible: text, blocks: [] });
  });

  it("strips every block, in the middle too, with ~~~ and longer fences", () => {
    const r = extractBlocks(`A\n${block("{}", "~~~~")}B\n${block('{"digest":"x"}', "````")}C`);
    expect(r.visible).toBe("A\nB\nC");
    expect(r.blocks.map((b) => b.body)).toEqual(["{}\n", '{"digest":"x"}\n']);
  });

  it("treats a vvm-memory fence quoted inside another code block as content", () => {
    const text = "Example:\n````text\n```vvm-memory\n{}\n```\n````\nEnd";
    expect(extractBlocks(text)).toEqual({ visible: text, blocks: [] });
  });

  it("strips an unclosed block to the end and marks it", () => {
    const r = extractBlocks('Answer\n```vvm-memory\n{"digest": "half');
    expect(r.visible).toBe("Answer");
    expect(r.blocks).toEqual([{ body: '{"digest": "half', closed: false }]);
  });

  it("changes nothing else in the reply: blank lines inside code blocks survive, one doubled blank line at the cut goes", () => {
    const code = "```python\nimport os\n\n\n\nclass A:\n    pass\n```\n";
    expect(extractBlocks(code + block("{}")).visible).toBe(code.trim());
    expect(extractBlocks(`Intro.\n\n${block("{}")}\nOutro.\n\n\n\nEnd.`).visible).toBe("Intro.\n\nOutro.\n\n\n\nEnd.");
  });

  it("does not close a ``` block with ~~~ or a shorter fence", () => {
    const r = extractBlocks("````vvm-memory\n{\n```\n}\n````\nafter");
    expect(r.blocks[0].body).toBe("{\n```\n}\n");
    expect(r.visible).toBe("after");
  });
});

describe("parsePatch", () => {
  const ok = (body: string) => parsePatch(body, true, DEFAULT_DIGEST_LIMIT);

  it("accepts digest and retain", () => {
    expect(ok('{"digest":"D","retain":["a","b"]}')).toEqual({ ok: true, patch: { digest: "D", retain: ["a", "b"] } });
    expect(ok("{}")).toEqual({ ok: true, patch: { retain: [] } });
  });

  it("accepts a digest that starts with a Markdown rule or a title between rules (not settings)", () => {
    for (const digest of ["---\nMy Title\n---\nbody", "---\nonly a rule above\n", "---\n# Heading\n---\n"]) {
      expect(ok(JSON.stringify({ digest }))).toEqual({ ok: true, patch: { digest, retain: [] } });
    }
  });

  it("rejects malformed JSON without quoting it", () => {
    const r = ok('{"digest": "sk-secret-value" oops}');
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toMatch(/not valid JSON/);
      expect(r.reason).not.toContain("sk-secret");
      expect(r.reason).not.toContain("oops");
    }
  });

  it.each([
    ["[]", /must be a JSON object, got an array/],
    ["null", /got null/],
    ['"text"', /got string/],
    ['{"digest": 3}', /"digest" must be a string, got number/],
    ['{"retain": "a"}', /"retain" must be a list of strings, got string/],
    ['{"retain": ["a", 2]}', /retain\[1\] must be a string, got number/],
    ['{"retain": [""]}', /retain\[0\] is empty/],
    ['{"retain": ["a", " \\n"]}', /retain\[1\] is blank \(only whitespace\)/],
    ['{"digest": "a", "notes": "x"}', /unknown key "notes"/],
    ['{"sk-ant-api03-abcdef": "x"}', /unknown key \(a key not shown\)/],
    ['{"AKIA2E0A8F3B244C9986": "x", "hunter2_is_the_db_password": 1}', /unknown keys \(a key not shown\), \(a key not shown\) in/],
    [JSON.stringify({ retain: Array(21).fill("a") }), /21 items; the limit is 20/],
    [JSON.stringify({ retain: ["a".repeat(501)] }), /retain\[0\] is 501 characters; the limit is 500/],
    [JSON.stringify({ digest: "---\nread_only: false\n---\nbody" }), /must not begin with front matter/],
    // a BOM is dropped when digest.md is read, so it would turn the digest into settings
    [JSON.stringify({ digest: "\ufeff---\nread_only: true\n---\nmine now" }), /must not begin with front matter/],
    [JSON.stringify({ digest: "---\nkey: [unclosed\n---\nnotes" }), /would leave digest.md unusable: digest.md front matter is not valid YAML/],
    [JSON.stringify({ digest: "a\0b" }), /NUL/],
    ['{"digest": "half \\ud83d"}', /"digest" contains an unpaired surrogate/],
    ['{"retain": ["\\ude00 low half"]}', /retain\[0\] contains an unpaired surrogate/],
    // JSON.parse would keep the last value of a key given twice: as ambiguous as two blocks
    ['{"retain": ["first"], "retain": ["second"]}', /^"retain" is given twice in the vvm-memory block; which one was meant is unknowable, so none was applied$/],
    ['{"digest": "a", "retain": ["x, {\\"digest\\": 1}"], "digest": "b"}', /^"digest" is given twice/],
  ])("rejects %s", (body, reason) => {
    const r = ok(body);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it("rejects a 2 MB digest and respects a per-memory limit", () => {
    const big = JSON.stringify({ digest: "x".repeat(2 * 1024 * 1024) });
    const r = ok(big);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toBe(`"digest" is ${2 * 1024 * 1024} characters; the limit is ${DEFAULT_DIGEST_LIMIT}`);
    expect(parsePatch(JSON.stringify({ digest: "x".repeat(101) }), true, 100).ok).toBe(false);
    expect(parsePatch(JSON.stringify({ digest: "x".repeat(100) }), true, 100).ok).toBe(true);
  });

  it("rejects an unclosed block", () => {
    expect(parsePatch("{}", false, DEFAULT_DIGEST_LIMIT)).toEqual({ ok: false, reason: expect.stringMatching(/not closed/) });
  });
});

describe("parseDigest", () => {
  const buf = (s: string) => Buffer.from(s, "utf8");

  it("splits YAML front matter from the body and reads settings", () => {
    const d = parseDigest(buf("---\nread_only: true\ndigest_limit: 500\n---\n## Stable\n- fact\n"));
    expect(d.prefix).toBe("---\nread_only: true\ndigest_limit: 500\n---\n");
    expect(d.body).toBe("## Stable\n- fact\n");
    expect(d.settings).toEqual({ readOnly: true, digestLimit: 500, recall: "relevant", recentShare: 0.5 });
    expect(d.unusable).toBeNull();
  });

  it("keeps the closing delimiter's line whole, so a new body never joins it", () => {
    for (const [text, prefix] of [
      ["---\ndigest_limit: 500\n---", "---\ndigest_limit: 500\n---"],
      ["---\ndigest_limit: 500\n---   \nbody", "---\ndigest_limit: 500\n---   \n"],
      ["---\r\ndigest_limit: 500\r\n---\r\nbody", "---\r\ndigest_limit: 500\r\n---\r\n"],
    ]) {
      const d = parseDigest(buf(text));
      expect(d.prefix).toBe(prefix);
      expect(d.settings.digestLimit).toBe(500);
      const rewritten = parseDigest(buf(digestFile(d, "## Notes\n")));
      expect(rewritten.settings.digestLimit).toBe(500);
      expect(rewritten.body).toBe("## Notes\n");
    }
    // a `----` line is body text, not the closing delimiter
    const d = parseDigest(buf("---\nread_only: true\n---\n----\nbody"));
    expect(d.body).toBe("----\nbody");
  });

  it("reads YAML between two rules that is not a mapping as Markdown (a title between rules)", () => {
    for (const text of ["---\nPayments on-call notes\n---\n- VND-221 open\n", "---\n42\n---\nb", "---\n- a\n---\nb"]) {
      const d = parseDigest(buf(text));
      expect(d).toMatchObject({ prefix: "", body: text, unusable: null });
    }
    expect(parseDigest(buf("---\n---\nbody"))).toMatchObject({ prefix: "---\n---\n", body: "body" });
    // YAML reads a `# heading` as a comment and `~` as null: still Markdown, not an empty settings block
    for (const text of ["---\n# Release Notes\n---\nbody\n", "---\n~\n---\nbody\n"]) {
      expect(parseDigest(buf(text))).toMatchObject({ prefix: "", body: text });
    }
  });

  it("names settings it does not know, and ignores them", () => {
    const d = parseDigest(buf("---\nStatus: all green\nread_only: true\n---\nbody"));
    expect(d.settings.readOnly).toBe(true);
    expect(d.notes).toEqual(["front matter setting 'Status' is not known (digest_limit, read_only, recall, recent_share); it is ignored"]);
  });

  it("treats a lone leading rule as body text", () => {
    const d = parseDigest(buf("---\njust a rule above\n"));
    expect(d.prefix).toBe("");
    expect(d.body).toBe("---\njust a rule above\n");
  });

  it("never evaluates JavaScript front matter", () => {
    const g = globalThis as { pwned?: boolean };
    const d = parseDigest(buf("---js\n{ x: (globalThis.pwned = true) }\n---\nbody"));
    expect(g.pwned).toBeUndefined();
    // only a bare `---` line opens front matter, so `---js` is plain body text
    expect(d.prefix).toBe("");
    expect(d.body).toMatch(/^---js/);
  });

  it("reports bad settings and bad YAML", () => {
    expect(parseDigest(buf("---\ndigest_limit: lots\n---\nb")).notes[0]).toMatch(/digest_limit must be an integer/);
    expect(parseDigest(buf("---\nread_only: maybe\n---\nb")).settings.readOnly).toBe(true);
    expect(parseDigest(buf("---\n: [unclosed\n---\nb")).unusable).toMatch(/not valid YAML/);
    // plain data only: a type tag is not YAML this runtime reads, and a date stays text
    expect(parseDigest(buf('---\nread_only: !!js/function "function () { return true }"\n---\nb')).unusable).toMatch(/not valid YAML/);
    expect(parseDigest(buf("---\nread_only: 2026-01-01\n---\nb")).notes[0]).toMatch(/read_only must be true or false/);
    expect(parseDigest(buf("---\nread_only: !!binary aGVsbG8=\n---\nb")).unusable).toMatch(/not valid YAML/);
    // a merge key is an ordinary, unknown setting: it merges nothing into the settings
    const merged = parseDigest(buf("---\n<<: {read_only: true}\n---\nb"));
    expect([merged.unusable, merged.settings.readOnly, merged.notes[0]]).toEqual([null, false, expect.stringMatching(/setting '<<' is not known/)]);
    // nesting is bounded before the parser's recursion goes deep (a cloned repository's digest.md)
    const nested = (depth: number) => buf(`---\nnote: ${"[".repeat(depth)}${"]".repeat(depth)}\n---\nb`);
    expect(parseDigest(nested(99)).unusable).toBeNull();
    expect(parseDigest(nested(100)).unusable).toMatch(/not valid YAML \(nesting exceeded maxDepth \(100\)/);
    expect(parseDigest(nested(100_000)).unusable).toMatch(/not valid YAML \(nesting exceeded maxDepth \(100\)/);
    // a block with only a `# line` is Markdown (a heading between two rules), not settings
    const commented = parseDigest(buf("---\n# nothing set\n---\nb"));
    expect([commented.prefix, commented.body]).toEqual(["", "---\n# nothing set\n---\nb"]);
  });

  it("marks binary, non-UTF-8, oversize and over-limit digests unusable", () => {
    expect(parseDigest(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01])).unusable).toMatch(/NUL bytes/);
    expect(parseDigest(Buffer.from([0x61, 0xff, 0xfe, 0x62])).unusable).toMatch(/not valid UTF-8/);
    expect(parseDigest(Buffer.alloc(MAX_DIGEST_FILE_BYTES + 1, 0x61)).unusable).toMatch(/over the 1048576-byte cap/);
    expect(parseDigest(buf("y".repeat(DEFAULT_DIGEST_LIMIT + 1))).unusable).toMatch(/over its limit of 12000/);
    expect(parseDigest(buf("---\ndigest_limit: 20000\n---\n" + "y".repeat(DEFAULT_DIGEST_LIMIT + 1))).unusable).toBeNull();
  });
});

// a model's reply and a cloned repository's digest.md are untrusted: none of these may take long
describe("in bounded time", () => {
  const aliasBomb = (length: number, aliases: number, keys: number) =>
    `---\na: &a "${"x".repeat(length)}"\nb: &b [${Array(aliases).fill("*a").join(",")}]\nc:\n${"  - ? *b\n    : 1\n".repeat(keys)}---\nbody\n`;

  it("removes thousands of blocks after one long blank line in linear time", () => {
    const reply = " ".repeat(400_000) + "\n" + "```vvm-memory\n{}\n```\n\n".repeat(20_000) + "done\n";
    const t0 = performance.now();
    const r = extractBlocks(reply);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect([r.blocks.length, r.visible]).toEqual([20_000, "done"]);
  });

  it("refuses front matter with YAML aliases (aliased keys took js-yaml seconds), and reads a quoted * as text", () => {
    const t0 = performance.now();
    expect(parseDigest(Buffer.from(aliasBomb(4000, 1000, 800))).unusable).toBe("digest.md front matter uses a YAML alias (*name); settings never need one");
    expect(performance.now() - t0).toBeLessThan(2000);
    const quoted = parseDigest(Buffer.from('---\nread_only: true\nnote: "see *notes* and a*b"\nplain: see *this*\nsaid: \'it\'\'s *x\' # or *y\n---\nbody\n'));
    expect([quoted.unusable, quoted.settings.readOnly]).toEqual([null, true]);
    for (const yaml of ["b: *a", "- *a", "x: [1, *a]", "x: {k: *a}", "? *a\n: 1"]) expect(parseDigest(Buffer.from(`---\na: &a 1\n${yaml}\n---\nbody\n`)).unusable, yaml).toMatch(/uses a YAML alias/);
  });

  it("refuses a patch whose digest starts with aliased front matter without loading it", () => {
    const t0 = performance.now();
    const digest = aliasBomb(2000, 800, 350);
    expect(digest.length).toBeLessThan(DEFAULT_DIGEST_LIMIT);
    const r = parsePatch(JSON.stringify({ digest }), true, DEFAULT_DIGEST_LIMIT);
    expect(r).toEqual({ ok: false, reason: '"digest" would leave digest.md unusable: digest.md front matter uses a YAML alias (*name); settings never need one' });
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it("does not parse a meta.json larger than the runtime ever writes", () => {
    const nested = "[".repeat(1_000_000) + "]".repeat(1_000_000);
    const t0 = performance.now();
    expect(parseMeta(Buffer.from(nested))).toBeNull();
    expect(performance.now() - t0).toBeLessThan(100);
    expect(parseMeta(Buffer.from(JSON.stringify({ generation: 1, last_seq: 2, digest_sha256: "x" })))?.last_seq).toBe(2);
  });
});
