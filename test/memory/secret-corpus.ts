// The secret and clean corpora of the secret-scan tests and bench (spec/memory.md §8). Every secret is
// made at run time (keys with node:crypto, tokens from a seeded generator, prefixes glued on here), so
// this file holds no token-shaped string for a repository scanner to flag.
import { createHash, createHmac, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";

export interface SecretSample {
  name: string;
  digest?: string;
  retain: string[];
}

// a seeded generator (mulberry32): the same tokens every run, so a miss can be reproduced
function generator(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const letters = (from: number) => String.fromCharCode(...Array.from({ length: 26 }, (_, i) => from + i));
const UPPER = letters(65);
const LOWER = letters(97);
const DIGITS = "0123456789";
const HEX = DIGITS + "abcdef";
const ALNUM = UPPER + LOWER + DIGITS;
const URLSAFE = ALNUM + "-_";
const BASE64 = ALNUM + "+/";

function tokens(seed: number) {
  const next = generator(seed);
  return (alphabet: string, n: number) => Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
}

const b64url = (s: string | Buffer) => Buffer.from(s).toString("base64url");
const wrap = (s: string, width: number, indent = "") => (s.match(new RegExp(`.{1,${width}}`, "g")) as string[]).join(`\n${indent}`);
const armour = (label: string, body: Buffer, width = 64) => `-----BEGIN ${label}-----\n${wrap(body.toString("base64"), width)}\n-----END ${label}-----\n`;
const pem = (key: KeyObject, type: "pkcs1" | "pkcs8" | "sec1", cipher?: string) =>
  key.export(cipher ? { type, format: "pem", cipher, passphrase: "correct horse" } : { type, format: "pem" }).toString();

// SSH wire format, for OpenSSH and PuTTY key files
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const sshString = (b: Buffer | string) => Buffer.concat([u32(Buffer.byteLength(b)), Buffer.from(b)]);
const mpint = (b64: string) => {
  const b = Buffer.from(b64, "base64url");
  return sshString(b[0] & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
};

function openssh(pub: Buffer, priv: Buffer): string {
  const check = randomBytes(4);
  let section = Buffer.concat([check, check, priv, sshString("agent@build-host")]);
  for (let i = 1; section.length % 8 !== 0; i++) section = Buffer.concat([section, Buffer.from([i])]);
  const body = Buffer.concat([Buffer.from("openssh-key-v1\0"), sshString("none"), sshString("none"), sshString(""), u32(1), sshString(pub), sshString(section)]);
  return armour("OPENSSH PRIVATE KEY", body, 70);
}

function opensshEd25519(key: KeyObject): string {
  const jwk = key.export({ format: "jwk" });
  const [seed, pub] = [Buffer.from(jwk.d as string, "base64url"), Buffer.from(jwk.x as string, "base64url")];
  const pubBlob = Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
  return openssh(pubBlob, Buffer.concat([sshString("ssh-ed25519"), sshString(pub), sshString(Buffer.concat([seed, pub]))]));
}

function opensshRsa(key: KeyObject): string {
  const j = key.export({ format: "jwk" }) as Record<string, string>;
  const pubBlob = Buffer.concat([sshString("ssh-rsa"), mpint(j.e), mpint(j.n)]);
  return openssh(pubBlob, Buffer.concat([sshString("ssh-rsa"), mpint(j.n), mpint(j.e), mpint(j.d), mpint(j.qi), mpint(j.p), mpint(j.q)]));
}

/** PuTTY's .ppk (version 3, unencrypted), MAC and all. */
function putty(key: KeyObject): string {
  const jwk = key.export({ format: "jwk" });
  const pub = Buffer.concat([sshString("ssh-ed25519"), sshString(Buffer.from(jwk.x as string, "base64url"))]);
  const priv = sshString(Buffer.from(jwk.d as string, "base64url"));
  const comment = "eddsa-key-20240611";
  const mac = createHmac("sha256", Buffer.alloc(0))
    .update(Buffer.concat([sshString("ssh-ed25519"), sshString("none"), sshString(comment), sshString(pub), sshString(priv)]))
    .digest("hex");
  const lines = (b: Buffer) => wrap(b.toString("base64"), 64).split("\n");
  return [
    "PuTTY-User-Key-File-3: ssh-ed25519",
    "Encryption: none",
    `Comment: ${comment}`,
    `Public-Lines: ${lines(pub).length}`,
    ...lines(pub),
    `Private-Lines: ${lines(priv).length}`,
    ...lines(priv),
    `Private-MAC: ${mac}`,
  ].join("\n");
}

function jwt(payload: object, key: Buffer): string {
  const head = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" })) + "." + b64url(JSON.stringify(payload));
  return head + "." + createHmac("sha256", key).update(head).digest("base64url");
}

// a Latin letter → its Cyrillic twin (escaped, so this file stays ASCII)
const CYRILLIC: Record<string, string> = { a: "\u0430", e: "\u0435", o: "\u043e", p: "\u0440", c: "\u0441", x: "\u0445", A: "\u0410", B: "\u0412", E: "\u0415", K: "\u041a", M: "\u041c", H: "\u041d", O: "\u041e", P: "\u0420", C: "\u0421", T: "\u0422" };
/** The first letter at or after `from` that has a Cyrillic twin, swapped for it. */
function homoglyph(s: string, from = 0): string {
  for (let i = from; i < s.length; i++) if (CYRILLIC[s[i]]) return s.slice(0, i) + CYRILLIC[s[i]] + s.slice(i + 1);
  throw new Error("no letter to swap");
}
const insert = (s: string, at: number, ch: string) => s.slice(0, at) + ch + s.slice(at);
const fullwidth = (s: string) => [...s].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join("");
// mathematical bold small letters (U+1D41A…) and digits (U+1D7CE…)
const mathBold = (s: string) => [...s].map((c) => (/[a-z]/.test(c) ? String.fromCodePoint(0x1d41a + c.charCodeAt(0) - 97) : /\d/.test(c) ? String.fromCodePoint(0x1d7ce + Number(c)) : c)).join("");

export function secretCorpus(): SecretSample[] {
  const t = tokens(20240611);
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
  const ed = generateKeyPairSync("ed25519").privateKey;
  // what `openssl ecparam -genkey -name prime256v1` prints: the curve's OID block first
  const ecParams = armour("EC PARAMETERS", Buffer.from([0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]));
  const kubeconfig = (key: string) =>
    `users:\n- name: admin\n  user:\n    client-certificate-data: ${Buffer.from("-----BEGIN CERTIFICATE-----\n" + t(BASE64, 64) + "\n-----END CERTIFICATE-----\n").toString("base64")}\n    client-key-data: ${Buffer.from(key).toString("base64")}\n`;
  const pgpBody = Buffer.concat([Buffer.from([0xc5, 0x58, 0x04]), randomBytes(120)]);
  // ssh.com's format: magic number, length, key type, cipher, then the key material
  const ssh2Body = Buffer.concat([Buffer.from([0x3f, 0x6f, 0xf9, 0xeb]), u32(400), sshString("if-modn{sign{rsa-pkcs1-sha1},encrypt{rsa-pkcs1v2-oaep}}"), sshString("none"), randomBytes(360)]);
  const ssh2 = `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "rsa-key-20240611"\n${wrap(ssh2Body.toString("base64"), 70)}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----\n`;

  const keys: Record<string, string> = {
    "ec-p256-openssl-ecparam": ecParams + pem(ec, "sec1"),
    "ec-p384-sec1": pem(generateKeyPairSync("ec", { namedCurve: "secp384r1" }).privateKey, "sec1"),
    "ec-pkcs8": pem(ec, "pkcs8"),
    "ec-encrypted-pkcs8": pem(ec, "pkcs8", "aes-256-cbc"),
    "ed25519-pkcs8": pem(ed, "pkcs8"),
    "ed448-pkcs8": pem(generateKeyPairSync("ed448").privateKey, "pkcs8"),
    "x25519-pkcs8": pem(generateKeyPairSync("x25519").privateKey, "pkcs8"),
    "rsa-pkcs1": pem(rsa, "pkcs1"),
    "rsa-pkcs8": pem(rsa, "pkcs8"),
    "rsa-encrypted-pkcs8": pem(rsa, "pkcs8", "aes-256-cbc"),
    "rsa-encrypted-pkcs1-legacy": pem(rsa, "pkcs1", "aes-128-cbc"),
    "ed25519-encrypted-pkcs8": pem(ed, "pkcs8", "aes-256-cbc"),
    "dsa-pkcs8": pem(generateKeyPairSync("dsa", { modulusLength: 1024, divisorLength: 160 }).privateKey, "pkcs8"),
    "openssh-ed25519": opensshEd25519(ed),
    "openssh-rsa": opensshRsa(rsa),
    "putty-ppk-v3": putty(ed),
    "ssh2-private-key": ssh2,
    "pgp-private-key-block": armour("PGP PRIVATE KEY BLOCK", pgpBody).replace("-----\n", "-----\nComment: exported for backup\n\n"),
    "kubeconfig-client-key-data": kubeconfig(pem(ec, "sec1")),
    "gcp-service-account-json": JSON.stringify({ type: "service_account", project_id: "demo", private_key_id: t(HEX, 40), private_key: pem(rsa, "pkcs8"), client_email: "ci@demo.iam.gserviceaccount.com" }, null, 2),
    "private-key-in-json-string": JSON.stringify({ note: "deploy key", key: pem(ed, "pkcs8") }),
    "jwk-private-key": JSON.stringify(ec.export({ format: "jwk" })),
  };

  const ghp = `ghp_${t(ALNUM, 36)}`;
  const stripe = `sk_live_${t(ALNUM, 99)}`;
  const google = `AIza${t(URLSAFE, 35)}`;
  const anthropic = `sk-ant-api03-${t(URLSAFE, 93)}AA`;
  const slack = `xoxb-${t(DIGITS, 12)}-${t(DIGITS, 13)}-${t(ALNUM, 24)}`;
  const projKey = `sk-proj-${t(URLSAFE, 124)}`;
  const token = jwt({ sub: "svc-deploy", iat: 1718000000, scope: "admin" }, randomBytes(32));
  const awsId = `AKIA${t(UPPER + DIGITS, 16)}`;
  const awsSecret = t(BASE64, 40);

  const tokenShapes: Record<string, string> = {
    "stripe-secret-live": stripe,
    "stripe-restricted-live": `rk_live_${t(ALNUM, 99)}`,
    "stripe-secret-test": `sk_test_${t(ALNUM, 24)}`,
    "stripe-webhook-secret": `whsec_${t(ALNUM, 32)}`,
    "google-api-key": google,
    "google-oauth-client-secret": `GOCSPX-${t(URLSAFE, 28)}`,
    "google-oauth-access-token": `ya29.${t(URLSAFE, 150)}`,
    jwt: token,
    "anthropic-admin": `sk-ant-admin01-${t(URLSAFE, 93)}AA`,
    "anthropic-api": anthropic,
    "anthropic-oauth": `sk-ant-oat01-${t(URLSAFE, 93)}AA`,
    "openai-legacy-48": `sk-${t(ALNUM, 48)}`,
    "openai-project": projKey,
    "openai-project-T3BlbkFJ": `sk-proj-${t(URLSAFE, 74)}T3BlbkFJ${t(URLSAFE, 74)}`,
    "openai-service-account": `sk-svcacct-${t(URLSAFE, 124)}`,
    "deepseek-style-sk-hex": `sk-${t(HEX, 32)}`,
    "npmrc-authToken-legacy-uuid": `//registry.npmjs.org/:_authToken=${[8, 4, 4, 4, 12].map((n) => t(HEX, n)).join("-")}`,
    "npmrc-authToken-npm": `//registry.npmjs.org/:_authToken=npm_${t(ALNUM, 36)}`,
    "npmrc-auth-basic": `_auth=${Buffer.from(`ci-bot:${t(ALNUM, 20)}`).toString("base64")}`,
    "twilio-sid-and-auth-token": `curl -u AC${t(HEX, 32)}:${t(HEX, 32)} https://api.twilio.com/2010-04-01/Accounts.json`,
    "twilio-api-key": `TWILIO_API_KEY=SK${t(HEX, 32)}`,
    "twilio-auth-token-env": `TWILIO_AUTH_TOKEN=${t(HEX, 32)}`,
    "azure-storage-connection-string": `DefaultEndpointsProtocol=https;AccountName=vvmdata;AccountKey=${t(BASE64, 86)}==;EndpointSuffix=core.windows.net`,
    "azure-service-bus-connection-string": `Endpoint=sb://vvm.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${t(BASE64, 43)}=`,
    "azure-sas-url": `https://vvmdata.blob.core.windows.net/logs?sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2025-01-01T00:00:00Z&sig=${encodeURIComponent(t(BASE64, 43) + "=")}`,
    "azure-ad-client-secret": `${t(ALNUM, 3)}8Q~${t(URLSAFE + "~.", 34)}`,
    "labelled-password": `password=${t(ALNUM + "!@#%^*", 18)}`,
    "labelled-api-key-yaml": `api_key: ${t(ALNUM, 32)}`,
    "labelled-json-client-secret": JSON.stringify({ client_id: "vvm-ci", client_secret: t(URLSAFE, 40) }),
    "labelled-env-db-password": `DB_PASSWORD=${t(ALNUM, 24)}`,
    "labelled-cloudflare-api-token": `CLOUDFLARE_API_TOKEN=${t(URLSAFE, 40)}`,
    "labelled-datadog-keys": `DD_API_KEY=${t(HEX, 32)}\nDD_APP_KEY=${t(HEX, 40)}`,
    "labelled-heroku-api-key-uuid": `HEROKU_API_KEY=${[8, 4, 4, 4, 12].map((n) => t(HEX, n)).join("-")}`,
    "labelled-github-oauth-hex": `GITHUB_TOKEN="${t(HEX, 40)}"`,
    "labelled-cli-flag": `mysql -u root --password=${t(ALNUM, 16)} app`,
    "docker-config-auth": JSON.stringify({ auths: { "registry.example.org": { auth: Buffer.from(`ci:${t(ALNUM, 24)}`).toString("base64") } } }),
    "aws-id-and-secret-unlabelled": `${awsId} ${awsSecret}`,
    "aws-secret-labelled": `aws_secret_access_key = ${awsSecret}`,
    "aws-session-key-id": `ASIA${t(UPPER + DIGITS, 16)}`,
    "slack-bot-token": slack,
    "slack-webhook": `https://hooks.slack.com/services/T${t(UPPER + DIGITS, 10)}/B${t(UPPER + DIGITS, 10)}/${t(ALNUM, 24)}`,
    "slack-workflow-webhook": `https://hooks.slack.com/workflows/T${t(UPPER + DIGITS, 10)}/A${t(UPPER + DIGITS, 10)}/${t(DIGITS, 18)}/${t(ALNUM, 24)}`,
    "discord-bot-token": `${"MTA" + t(ALNUM, 21)}.${t(URLSAFE, 6)}.${t(URLSAFE, 38)}`,
    "discord-webhook": `https://discord.com/api/webhooks/${t(DIGITS, 19)}/${t(URLSAFE, 68)}`,
    "telegram-bot-token": `${t(DIGITS, 10)}:AA${t(URLSAFE, 33)}`,
    "mailgun-key": `key-${t(HEX, 32)}`,
    "mailchimp-key": `${t(HEX, 32)}-us${t(DIGITS, 2)}`,
    "square-access-token": `EAAA${t(URLSAFE, 60)}`,
    "square-oauth-secret": `sq0csp-${t(URLSAFE, 43)}`,
    "pypi-token": `pypi-AgEIcHlwaS5vcmc${t(URLSAFE, 70)}`,
    "digitalocean-token": `dop_v1_${t(HEX, 64)}`,
    "heroku-token": `HRKU-AA${t(URLSAFE, 58)}`,
    "cloudflare-origin-ca-key": `v1.0-${t(HEX, 24)}-${t(HEX, 146)}`,
    "sentry-dsn-with-secret": `https://${t(HEX, 32)}:${t(HEX, 32)}@o${t(DIGITS, 6)}.ingest.sentry.io/${t(DIGITS, 7)}`,
    "sentry-user-token": `sntryu_${t(HEX, 64)}`,
    "authorization-bearer-opaque": `Authorization: Bearer ${t(URLSAFE + ".~", 64)}`,
    "authorization-basic": `curl -H "Authorization: Basic ${Buffer.from(`admin:${t(ALNUM, 16)}`).toString("base64")}" https://ci.example.org`,
    "bearer-in-prose": `call the API with Bearer ${t(ALNUM, 40)} until Friday`,
    "github-classic-pat": ghp,
    "github-fine-grained-pat": `github_pat_${t(ALNUM, 22)}_${t(ALNUM, 59)}`,
    "gitlab-pat": `glpat-${t(URLSAFE, 20)}`,
    "gitlab-runner-token": `glrt-${t(URLSAFE, 20)}`,
    "postgres-url-password": `postgres://app:${t(ALNUM, 20)}@db.internal:5432/app`,
    "redis-url-password": `redis://:${t(ALNUM, 24)}@cache.internal:6379/0`,
    "amqp-url-password": `amqps://worker:${t(ALNUM, 18)}@mq.internal/vhost`,
    "netrc-password": `machine api.example.org login deploy password ${t(ALNUM, 20)}`,
    "hashicorp-vault-token": `hvs.${t(URLSAFE, 95)}`,
    "huggingface-token": `hf_${t(UPPER + LOWER, 34)}`,
    "npm-token": `npm_${t(ALNUM, 36)}`,
    "sendgrid-key": `SG.${t(URLSAFE, 22)}.${t(URLSAFE, 43)}`,
    "age-secret-key": `AGE-SECRET-KEY-1${t("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)}`,
    "atlassian-api-token": `ATATT3xFfGF0${t(URLSAFE, 170)}=${t(HEX.toUpperCase(), 8)}`,
    "postman-key": `PMAK-${t(HEX, 24)}-${t(HEX, 34)}`,
    "newrelic-user-key": `NRAK-${t(UPPER + DIGITS, 27)}`,
    "doppler-token": `dp.pt.${t(ALNUM, 43)}`,
    "supabase-token": `sbp_${t(HEX, 40)}`,
    "pulumi-token": `pul-${t(HEX, 40)}`,
    "terraform-cloud-token": `${t(ALNUM, 14)}.atlasv1.${t(URLSAFE, 67)}`,
    "mapbox-secret-token": `sk.${b64url(JSON.stringify({ u: "vvm", a: t(ALNUM, 25) }))}.${t(URLSAFE, 22)}`,
  };

  const samples: SecretSample[] = [];
  for (const [name, text] of Object.entries(keys)) samples.push({ name: `key/${name}`, digest: `## Deploy\n${text}\n`, retain: [] });
  Object.entries(tokenShapes).forEach(([name, text], i) =>
    // alternate between the digest and a retain item
    samples.push(i % 2 ? { name: `token/${name}`, digest: `## Notes\n- keep this: ${text}\n`, retain: [] } : { name: `token/${name}`, retain: ["O(c=0.9) harmless", `remember ${text}`] }),
  );

  const evasions: Record<string, { digest?: string; retain?: string[] }> = {
    "zero-width-space": { retain: [insert(ghp, 10, "\u200b")] },
    "zero-width-joiner": { retain: [insert(stripe, 20, "\u200d")] },
    "soft-hyphen": { retain: [insert(google, 12, "\u00ad")] },
    "bidi-override": { retain: [insert(anthropic, 30, "\u202e") + "\u202c"] },
    "word-joiner": { retain: [`token ${insert(slack, 8, "\u2060")}`] },
    "cyrillic-prefix": { retain: [homoglyph(ghp)] },
    "cyrillic-body": { retain: [homoglyph(stripe, 12)] },
    "greek-capital": { retain: [`key ${"\u0391" + google.slice(1)}`] },
    fullwidth: { retain: [fullwidth(ghp)] },
    "math-bold": { retain: [mathBold(stripe.slice(0, 8)) + stripe.slice(8)] },
    "combining-mark": { retain: [insert(ghp, 14, "\u0301")] },
    "line-wrap": { digest: `## Keys\n${wrap(ghp, 20)}\n` },
    "line-wrap-indented": { digest: `- stripe:\n    ${wrap(stripe, 16, "    ")}\n` },
    "line-wrap-quoted": { digest: `> ${wrap(token, 40, "> ")}\n` },
    "zero-width-and-wrap": { digest: wrap(insert(projKey, 40, "\u200b"), 50) },
    base64: { retain: [`note ${Buffer.from(ghp).toString("base64")}`] },
    "base64-of-assignment": { retain: [Buffer.from(`SLACK_BOT_TOKEN=${slack}`).toString("base64")] },
    "base64url": { retain: [b64url(`stripe ${stripe}`)] },
    "base64-twice": { retain: [Buffer.from(Buffer.from(ghp).toString("base64")).toString("base64")] },
    hex: { retain: [Buffer.from(anthropic).toString("hex").slice(0, 400)] },
    "hex-uppercase": { retain: [Buffer.from(google).toString("hex").toUpperCase()] },
    "split-two-retain": { retain: [ghp.slice(0, 18), ghp.slice(18)] },
    "split-at-prefix": { retain: ["sk_live_", stripe.slice(8, 200)] },
    "split-digest-and-retain": { digest: `## Notes\nthe key is ${google.slice(0, 20)}`, retain: [google.slice(20)] },
    "split-three-retain": { retain: [projKey.slice(0, 30), projKey.slice(30, 90), projKey.slice(90)] },
    "split-aws-pair": { retain: [`id ${awsId.slice(0, 10)}`, `${awsId.slice(10)} ${awsSecret}`] },
    "inside-json": { retain: [JSON.stringify({ note: "rotate later", value: ghp })] },
    "inside-code-block": { digest: "## Setup\n```bash\nexport STRIPE_KEY=" + stripe + "\n```\n" },
    "in-url-query": { retain: [`https://maps.example.org/api?key=${google}&q=Berlin`] },
    "in-url-userinfo": { retain: [`git remote add origin https://x-access-token:${ghp}@github.com/org/repo.git`] },
  };
  for (const [name, sample] of Object.entries(evasions)) samples.push({ name: `evasion/${name}`, digest: sample.digest, retain: sample.retain ?? [] });
  // a word character after the token, which the preset's rule for it does not allow
  samples.push({ name: "glued/word-after", retain: [`the CI uses ${ghp}_ci until friday`] }, { name: "glued/italics", digest: `## Deploy\n- token: _${ghp}_\n`, retain: [] });
  return samples;
}

/** Ordinary memory lines that must pass: notes, hashes, ids, URLs, code, numbers, documented placeholders. */
/** 16-character windows of every unbroken run of 16+ characters in the sample: none may be stored or shown. */
export function windows(s: SecretSample): string[] {
  const runs = [s.digest ?? "", ...s.retain].flatMap((t) => t.match(/\S{16,}/g) ?? []);
  return runs.flatMap((r) => Array.from({ length: Math.floor((r.length - 16) / 8) + 1 }, (_, i) => r.slice(i * 8, i * 8 + 16)));
}

export function cleanCorpus(): string[] {
  const t = tokens(7);
  const sha1 = (i: number) => createHash("sha1").update(`commit ${i}`).digest("hex");
  const sha256 = (i: number) => createHash("sha256").update(`file ${i}`).digest("hex");
  const uuid = () => [8, 4, 4, 4, 12].map((n) => t(HEX, n)).join("-");
  const awsExampleId = "AKIA" + "IOSFODNN7" + "EXAMPLE";
  const awsExampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY";
  const pubKey = generateKeyPairSync("ed25519").publicKey;
  const sshPub = Buffer.concat([sshString("ssh-ed25519"), sshString(Buffer.from(pubKey.export({ format: "jwk" }).x as string, "base64url"))]).toString("base64");

  const prose = [
    "W @Peter prefers short replies.",
    "O(c=0.9) @Peter likes tables more than bullet lists.",
    "The nightly build runs at 03:00 UTC and takes about 14 minutes.",
    "Decision: keep the lock timeout at 5 seconds; raising it hid a deadlock last time.",
    "Ana owns the billing service; ask her before touching the invoice job.",
    "The staging database was migrated to Postgres 16 on 2024-03-18.",
    "Customers in the EU are served from eu-west-1; everyone else from us-east-1.",
    "Remember: never paste secrets into memory; use the password manager instead.",
    "The token budget for a memory digest is 2,000 tokens.",
    "Secret scanning rejects a patch whole when one item looks like a key.",
    "The API key lives in the team vault under 'payments/stripe'.",
    "Password rotation happens every 90 days; the next one is due in March.",
    "Authentication uses OAuth 2.0 with PKCE for the desktop app.",
    "We moved from Jenkins to GitHub Actions in Q2.",
    "Léa prefers French for status mails; résumé attached to the ticket.",
    "Пётр предпочитает короткие ответы и таблицы.",
    "Η Ελένη είναι υπεύθυνη για την υποδομή.",
    "日本語のメモ: 毎週月曜日に会議があります。",
    "Emoji status: 🚀 shipped, 🐛 two bugs open, ✅ tests green.",
    "The bidi test file contains Arabic text: مرحبا بالعالم.",
    "Use `npm ci` in CI, never `npm install`.",
    "Flaky test: processes.test.ts times out on 2-core machines about once in 40 runs.",
    "The customer asked for a refund of $1,250.00 on invoice INV-2024-0042.",
    "Latency p50 38 ms, p95 412 ms, p99 1.9 s after the cache change.",
    "Meeting notes 2024-06-11: agreed to ship the memory store behind a flag.",
    "Ticket VVM-1432 tracks the parser's error recovery.",
    "The intern's onboarding checklist is in docs/onboarding.md.",
    "Peter's time zone is Europe/Berlin (UTC+1, UTC+2 in summer).",
    "The password reset email template was translated into German and Spanish.",
    "Tokens are counted with the provider's tokenizer, not by characters.",
    "Auth errors from the provider are retried twice with backoff.",
    "Keys in the memory store are escaped into directory names (see keys.ts).",
    "Private key files must be mode 0600 or ssh refuses them.",
    "The credentials page of the admin console moved under Settings → Security.",
    "Internationalization and localization are handled by the i18n package.",
    "The word 'secret' in a sentence is fine; only values assigned to secret names are checked.",
    "Abstract: a runtime for VVM with persistent agent memory, tested on Node 20.",
    "He said the deploy is blocked until the SOC 2 audit closes.",
    "Budget approved: 3 engineers for 6 weeks.",
    "Our Slack channel is #vvm-dev; incidents go to #vvm-incidents.",
  ];
  const hashes = Array.from({ length: 20 }, (_, i) =>
    [`Fixed in commit ${sha1(i)}.`, `revert ${sha1(i).slice(0, 12)} if the bench regresses`, `digest_sha256: ${sha256(i)}`, `image nginx@sha256:${sha256(i + 100)}`, `sha256sum of the release tarball: ${sha256(i + 200)}`][i % 5],
  );
  const ids = Array.from({ length: 20 }, (_, i) =>
    [`run_id: ${uuid()}`, `session ${uuid()} ended with exit code 0`, `X-Request-Id: ${uuid()}`, `{"trace_id": "${uuid()}", "span": ${i}}`, `customer id ${uuid()} asked twice`][i % 5],
  );
  const urls = Array.from({ length: 20 }, (_, i) =>
    [
      `https://github.com/vvm-lang/vvm/blob/${sha1(i)}/runtime/memory/index.ts#L${40 + i}`,
      `https://example.org/search?q=memory+store&page=${i}&sort=desc`,
      `See https://docs.example.org/v2/guides/agents#persistent-memory (section ${i}).`,
      `https://s3.eu-west-1.amazonaws.com/vvm-artifacts/builds/${sha1(i).slice(0, 8)}/vvm.tgz`,
      `Grafana board: https://grafana.example.org/d/${t(ALNUM, 9)}/memory?orgId=1&from=now-6h`,
    ][i % 5],
  );
  const code = [
    "const token = await auth.getToken();",
    'password = os.environ["DB_PASSWORD"]',
    "apiKey: process.env.OPENAI_API_KEY,",
    "token: ${{ secrets.NPM_TOKEN }}",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.org/v1/runs',
    "headers: { Authorization: `Bearer ${token}` },",
    'if (!password) throw new Error("password required");',
    "token_count = len(tokens)",
    "def check_password(password: str) -> bool:",
    "password_hash = bcrypt.hashpw(pw, bcrypt.gensalt())",
    'auth: { type: "oauth2", scopes: ["repo", "read:org"] }',
    "secret: secretFromVault,",
    "token: string;",
    "private_key: Optional[bytes] = None",
    'client_secret = config["client_secret"]',
    "api_key = settings.API_KEY",
    'password: "<your password here>"',
    "aws_access_key_id = YOUR_ACCESS_KEY_ID",
    "export AWS_PROFILE=dev && aws s3 ls",
    "git log --oneline -5 && git status --short",
    "SELECT id, created_at FROM runs WHERE status = 'failed' ORDER BY created_at DESC LIMIT 20;",
    "docker run --rm -p 8080:80 nginx:1.27-alpine",
    "const re = /^[A-Za-z0-9_-]{3,64}$/u;",
    "for (let i = 0; i < items.length; i++) total += items[i].price * items[i].qty;",
    "export function createMemoryStoreFromConfiguration(options: MemoryStoreOptions): MemoryStore {",
    "accessTokenProvider.refreshIfExpired(clock.now())",
    "PWD=/home/peter/src/vvm",
    "pwd: /tmp/build/output",
    "auth: required",
    "auth_method: sha256-hmac",
    "token_url: https://oauth2.googleapis.com/token",
    "secret_name: prod/db/password",
    "password_min_length: 12",
    "max_tokens: 4096",
    '"input_tokens": 1523, "output_tokens": 644',
    "token_budget: 12000",
    "Token: the CI one expires on 2025-01-31",
    "password: stored in the team vault",
    "api_key_env: OPENAI_API_KEY",
    "TOKEN_TTL_SECONDS=3600",
    "session_timeout: 30m",
    "SECRET_KEY_FILE=/run/secrets/django_key",
    "vitest run test/memory --reporter=dot",
    "npm view @secretlint/core versions --json",
    'import { generateKeyPairSync } from "node:crypto";',
    "cron: 0 3 * * 1-5",
    "version: 2.14.3-beta.1+build.20240611",
    "node 20.20.2, vitest 4.1.12, typescript 6.0.3",
    "ip 10.0.12.7, mask 255.255.255.0, gateway 10.0.12.1",
    "| metric | before | after |\n|---|---|---|\n| p95 | 412 ms | 180 ms |",
    "```ts\nconst client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY });\n```",
    "The secret key base is generated by `rails credentials:edit`, never stored here.",
    "password: correct horse battery staple is the xkcd example, not ours",
    "ssh -i ~/.ssh/id_ed25519 deploy@build.example.org",
    "-----BEGIN PRIVATE KEY----- blocks belong in the vault, not in memory.",
    "Authorization header format: Bearer <token>",
  ];
  const samples = [
    `AWS documentation example key id: ${awsExampleId}`,
    `aws_access_key_id = ${awsExampleId}`,
    `aws_secret_access_key = ${awsExampleSecret}`,
    `AWS_SECRET_ACCESS_KEY=${awsExampleSecret}`,
    `export AWS_ACCESS_KEY_ID=${"AKIA" + "I44QH8DHB" + "EXAMPLE"}`,
    `aws_secret_access_key: ${"je7MtGbClwBF/2Zp9Utk/h3yCo8nvb" + "EXAMPLEKEY"}`,
    `Stripe publishable key (public by design): pk_live_${t(ALNUM, 24)}`,
    `Anthropic request id req_${t(ALNUM, 24)} timed out`,
    `message id msg_${t(ALNUM, 24)}`,
    `Stripe customer cus_${t(ALNUM, 14)} disputed a charge`,
    `Slack channel C${t(UPPER + DIGITS, 10)} is archived`,
    `"integrity": "sha512-${createHash("sha512").update("pkg").digest("base64")}"`,
    `<script src="app.js" integrity="sha384-${createHash("sha384").update("app").digest("base64")}"></script>`,
    `greeting in base64: ${Buffer.from("hello from the memory store").toString("base64")}`,
    `data:image/png;base64,${Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"), randomBytes(48)]).toString("base64")}`,
    `ssh-ed25519 ${sshPub} peter@laptop`,
    pubKey.export({ type: "spki", format: "pem" }).toString().trim(),
    `hex dump of the header: ${randomBytes(24).toString("hex")}`,
    `etag "${createHash("md5").update("x").digest("hex")}"`,
    `build ${t(DIGITS, 10)} finished at 2024-06-11T14:03:22Z`,
    `phone +49 30 ${t(DIGITS, 8)}, fax none`,
    `IBAN-like test value DE00 ${t(DIGITS, 4)} ${t(DIGITS, 4)} ${t(DIGITS, 4)}`,
    `price 19.99 EUR, quantity 3, total 59.97 EUR`,
    `coordinates 52.520008, 13.404954`,
    `bcrypt cost 12, argon2id m=65536,t=3,p=4`,
    `user agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36`,
    `SSH host key fingerprint SHA256:${createHash("sha256").update("host").digest("base64").replace(/=+$/, "")}`,
    `GPG key id 0x${t(HEX, 16).toUpperCase()}`,
    `image ghcr.io/vvm-lang/vvm:1.4.2@sha256:${sha256(999)}`,
    `spec draft: https://docs.google.com/document/d/${t(URLSAFE, 44)}/edit`,
    `publicKey: ${pubKey.export({ type: "spki", format: "der" }).toString("base64")}`,
    `ULID ${t("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26)} marks the first run`,
    `${sha1(1)}\n${sha1(2)}\n${sha1(3)}`,
    `${uuid()}\n${uuid()}\n${sha256(5)}`,
  ];
  const more = [
    "Use the staging key from 1Password (item: 'stripe-staging').",
    "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY')",
    "token = secrets.token_urlsafe(32)",
    ".env.example holds STRIPE_SECRET_KEY=sk_test_... as a template",
    "OPENAI_API_KEY=sk-... goes into .env, which is git-ignored",
    "password: ********",
    "api_key: xxxxxxxxxxxxxxxxxxxx",
    "token: <redacted>",
    "Authorization: Bearer eyJhbGciOi... (truncated in the log)",
    "node --experimental-vm-modules node_modules/.bin/jest",
    "useSyncExternalStoreWithSelector is the hook behind the store",
    "/usr/local/lib/node_modules/@secretlint/core/module/index.js",
    "C:\\Users\\peter\\AppData\\Local\\npm-cache",
    "video: https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
    "git remote: git@github.com:vvm-lang/vvm.git",
    "constants: 1e-9, 0xDEADBEEF, 3.14159265358979",
    "const MAGIC = 0x5f3759df;",
    "Key: Enter submits, Shift+Enter adds a line",
    "private: true",
    "password: ${DB_PASSWORD:-postgres}",
    "token_type: Bearer",
    "Secret Santa list: Ana gives to Ben, Ben to Cleo",
    'The "auth" middleware checks the session cookie first.',
    "session_id is logged at debug level only",
    "The reset link looks like https://app.example.org/reset?token=expired",
    "kubectl get secret db-credentials -o yaml | less",
    "kind: Secret is never committed; sealed-secrets encrypts them",
    "ssh-keygen -t ed25519 -C peter@laptop -f ~/.ssh/id_ed25519",
    "openssl ecparam -genkey -name prime256v1 -out key.pem",
    "BEGIN/END markers of PEM files are checked by the private-key rule",
    "Retry-After: 120",
    "Content-Security-Policy: default-src 'self'; img-src https://cdn.example.org",
    "Set-Cookie: theme=dark; Path=/; SameSite=Lax",
    "ETag mismatch on /v1/runs/42 after the deploy",
    "Hash of the empty string: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Base64 of the empty JSON object is e30=",
    "Timezone offsets: +05:30 (India), -03:00 (Brazil), +09:00 (Japan)",
    "Regex for tokens: /^gh[pousr]_[A-Za-z0-9]{36}$/",
    "The error said: invalid_grant (the refresh token had expired)",
    "lockfileVersion: 3, npm 10.8.2",
    "Mean 12.4, stddev 3.1, n=250, p<0.01",
    "Room 4.012, building B, 2nd floor",
  ];
  return [...prose, ...hashes, ...ids, ...urls, ...code, ...samples, ...more];
}
