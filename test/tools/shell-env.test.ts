// The bash tool's environment withholds credentials that sit inside URLs too (spec/agent-calls.md §8 "bash").
import { describe, expect, it } from "vitest";
import { commandEnv } from "../../runtime/tools/shell-env.ts";

describe("credentials in URLs", () => {
  it("a URL with a user (and password) in it is withheld whatever the variable is called", () => {
    const { env, withheld } = commandEnv({
      DATABASE_URL: "postgres://app:hunter2@db.internal:5432/prod",
      REDIS_URL: "redis://:s3cret@cache:6379/0",
      HTTPS_PROXY: "http://alice:pw@proxy.corp:8080",
      REPO: "https://x-access-token:abc123@github.com/acme/app.git",
      JDBC: "jdbc:mysql://root:toor@localhost/app",
      HOMEPAGE: "https://example.com/a@b",
      NO_PROXY: "localhost,127.0.0.1",
      EMAIL: "ada@example.com",
    });
    expect(withheld).toEqual(["DATABASE_URL", "HTTPS_PROXY", "JDBC", "REDIS_URL", "REPO"]);
    expect(Object.keys(env).sort()).toEqual(["EMAIL", "HOMEPAGE", "NO_PROXY"]);
  });
});

describe("credentials the first lists missed", () => {
  it("MySQL's MYSQL_PWD, a *_PASSPHRASE, a *_JWT and well-known token shapes are withheld; PWD and OLDPWD are not", () => {
    const { env, withheld } = commandEnv({
      MYSQL_PWD: "hunter2",
      GPG_PASSPHRASE: "correct horse",
      CI_JOB_JWT: "short",
      HF: "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
      NPMRC_X: "npm_abcdefghijklmnopqrstuvwxyz0123456789",
      STRIPE: "sk_test_51Habc",
      STRIPE_R: "rk_test_51Habc",
      PYPI: "pypi-AgEIcHlwaS5vcmcCJGFiYw",
      GH_R: "ghr_abcdefghijklmnopqrstuvwxyz0123456789",
      SLACK_APP: "xapp-1-A0-123-abc",
      PWD: "/home/ada/project",
      OLDPWD: "/home/ada",
      PASSAGE: "a long one",
      HF_HOME: "/home/ada/.cache/huggingface",
      NPM_CONFIG_CACHE: "/home/ada/.npm",
    });
    expect(withheld).toEqual(["CI_JOB_JWT", "GH_R", "GPG_PASSPHRASE", "HF", "MYSQL_PWD", "NPMRC_X", "PYPI", "SLACK_APP", "STRIPE", "STRIPE_R"]);
    expect(Object.keys(env).sort()).toEqual(["HF_HOME", "NPM_CONFIG_CACHE", "OLDPWD", "PASSAGE", "PWD"]);
  });
});

describe("a password under its tool's own name", () => {
  it("sshpass -e's SSHPASS is withheld, as MYSQL_PWD and PGPASSWORD are", () => {
    const { withheld } = commandEnv({ SSHPASS: "hunter2", PGPASSWORD: "hunter2", COMPASS_HOME: "/opt/compass" });
    expect(withheld).toEqual(["PGPASSWORD", "SSHPASS"]);
  });
});
