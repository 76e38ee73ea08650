// Module loading: recursion relative to the importing file, one parse per canonical path, cycles,
// missing files and exports, and files that cannot be programs (binary, not UTF-8, too large).
import { closeSync, openSync, realpathSync, symlinkSync, ftruncateSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { writeProgram, type TmpProgram } from "../support/program.ts";
import { codesAt } from "./tmp-program.ts";

const parsed: string[] = [];
vi.mock("../../grammar/index.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../grammar/index.ts")>();
  return {
    ...real,
    parse: (source: string, file: string) => {
      parsed.push(file);
      return real.parse(source, file);
    },
  };
});

const { checkProgram } = await import("../../src/check.ts");
const { MAX_SOURCE_BYTES } = await import("../../src/resolve/source.ts");

let prog: TmpProgram | null = null;
beforeEach(() => {
  parsed.length = 0;
});
afterEach(() => {
  prog?.cleanup();
  prog = null;
});

const lib = (name: string, imports = "") => `${imports}${name} = "${name}"\nexport ${name}\n`;

describe("module loading", () => {
  it("parses each module once, dependencies first, and maps every import to its canonical path", async () => {
    prog = writeProgram({
      "main.vvm": `from "./b.vvm" import b\nfrom "./sub/c.vvm" import c\nfrom "./b.vvm" import b as b2\nx = [b, c, b2]\nexport x\n`,
      "b.vvm": lib("b", `from "./d.vvm" import d\nuse_d = d\nexport use_d\n`),
      "sub/c.vvm": lib("c", `from "../d.vvm" import d\nuse_d = d\nexport use_d\n`),
      "d.vvm": lib("d"),
    });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics).toEqual([]);
    expect(parsed.map((p) => path.relative(prog!.dir, p)).sort()).toEqual(["b.vvm", "d.vvm", "main.vvm", "sub/c.vvm"]);
    const order = [...result.modules.keys()].map((p) => path.relative(prog!.dir, p));
    expect(order).toEqual(["d.vvm", "b.vvm", "sub/c.vvm", "main.vvm"]);
    const main = result.modules.get(result.entry)!;
    expect([...main.imports.values()].map((p) => path.relative(prog!.dir, p))).toEqual(["b.vvm", "sub/c.vvm", "b.vvm"]);
    expect(result.entry).toBe(prog.file("main.vvm"));
  });

  it("treats a module reached through a symlink as the same module (realpath identity)", async () => {
    prog = writeProgram({
      "main.vvm": `from "./lib/d.vvm" import d\nfrom "./alias/d.vvm" import d as again\nx = [d, again]\nexport x\n`,
      "lib/d.vvm": lib("d"),
    });
    symlinkSync(prog.file("lib"), prog.file("alias"));
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics).toEqual([]);
    expect(result.modules.size).toBe(2);
    expect(parsed).toHaveLength(2);
  });

  it("reports an import cycle once, at the import that closes it, naming the whole cycle", async () => {
    prog = writeProgram({
      "a.vvm": `from "./b.vvm" import b\na = b\nexport a\n`,
      "b.vvm": `from "./c.vvm" import c\nb = c\nexport b\n`,
      "c.vvm": `from "./a.vvm" import a\nc = a\nexport c\n`,
    });
    const result = await checkProgram(prog.file("a.vvm"));
    expect(result.diagnostics.map((d) => [path.basename(d.path), d.code, d.span.line, d.span.col, d.message])).toEqual([
      ["c.vvm", "E090", 1, 6, "import cycle: a.vvm → b.vvm → c.vvm → a.vvm"],
    ]);
    expect(parsed).toHaveLength(3);
  });

  it("names every module of many long cycles, each cycle whole", async () => {
    // m0 → m1 → … → m999, each also importing main.vvm: 1,000 cycles of up to 1,001 modules. (Each module's name
    // is worked out once, loader.ts `show`: found again for every cycle, 4,000 modules took 15 s. A speed, so
    // not timed here.)
    const n = 1_000;
    const files: Record<string, string> = { "main.vvm": `from "./m0.vvm" import x\nexport x\n` };
    for (let i = 0; i < n; i++) {
      files[`m${i}.vvm`] = `from "./main.vvm" import x as y\n${i + 1 < n ? `from "./m${i + 1}.vvm" import x\n` : "x = 1\n"}export x\n`;
    }
    prog = writeProgram(files);
    const result = await checkProgram(prog.file("main.vvm"));
    const cycles = result.diagnostics.filter((d) => d.message.startsWith("import cycle: "));
    expect(cycles).toHaveLength(n);
    const longest = cycles.find((d) => d.path === prog!.file(`m${n - 1}.vvm`))!;
    expect(longest.message).toBe(`import cycle: main.vvm → ${Array.from({ length: n }, (_, i) => `m${i}.vvm`).join(" → ")} → main.vvm`);
  });

  it("reports a module importing itself", async () => {
    prog = writeProgram({ "a.vvm": `from "./a.vvm" import a\nexport a\n` });
    const result = await checkProgram(prog.file("a.vvm"));
    expect(result.diagnostics.map((d) => d.message)).toEqual(["import cycle: a.vvm → a.vvm"]);
  });

  it("reports a missing file with the resolved path, and keeps checking the rest", async () => {
    prog = writeProgram({ "main.vvm": `from "./nope.vvm" import x\nfrom "./d.vvm" import d\nexport d\nexport x\n`, "d.vvm": lib("d") });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(codesAt(result.diagnostics)).toEqual(["E090 1:6"]);
    expect(result.diagnostics[0]!.message).toBe(`module not found: ${prog.file("nope.vvm")}`);
    expect(result.modules.size).toBe(2);
  });

  it("reports an export the module does not have, but not when the module itself failed to parse", async () => {
    prog = writeProgram({
      "main.vvm": `from "./d.vvm" import missing\nfrom "./broken.vvm" import anything\nexport missing\nexport anything\n`,
      "d.vvm": lib("d"),
      "broken.vvm": `x = (\n`,
    });
    const result = await checkProgram(prog.file("main.vvm"));
    // (Where the parser places its own error is the parser's business; only its code matters here.)
    expect(result.diagnostics.map((d) => (d.code === "E001" ? `${path.basename(d.path)} E001` : `${path.basename(d.path)} ${d.code} ${d.span.line}:${d.span.col}`))).toEqual([
      "broken.vvm E001",
      "main.vvm E090 1:23",
    ]);
    // The broken module's text is kept so its error can show the source line.
    expect(result.sources?.get(prog.file("broken.vvm"))).toBe("x = (\n");
  });

  it("finds a module's exports once however often it is imported", async () => {
    // each import scanned the whole module for its exports: 8,000 imports of a module of 8,000 exports took 9 s
    const n = 8_000;
    const names = Array.from({ length: n }, (_, i) => `v${i}`);
    prog = writeProgram({
      "main.vvm": names.map((v) => `from "./m.vvm" import ${v === "v0" ? "missing" : v}\n`).join("") + `export pack(${names.slice(1).join(", ")})\n`,
      "m.vvm": names.map((v) => `${v} = 1\nexport ${v}\n`).join(""),
    });
    // (its speed at this size and half of it: bench/check-scaling.bench.ts)
    const result = await checkProgram(prog.file("main.vvm"));
    expect(codesAt(result.diagnostics, prog.file("main.vvm"))).toEqual(["E090 1:23"]);
  });

  it("follows an agent re-exported through a long chain of modules without recursing", async () => {
    // following the chain recursed once per module and began again at each module: 8,000 modules overflowed the
    // stack, and the modules whose check overflowed were each reported as "program is nested too deeply to check"
    const n = 8_000;
    const files: Record<string, string> = {
      "main.vvm": `from "./m0.vvm" import @w\ndef f(a):\n  return @w \`t\`(a)\nx = pmap([1], f)\nexport x\n`,
    };
    for (let i = 0; i < n; i++) {
      files[`m${i}.vvm`] =
        i + 1 < n ? `from "./m${i + 1}.vvm" import @w\nexport @w\n` : `agent w(model="haiku", memory={ scope: "project", key: "k" })\nexport @w\n`;
    }
    prog = writeProgram(files);
    const result = await checkProgram(prog.file("main.vvm"));
    // the W040 needs the declaration at the end of the chain
    expect(result.diagnostics.map((d) => `${path.basename(d.path)} ${d.code} ${d.span.line}:${d.span.col}`)).toEqual(["main.vvm W040 3:10"]);
  });

  it("accepts exports written as pack(...) (dialect): positional names and keywords are exported names", async () => {
    prog = writeProgram({
      "main.vvm": `from "./m.vvm" import a\nfrom "./m.vvm" import renamed\nx = [a, renamed]\nexport x\n`,
      "m.vvm": `a = 1\nb = 2\nexport pack(a, renamed=b)\n`,
    });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics).toEqual([]);
  });

  it("refuses a module path that is not relative", async () => {
    prog = writeProgram({ "main.vvm": `from "d.vvm" import d\nexport d\n`, "d.vvm": lib("d") });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => d.message)).toEqual([`module path "d.vvm" must start with ./ or ../ (relative to this file) or be an absolute path`]);
  });

  it("reports an import of a directory or a binary file at the import", async () => {
    prog = writeProgram({
      "main.vvm": `from "./dir" import x\nfrom "./bin.vvm" import y\nexport x\nexport y\n`,
      "dir/keep.vvm": "",
      "bin.vvm": new Uint8Array([0x61, 0x20, 0x3d, 0x00, 0x01]),
    });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => `${d.code} ${d.span.line}:${d.span.col} ${d.message}`)).toEqual([
      "E090 1:6 cannot load module ./dir: not a file",
      "E090 2:6 cannot load module ./bin.vvm: not a text file: a NUL byte (binary file?) at line 1, column 4",
    ]);
  });

  it("an entry .vvm that a link takes to another kind of file is never parsed, so none of its lines is shown", async () => {
    prog = writeProgram({ creds: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n" });
    symlinkSync(prog.file("creds"), prog.file("main.vvm"));
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => `${d.code} ${d.span.line}:${d.span.col} ${d.message}`)).toEqual([
      `E001 1:1 cannot check main.vvm: it leads through a symbolic link to ${realpathSync(prog.file("creds"))}, not a .vvm file`,
    ]);
  });

  it("a module is a .vvm file, links followed: another file is never parsed, so none of its lines is shown", async () => {
    prog = writeProgram({
      "app/main.vvm": `from "../creds" import x\nfrom "./link.vvm" import y\nfrom "./ok.vvm" import z\nexport x\nexport y\nexport z\n`,
      "app/ok.vvm": lib("z"),
      creds: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n",
    });
    symlinkSync(prog.file("creds"), prog.file("app/link.vvm"));
    const result = await checkProgram(prog.file("app/main.vvm"));
    expect(result.diagnostics.map((d) => `${d.code} ${d.span.line}:${d.span.col} ${d.message}`)).toEqual([
      "E090 1:6 cannot load module ../creds: not a .vvm file",
      "E090 2:6 cannot load module ./link.vvm: not a .vvm file (it leads to ../creds)",
    ]);
  });
});

describe("files that cannot be programs", () => {
  it("a binary entry file is an E001 at the first bad byte, never an exception", async () => {
    prog = writeProgram({ "main.vvm": new Uint8Array([0x78, 0x20, 0x3d, 0x20, 0x31, 0x0a, 0x79, 0x20, 0xff, 0xfe]) });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(codesAt(result.diagnostics)).toEqual(["E001 2:3"]);
    expect(result.diagnostics[0]!.message).toBe("cannot check main.vvm: not a text file: byte 0xff that is not UTF-8 at line 2, column 3");
    expect(result.modules.size).toBe(0);
  });

  it("columns count characters, not bytes, before the bad byte", async () => {
    const text = Buffer.from("s = \"é€\" ", "utf8");
    prog = writeProgram({ "main.vvm": Buffer.concat([text, Buffer.from([0xc3, 0x28])]) });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(codesAt(result.diagnostics)).toEqual(["E001 1:10"]);
  });

  it("lines end at LF, CRLF or a lone CR, as the parser counts them", async () => {
    for (const end of ["\n", "\r\n", "\r"]) {
      const text = Buffer.from(["a = 1", "b = 2", 'c = "'].join(end), "utf8");
      prog = writeProgram({ "main.vvm": Buffer.concat([text, Buffer.from([0xe9, 0x22]), Buffer.from(end)]) });
      const result = await checkProgram(prog.file("main.vvm"));
      expect(codesAt(result.diagnostics)).toEqual(["E001 3:6"]);
      expect(result.diagnostics[0]!.message).toMatch(/at line 3, column 6$/);
      prog.cleanup();
      prog = null;
    }
  });

  it("overlong encodings and surrogates are not UTF-8", async () => {
    prog = writeProgram({ "a.vvm": new Uint8Array([0xc0, 0xaf]), "b.vvm": new Uint8Array([0xed, 0xa0, 0x80]) });
    for (const f of ["a.vvm", "b.vvm"]) {
      const result = await checkProgram(prog.file(f));
      expect(codesAt(result.diagnostics)).toEqual(["E001 1:1"]);
    }
  });

  it(`a file over the size limit (${MAX_SOURCE_BYTES / 1024 / 1024} MiB) is refused before reading`, async () => {
    prog = writeProgram({ "main.vvm": "" });
    const fd = openSync(prog.file("main.vvm"), "r+");
    ftruncateSync(fd, MAX_SOURCE_BYTES + 1); // sparse: costs no disk
    closeSync(fd);
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics.map((d) => `${d.code} ${d.message}`)).toEqual([
      `E001 cannot check main.vvm: file is 16.0 MiB, over the 16 MiB limit for programs`,
    ]);
    expect(parsed).toEqual([]);
  });

  it("a missing entry file is a diagnostic, not an exception", async () => {
    prog = writeProgram({});
    const result = await checkProgram(prog.file("gone.vvm"));
    expect(result.diagnostics.map((d) => `${d.code} ${d.message}`)).toEqual(["E001 cannot check gone.vvm: no such file"]);
  });

  it("a byte-order mark is skipped", async () => {
    prog = writeProgram({ "main.vvm": "\ufeffx = 1\nexport x\n" });
    const result = await checkProgram(prog.file("main.vvm"));
    expect(result.diagnostics).toEqual([]);
  });

  it("only one byte-order mark is skipped: a second is E001, and columns after the first are the parser's", async () => {
    prog = writeProgram({ "main.vvm": "\ufeff\ufeffexport 1 + 2\n", "eq.vvm": "\ufeffx = = 1\n" });
    const doubled = await checkProgram(prog.file("main.vvm"));
    expect(doubled.diagnostics.map((d) => `${d.code} ${d.span.line}:${d.span.col} ${d.message}`)).toEqual([
      "E001 1:1 unexpected character U+FEFF",
    ]);
    expect(codesAt((await checkProgram(prog.file("eq.vvm"))).diagnostics)).toEqual(["E001 1:5"]);
    prog.cleanup();
    prog = writeProgram({ "main.vvm": Buffer.from([0xef, 0xbb, 0xbf, 0x78, 0x20, 0xff]) });
    expect(codesAt((await checkProgram(prog.file("main.vvm"))).diagnostics)).toEqual(["E001 1:3"]);
  });
});
