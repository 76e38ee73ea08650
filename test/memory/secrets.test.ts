import { generateKeyPairSync } from "node:crypto";
import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { activeRules, scanSecrets } from "../../runtime/memory/secrets.ts";

// Samples are assembled at run time so this file itself holds no token-shaped strings.
const rep = (s: string, n: number) => s.repeat(Math.ceil(n / s.length)).slice(0, n);
const alnum = (n: number) => rep("aB3dE5gH7jK9mN2pQ4sT6vW8yZ1", n);
// base64 of a JSON object ending in "fQ" (the closing brace), as 1Password service-account tokens do
function opsToken(): string {
  let email = "agent@example.org";
  const json = () => JSON.stringify({ email, muk: { alg: "A256GCM", k: alnum(43), kty: "oct" }, secretKey: `A3-${alnum(6)}`, srpX: rep("0123456789abcdef", 64) });
  while (json().length % 3 !== 1) email = "x" + email;
  return Buffer.from(json()).toString("base64");
}
const pem = () => generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();

const SAMPLES: Record<string, string> = {
  aws: `aws_secret_access_key = "${rep("wJa1rXUtnFEMIK7MDENGbPxRfiCYzEXAMPLq", 40)}"`,
  gcp: JSON.stringify({ type: "service_account", private_key_id: "abc", private_key: pem() }),
  privatekey: pem(),
  npm: `token npm_${alnum(36)}`,
  basicauth: `see https://deploy:${alnum(12)}@build.example.org/path`,
  slack: `xoxb-${"1234567890"}-${alnum(24)}`,
  sendgrid: `SG.${alnum(22)}.${alnum(43)}`,
  shopify: `shpat_${rep("0123456789abcdef", 32)}`,
  github: `ghp_${alnum(36)}`,
  gitlab: `glpat-${alnum(20)}`,
  grafana: `glsa_${alnum(32)}_${rep("0a1b2c3d", 8)}`,
  openai: `sk-${alnum(20)}T3BlbkFJ${alnum(20)}`,
  anthropic: `sk-ant-api03-${alnum(93)}AA`,
  groq: `gsk_${alnum(52)}`,
  huggingface: `hf_${rep("abcdefghijKLMNOPqrstuvwxyz", 34)}`,
  linear: `lin_api_${alnum(40)}`,
  notion: `ntn_${rep("12345678901", 11)}${alnum(35)}`,
  "1password": `ops_${opsToken()}`,
  "database-connection-string": `postgres://admin:${alnum(16)}@db.internal.example.org:5432/app`,
  "hashicorp-vault": `hvs.${alnum(95)}`,
  vercel: `vcp_${alnum(40)}`,
  databricks: `dapi${rep("0123456789abcdef", 32)}`,
  docker: `dckr_pat_${alnum(27)}`,
  figma: `figd_${alnum(44)}`,
};

describe("secret scanning", () => {
  it("runs every rule of the preset except the comment filter", async () => {
    const ids = (await activeRules()).filter((id) => id.startsWith("@secretlint/"));
    expect(ids).not.toContain("@secretlint/secretlint-rule-filter-comments");
    expect(ids.length).toBeGreaterThanOrEqual(20);
    // the samples table must cover every preset rule (secrets-corpus.test.ts covers our own)
    expect(ids.map((id) => id.replace("@secretlint/secretlint-rule-", "")).sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  it.each(Object.entries(SAMPLES))("finds a %s secret in the digest and in retain", async (name, sample) => {
    const inDigest = await scanSecrets(`## Notes\n- keep this: ${sample}\n`, []);
    const inRetain = await scanSecrets(undefined, ["harmless", `remember ${sample}`]);
    const rule = `@secretlint/secretlint-rule-${name}`;
    if (name === "gcp") {
      // the GCP rule reads whole JSON documents, so the sample must be the entire field
      const whole = await scanSecrets(sample, []);
      expect(whole.map((f) => f.ruleId)).toContain(rule);
      return;
    }
    expect(inDigest.map((f) => f.ruleId)).toContain(rule);
    expect(inDigest.find((f) => f.ruleId === rule)?.field).toBe("digest");
    expect(inRetain.find((f) => f.ruleId === rule)?.field).toBe("retain[1]");
  });

  // the preset's rules for prefixed tokens want no word character after the token; ours take the prefix and length
  it.each(Object.entries(SAMPLES).filter(([name]) => !["gcp", "privatekey", "basicauth", "database-connection-string", "aws"].includes(name)))(
    "finds a %s secret followed by word characters (`…_ci`, `…x`) or in _italics_",
    async (_name, sample) => {
      for (const text of [`the CI uses ${sample}_ci until friday`, `${sample}x`, `_${sample}_`]) {
        expect((await scanSecrets(undefined, [text])).length, text).toBeGreaterThan(0);
      }
    },
  );

  it("cannot be switched off from inside a patch", async () => {
    for (const trick of ["<!-- secretlint-disable -->", "// secretlint-disable-line", "secretlint-disable-next-line"]) {
      const found = await scanSecrets(`${trick}\n${SAMPLES.github} ${trick}`, [`${trick} ${SAMPLES.slack}`]);
      expect(found.map((f) => f.ruleId)).toEqual(expect.arrayContaining(["@secretlint/secretlint-rule-github", "@secretlint/secretlint-rule-slack"]));
    }
  });

  it("passes ordinary memory text", async () => {
    expect(await scanSecrets("## Stable\n- W @Peter prefers short replies.\n- the API lives at https://api.example.org/v2\n", ["O(c=0.9) @Peter likes tables"])).toEqual([]);
  });

  // a model's reply is untrusted: no patch within the limits may make one scan take long (spec/memory.md §8)
  describe("in bounded time", () => {
    const fill = (unit: string, n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
    const timed = async (digest: string | undefined, retain: string[]) => {
      const t0 = performance.now();
      const found = await scanSecrets(digest, retain);
      return { found, ms: performance.now() - t0 };
    };

    it("reads a private key's header lines without backtracking on a run of header words", async () => {
      await scanSecrets("warm", []);
      // every added word doubled the time of the former expression: 60 words would have run for days
      const { found, ms } = await timed(undefined, [("-----BEGIN PRIVATE KEY-----\n" + "Version ".repeat(60)).slice(0, 500)]);
      expect(found).toEqual([]);
      expect(ms).toBeLessThan(1000);
    });

    it("finds a private key with header lines, on separate lines, JSON-escaped or pasted on one line, and not prose after an armour", async () => {
      const body = "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u";
      const pem = `-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\n\n${body}\n-----END RSA PRIVATE KEY-----`;
      for (const text of [pem.slice(0, pem.indexOf("-----END")), pem.replace(/\n/g, " ").slice(0, 200), JSON.stringify(pem).slice(1, 220)]) {
        expect((await scanSecrets(undefined, [text])).map((f) => f.ruleId), text).toContain("vvm/private-key");
      }
      for (const text of [`-----BEGIN PRIVATE KEY----- (paste yours here) then later ${"A".repeat(50)}`, "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----"]) {
        expect(await scanSecrets(undefined, [text]), text).toEqual([]);
      }
    });

    it("stops counting one rule's reports in a scan: thousands of short tokens took secretlint's duplicate filter 6–9 s", async () => {
      const { found, ms } = await timed("é" + fill("xoxb-a-a.\n", 11_999), Array.from({ length: 20 }, () => fill("xoxb-a-a.\n", 500)));
      expect(found.length).toBeGreaterThan(0);
      expect(found.map((f) => f.ruleId)).toContain("@secretlint/secretlint-rule-slack");
      expect(ms).toBeLessThan(2000);
    });
  });

  it("leaves no profiler marks behind (the profiler core uses is off)", async () => {
    performance.clearMarks();
    for (let i = 0; i < 5; i++) await scanSecrets(`text ${i}`, ["x"]);
    expect(performance.getEntriesByType("mark").filter((m) => m.name.includes("@core"))).toEqual([]);
  });
});
