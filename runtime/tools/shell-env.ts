// The environment a bash tool command runs with: the one vvm was started with, less every variable that
// looks like a credential. A model's command (or a file it was told to run) must not be able to read the
// API key vvm itself uses, nor other keys, tokens and passwords (spec/agent-calls.md §8 "bash").

/** Names that hold credentials by convention: matched as whole `_`-separated words, in any case. */
const SECRET_WORDS = ["KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE", "SESSION", "PAT", "PRIVATE", "SIGNATURE", "DSN", "PASSPHRASE", "PWD", "JWT", "SSHPASS"];
/** Names that hold one of SECRET_WORDS but no credential: the shell's working directory. */
const NOT_SECRET = ["PWD"];
/** Whole prefixes: everything vvm's own provider reads, and cloud credential families. */
const SECRET_PREFIXES = ["ANTHROPIC_", "VVM_", "AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "GCP_", "NPM_CONFIG__AUTH"];
/** Values that are credentials whatever the variable is called (well-known key formats). */
const SECRET_VALUE = /^(?:sk-|sk_live_|rk_live_|sk_test_|rk_test_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abposr]-|xapp-|hf_[A-Za-z]{30,}|npm_[A-Za-z0-9]{36}|pypi-AgE|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{10,}\.)/;

/** A URL with user information (`scheme://user:password@host`, `https://token@host`): a credential anywhere in a value. */
const URL_WITH_USER = /:\/\/[^/?#\s@]+@/;

/** Is this variable withheld from commands? */
export function isSecretVariable(name: string, value: string): boolean {
  const upper = name.toUpperCase();
  const byValue = SECRET_VALUE.test(value.trim()) || URL_WITH_USER.test(value);
  if (NOT_SECRET.includes(upper)) return byValue;
  if (SECRET_PREFIXES.some((p) => upper.startsWith(p))) return true;
  // words of the name: API_KEY, GITHUB_TOKEN, DB_PASSWORD, but not KEYBOARD_LAYOUT or PASSAGE
  const words = upper.split(/[^A-Z0-9]+/);
  if (words.some((w) => SECRET_WORDS.includes(w) || w.endsWith("APIKEY") || w.endsWith("TOKEN") || w.endsWith("SECRET") || w.endsWith("PASSWORD"))) return true;
  return byValue;
}

/** The environment for commands: `base` without the variables isSecretVariable withholds. */
export function commandEnv(base: Readonly<Record<string, string | undefined>>): { env: Record<string, string>; withheld: string[] } {
  const env: Record<string, string> = {};
  const withheld: string[] = [];
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (isSecretVariable(name, value)) withheld.push(name);
    else env[name] = value;
  }
  return { env, withheld: withheld.sort() };
}
