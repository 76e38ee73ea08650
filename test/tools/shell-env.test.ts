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
