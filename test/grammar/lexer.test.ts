import { describe, expect, it } from "vitest";
import { lexer } from "../../grammar/tokens.ts";
import { parse } from "../../grammar/index.ts";
import { brief, codes, firstStmt, ok } from "./helpers.ts";

function kinds(source: string): string[] {
  return lexer.tokenize(source).tokens.map((t) => `${t.tokenType.name}:${t.image}`);
}

describe("lexer", () => {
  it("tells keywords from identifiers that start with them", () => {
    expect(kinds("in input inputs items it iterate or order not nothing")).toEqual([
      "Kw_in:in",
      "Kw_input:input",
      "Identifier:inputs",
      "Identifier:items",
      "Kw_it:it",
      "Identifier:iterate",
      "Kw_or:or",
      "Identifier:order",
      "Kw_not:not",
      "Identifier:nothing",
    ]);
  });

  it("lexes numbers, operators and punctuation", () => {
    expect(kinds("3 99.99 == != <= >= < > = + - @ ? . , : ( ) [ ] { }").map((k) => k.split(":")[0])).toEqual([
      "Number", "Number", "EqEq", "NotEq", "LtEq", "GtEq", "Lt", "Gt", "Equals", "Plus", "Minus",
      "At", "Question", "Dot", "Comma", "Colon", "LParen", "RParen", "LBracket", "RBracket", "LBrace", "RBrace",
    ]);
  });

  it("keeps '#' inside strings, triple strings and templates, and drops comments", () => {
    expect(kinds('a = "x # y" # gone\nb = """p\n# q\n""" `t # u`')).toEqual([
      "Identifier:a",
      "Equals:=",
      'String:"x # y"',
      "Identifier:b",
      "Equals:=",
      'TripleString:"""p\n# q\n"""',
      "Template:`t # u`",
    ]);
  });

  it("lexes a template with an escaped backtick and newlines as one token", () => {
    expect(kinds("`a \\` b\nc`")).toEqual(["Template:`a \\` b\nc`"]);
  });

  it("decodes JSON escapes in strings", () => {
    const s = firstStmt('x = "a\\"b\\\\c\\/d\\n\\t\\u00e9"\n');
    expect(s.kind === "Assign" && s.value.kind === "String" && s.value.value).toBe('a"b\\c/d\n\té');
  });

  it("reports unknown escapes as E005 at the backslash", () => {
    const r = parse('x = "ok"\ny = "bad \\q here"\n', "t.vvm");
    expect(r.diagnostics.map(brief)).toEqual([
      'E005 2:10 unknown escape \\q in string; allowed: \\\\ \\" \\/ \\b \\f \\n \\r \\t \\uXXXX',
    ]);
    expect(r.program).not.toBeNull();
    expect(codes('x = "\\u12"\n')).toEqual(["E005 1:6"]);
  });

  it("lexes literals of megabytes, with or without escapes (a regular expression overflowed V8's stack)", () => {
    const big = "a".repeat(9_000_000);
    const s = firstStmt(`x = "${big}"\n`);
    expect(s.kind === "Assign" && s.value.kind === "String" && s.value.value.length).toBe(big.length);
    const escapes = "\\n".repeat(1_000_000);
    for (const src of [`x = "${escapes}"\n`, `x = """${escapes}"""\n`, `x = \`${"\\`".repeat(1_000_000)}\`\n`]) {
      expect(parse(src, "t.vvm").diagnostics).toEqual([]);
    }
    // a backslash before the line break still leaves a one-line string open
    expect(codes('x = "a\\\ny = 1\n')).toEqual(["E003 1:5"]);
    expect(kinds('"""a""""')).toEqual(['TripleString:"""a"""', "UnterminatedString:\""]);
  });

  it("reports an unterminated string (E003) at its opening quote", () => {
    expect(codes('x = 1\ny = "abc\nz = 2\n')).toEqual(["E003 2:5"]);
    expect(codes('x = """abc\n\nmore\n')).toEqual(["E003 1:5"]);
    expect(parse('y = "abc\n', "t.vvm").program).toBeNull();
  });

  it("reports an unterminated template (E004) at its opening backtick", () => {
    expect(codes("x = 1\ny = @a `task {x}(x)\nz = 2\n")).toEqual(["E004 2:8"]);
    expect(codes("x = `a \\`")).toEqual(["E004 1:5"]);
  });

  it("reports stray characters as E001 with the character", () => {
    const r = parse("x = 1 $ 2\n", "t.vvm");
    expect(r.diagnostics.map(brief)).toEqual(["E001 1:7 unexpected character '$'"]);
    expect(parse("x = 1\u0000\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:6 unexpected character U+0000"]);
    // what shows as nothing, or as a plain space, is named by its code point
    expect(parse("x = 1 \u200B+ 2\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:7 unexpected character U+200B"]);
    expect(parse("x = 1 +\u00A02\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:8 unexpected character '\u00A0' (U+00A0)"]);
  });

  it("accepts CRLF and CR with the same positions as LF", () => {
    const lf = ok("if x:\n  y = 1\n");
    expect(ok("if x:\r\n  y = 1\r\n").body).toEqual(lf.body);
    expect(ok("if x:\r  y = 1\r").body).toEqual(lf.body);
  });

  it("leaves the byte-order mark to readSource: in the text, U+FEFF is a stray character, shown escaped", () => {
    expect(parse("\uFEFFx = 1\n", "t.vvm").diagnostics.map(brief)).toEqual(["E001 1:1 unexpected character U+FEFF"]);
  });

  it("caps the number of reported lexical errors", () => {
    const r = parse("$".repeat(10) + "\n" + "$\n".repeat(500), "t.vvm");
    expect(r.diagnostics.length).toBe(50);
    expect(r.program).toBeNull();
  });
});
