// Detectors for secret shapes the secretlint preset misses (spec/memory.md §8). A hit carries a rule
// id, a message id and an offset, never the matched text.

export interface Hit {
  ruleId: string;
  messageId: string;
  index: number;
}

interface Rule {
  id: string;
  messageId: string;
  /** global; one hit per accepted match */
  pattern: RegExp;
  /** a further check on the match (placeholders, randomness); `text` is the whole scanned view */
  accept?: (m: RegExpExecArray, text: string) => boolean;
  /** the rule cannot match a text without one of these (lower-case) words: a cheap test first */
  guard?: string[];
}

/** Shannon entropy in bits per character. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}

/** Bits per character a labelled value needs to count as random: 8 distinct characters of 8 reach it. */
const ENTROPY_MIN = 3.0;

// documentation and template stand-ins, references to where a secret lives, and AWS's own example keys
const PLACEHOLDER =
  /^[$%<[{*]|\$\{|\{\{|<[\w .-]*>|\*{3}|[xX]{5}|\.{3}|…|example|changeme|change_me|placeholder|redacted|dummy|sample|your[-_]|replace[-_]?me|process\.env|os\.environ|getenv/i;

/**
 * Letters and digits that read as words: most letters sit in pronounceable pieces of 3+ letters (split
 * at camelCase humps, digits and punctuation), with few digits in few places. Identifiers, member
 * paths (`config.apiKey`), dummy values (`sk-ant-bench`) and word-plus-year passwords read as words.
 */
function wordlike(value: string): boolean {
  const pieces = value.split(/[^A-Za-z]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/).filter(Boolean);
  const letters = pieces.reduce((n, w) => n + w.length, 0);
  const pronounceable = (w: string) => w.length >= 3 && /[aeiouy]/i.test(w) && !/[^aeiouy]{5}/i.test(w);
  const inWords = pieces.filter(pronounceable).reduce((n, w) => n + w.length, 0);
  const digits = value.replace(/\D/g, "").length;
  const switches = (value.match(/[A-Za-z](?=\d)|\d(?=[A-Za-z])/g) ?? []).length;
  return letters > 0 && inWords >= 0.6 * letters && digits <= 6 && switches <= 2;
}

/** A value that looks machine-made: long enough, not words, a number, date, version, URL or code, and high in entropy. */
function looksRandom(value: string): boolean {
  if (value.length < 8 || /\s/.test(value) || PLACEHOLDER.test(value)) return false;
  if (/^[\d.,_:+-]+$/.test(value) || /^v?\d+(\.\d+)+/.test(value) || /^\d{4}-\d\d-\d\d/.test(value)) return false;
  if (/:\/\//.test(value) || /[()[\]{}]/.test(value)) return false;
  return !wordlike(value) && entropy(value) >= ENTROPY_MIN;
}

// names whose value is a secret: the last name component ends with one of these words, or is `key`
// after a qualifier (`api_key`, `AccountKey`), optionally followed by an encoding word (`client-key-data`)
const SECRET_WORD = /(password|passwd|passphrase|pwd|secret|token|credentials?|auth|authorization|apikey|accesskey|secretkey|privatekey|appkey)$/;
const KEY_QUALIFIER = new Set(["api", "app", "access", "secret", "private", "client", "master", "signing", "encryption", "account", "auth", "service", "license", "subscription", "storage", "admin", "shared", "session", "consumer", "webhook", "deploy", "sas"]);
const ENCODING_WORD = new Set(["data", "value", "base", "b64", "hex", "raw"]);

function secretName(name: string): boolean {
  const parts = name
    .split(/[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/)
    .filter(Boolean)
    .map((p) => p.toLowerCase());
  if (parts.length > 1 && ENCODING_WORD.has(parts[parts.length - 1])) parts.pop();
  const last = parts[parts.length - 1] ?? "";
  return SECRET_WORD.test(last) || (last === "key" && KEY_QUALIFIER.has(parts[parts.length - 2] ?? ""));
}

/** The entropy rule: it judges a value's look, so words glued at a line break can fool it. */
export const LABELLED_SECRET = "vvm/labelled-secret";
/** Our copy of the preset's prefixed-token rules without their end-of-token condition (reported only where they find nothing). */
export const PREFIXED_TOKEN = "vvm/prefixed-token";

const notPlaceholder = (s: string) => !PLACEHOLDER.test(s) && !/^(pass(word)?|secret|token)$/i.test(s);

/** The text just before a match ends with `re`: patterns start at a literal, which is fast to find, and look back here. */
const after = (re: RegExp) => (m: RegExpExecArray, text: string) => re.test(text.slice(Math.max(0, m.index - 64), m.index));

/** How many words after a private-key armour are read for its body (headers and their values come first). */
const ARMOUR_WORDS = 64;
const KEY_HEADER = /^(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset)\b/;
const KEY_BODY = /^[A-Za-z0-9+/]{40,}/;

/**
 * Whether a key body (a run of 40 base64 characters) follows the armour that ends at `from`: at once, or
 * after header lines (`Proc-Type: 4,ENCRYPTED`, `Comment: …`) and their values. Words are split at white
 * space and JSON-escaped line breaks, so a key pasted on one line counts too; prose after the armour does not.
 */
function keyBodyFollows(text: string, from: number): boolean {
  let headers = false;
  for (const word of text.slice(from, from + 4000).split(/(?:\\[rn]|\s)+/, ARMOUR_WORDS)) {
    if (word === "") continue;
    if (KEY_BODY.test(word)) return true;
    if (KEY_HEADER.test(word)) headers = true;
    else if (!headers || word.startsWith("-----")) return false;
  }
  return false;
}

// prefix tokens: a letter or digit right before the prefix would make it part of another word
const RULES: Rule[] = [
  {
    // every PEM/OpenSSH/PGP/SSH2 private-key armour with a body (JSON-escaped line breaks too); the body is
    // looked for in code: one expression for "header lines, then a body" backtracked exponentially on a run of
    // header words (`Version Version …`: 1.2 s at 250 characters, doubling with each word)
    id: "vvm/private-key",
    messageId: "PrivateKeyBlock",
    pattern: /-{4,5} ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-{4,5}/g,
    accept: (m, text) => keyBodyFollows(text, m.index + m[0].length),
  },
  { id: "vvm/putty-private-key", messageId: "PuttyPrivateKey", pattern: /Private-Lines: *\d+(?:\\[rn]|\s)+[A-Za-z0-9+/]{20,}/g },
  {
    id: "vvm/jwk-private-key",
    messageId: "JwkPrivateKey",
    pattern: /"(?:d|p|q|dp|dq|qi|k)"\s*:\s*"[A-Za-z0-9_-]{32,}"/g,
    accept: (m, text) => /"kty"\s*:/.test(text.slice(Math.max(0, m.index - 4000), m.index + 4000)),
  },
  { id: "vvm/age-secret-key", messageId: "AgeSecretKey", pattern: /AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}/g },
  {
    // The preset's rules for these want no word character after the token, so `ghp_…_ci`, `_ghp_…_` and
    // `npm_…x` kept whole tokens; here the prefix and the token's length are enough.
    id: PREFIXED_TOKEN,
    messageId: "PrefixedToken",
    pattern:
      /(?<![A-Za-z0-9])(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82}|npm_[A-Za-z0-9]{36}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{20,}|gsk_[A-Za-z0-9]{52}|hf_[A-Za-z]{34}|ntn_\d{11}[A-Za-z0-9]{35}|dckr_pat_[A-Za-z0-9_-]{27})/g,
  },
  {
    id: "vvm/aws-access-key-id",
    messageId: "AwsAccessKeyId",
    pattern: /(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])/g,
    accept: (m) => !m[0].endsWith("EXAMPLE"),
  },
  { id: "vvm/stripe", messageId: "StripeKey", pattern: /(?<![A-Za-z0-9])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9+/=]{24,})/g },
  { id: "vvm/google-api-key", messageId: "GoogleApiKey", pattern: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g },
  { id: "vvm/google-oauth", messageId: "GoogleOAuthSecret", pattern: /(?<![A-Za-z0-9])(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[0-9A-Za-z_-]{30,})/g },
  { id: "vvm/jwt", messageId: "JsonWebToken", pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g },
  { id: "vvm/anthropic", messageId: "AnthropicKey", pattern: /(?<![A-Za-z0-9])sk-ant-[a-z]{3,8}\d\d-[A-Za-z0-9_-]{32,}/g },
  {
    // OpenAI (legacy 48, sk-proj-/sk-svcacct-/sk-admin-) and the many providers that copied its sk- prefix
    id: "vvm/sk-api-key",
    messageId: "SkApiKey",
    pattern: /(?<![A-Za-z0-9_-])sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{32,}(?![A-Za-z0-9]))/g,
    accept: (m) => looksRandom(m[0].slice(3)),
  },
  {
    id: "vvm/twilio",
    messageId: "TwilioCredential",
    pattern: /(?<![A-Za-z0-9])(?:SK[0-9a-f]{32}(?![0-9a-f])|AC[0-9a-f]{32}[ \t]*[:,/][ \t]*[0-9a-f]{32}(?![0-9a-f]))/g,
  },
  {
    id: "vvm/azure",
    messageId: "AzureKey",
    pattern: /(?:AccountKey|SharedAccessKey|SharedSecretValue|[?&]sig)=[A-Za-z0-9+/%]{30,}|(?<![\w~.-])[\w~.-]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])/g,
  },
  {
    id: "vvm/webhook-url",
    messageId: "WebhookUrl",
    pattern: /https:\/\/(?:hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/-]{20,}|(?:\w+\.)?discord(?:app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]{40,})/g,
  },
  {
    id: "vvm/discord-bot-token",
    messageId: "DiscordBotToken",
    pattern: /(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])/g,
    accept: (m) => looksRandom(m[0]),
  },
  { id: "vvm/telegram-bot-token", messageId: "TelegramBotToken", pattern: /:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/g, accept: after(/(?<!\d)\d{8,10}$/) },
  { id: "vvm/mailgun", messageId: "MailgunKey", pattern: /(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![0-9a-f])/g },
  { id: "vvm/mailchimp", messageId: "MailchimpKey", pattern: /-us\d{1,2}(?!\d)/g, accept: after(/(?<![0-9a-f])[0-9a-f]{32}$/) },
  { id: "vvm/square", messageId: "SquareToken", pattern: /(?<![A-Za-z0-9])(?:EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43})(?![A-Za-z0-9_-])/g },
  { id: "vvm/pypi", messageId: "PypiToken", pattern: /pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}/g },
  { id: "vvm/digitalocean", messageId: "DigitalOceanToken", pattern: /(?<![A-Za-z0-9])do[opr]_v1_[a-f0-9]{64}(?![a-f0-9])/g },
  { id: "vvm/heroku", messageId: "HerokuKey", pattern: /(?<![A-Za-z0-9])HRKU-[A-Za-z0-9_-]{30,}/g },
  { id: "vvm/cloudflare", messageId: "CloudflareOriginCaKey", pattern: /v1\.0-[a-f0-9]{24}-[a-f0-9]{146}/g },
  { id: "vvm/sentry", messageId: "SentryToken", pattern: /(?<![A-Za-z0-9])sntry[us]_[A-Za-z0-9+/=_-]{40,}/g },
  { id: "vvm/gitlab", messageId: "GitlabToken", pattern: /(?<![A-Za-z0-9])(?:gldt|glrt|glptt|glft|glsoat|glcbt|glimt|glagent|gloas)-[A-Za-z0-9_-]{20,}/g },
  { id: "vvm/atlassian", messageId: "AtlassianToken", pattern: /(?<![A-Za-z0-9])ATATT3[A-Za-z0-9_=-]{100,}/g },
  { id: "vvm/postman", messageId: "PostmanKey", pattern: /PMAK-[a-f0-9]{24}-[a-f0-9]{34}/g },
  { id: "vvm/newrelic", messageId: "NewRelicKey", pattern: /NRAK-[A-Z0-9]{27}/g },
  { id: "vvm/doppler", messageId: "DopplerToken", pattern: /dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}/g },
  { id: "vvm/supabase", messageId: "SupabaseToken", pattern: /(?<![A-Za-z0-9])sbp_[a-f0-9]{40}(?![a-f0-9])/g },
  { id: "vvm/pulumi", messageId: "PulumiToken", pattern: /(?<![A-Za-z0-9])pul-[a-f0-9]{40}(?![a-f0-9])/g },
  { id: "vvm/terraform", messageId: "TerraformToken", pattern: /\.atlasv1\.[A-Za-z0-9_=-]{60,}/g, accept: after(/[A-Za-z0-9]{14}$/) },
  { id: "vvm/mapbox", messageId: "MapboxSecretToken", pattern: /(?<![A-Za-z0-9])sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/g },
  {
    id: "vvm/url-credentials",
    messageId: "UrlPassword",
    pattern: /:\/\/[^\s:@/]{0,100}:([^\s@/]{3,200})@[A-Za-z0-9.-]+/g,
    accept: (m) => notPlaceholder(m[1]),
  },
  { id: "vvm/netrc", messageId: "NetrcPassword", pattern: /\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S+)/g, accept: (m) => notPlaceholder(m[1]) },
  { id: "vvm/bearer", messageId: "BearerToken", pattern: /\b(?:Bearer|Basic|SSWS)\s+([A-Za-z0-9._~+/-]{16,}={0,2})/g, accept: (m) => looksRandom(m[1]) },
  {
    // `name = value`, `name: value`, `"name": "value"`, `NAME=value`, `--name=value`; the value may
    // follow an auth scheme word (`Authorization: Bearer …`); an unquoted value has `=` only as padding
    // (a chain `a=b=c=…` must not make each match run to the end of the line)
    id: LABELLED_SECRET,
    messageId: "HighEntropyValue",
    pattern: /(?<![\w.])(["']?)([A-Za-z_][\w.-]{0,80})\1[ \t]*(?::=|=>|=|:)[ \t]*(?:(["'`])(?:(?:Bearer|Basic|Token|Bot|SSWS) +)?([^"'`\r\n]{1,400})\3|(?:(?:Bearer|Basic|Token|Bot|SSWS)[ \t]+)?([^\s"'`,;&<>)\]}=]{1,400}={0,2}))/g,
    accept: (m) => secretName(m[2]) && looksRandom(m[4] ?? m[5]),
    guard: ["pass", "pwd", "secret", "token", "credential", "auth", "key"],
  },
];

export const ruleIds = RULES.map((r) => r.id);

/** Every accepted match of every rule in `text`. */
export function findSecrets(text: string): Hit[] {
  const hits: Hit[] = [];
  const lower = text.toLowerCase();
  for (const rule of RULES) {
    if (rule.guard && !rule.guard.some((w) => lower.includes(w))) continue;
    rule.pattern.lastIndex = 0;
    for (let m = rule.pattern.exec(text); m !== null; m = rule.pattern.exec(text)) {
      if (!rule.accept || rule.accept(m, text)) hits.push({ ruleId: rule.id, messageId: rule.messageId, index: m.index });
      // a refused match may hide one that starts inside it (`note: TOKEN=…`)
      else rule.pattern.lastIndex = m.index + 1;
    }
  }
  return hits;
}
