import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../src/config";
import { ApiError } from "../src/errors";
import worker from "../src/worker";

const testEnv = env as unknown as Record<string, unknown>;
/** The test environment as a deploy would have it: wrangler.toml's top level binds no emulator. */
const deployed = (vars: Record<string, unknown> = {}) =>
  ({ ...testEnv, SANDBOX_EMULATOR: undefined, ...vars }) as unknown as Env;

function configError(environment: Env): ApiError {
  try {
    readConfig(environment);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected config_invalid");
}

async function call(environment: Env, url: string, init: RequestInit = {}): Promise<Response> {
  return worker.fetch!(new Request(url, init) as Request<unknown, IncomingRequestCfProperties>, environment, {
    waitUntil() {},
    passThroughOnException() {},
    props: {},
  } as unknown as ExecutionContext);
}

describe("deploying never serves the scripted emulator", () => {
  it("a deploy without an account key refuses with config_invalid naming TANGLE_API_KEY", () => {
    const err = configError(deployed());
    expect(err).toMatchObject({ status: 500, code: "config_invalid", details: { variables: ["TANGLE_API_KEY"] } });
    expect(err.message).toContain("never serves the local emulator");
  });

  it("PROVIDER=emulator in a deploy is refused, naming PROVIDER", () => {
    expect(configError(deployed({ PROVIDER: "emulator" })).details).toEqual({ variables: ["PROVIDER"] });
  });

  it("with the key, a deploy talks to the real Sandbox at its documented default URL", () => {
    const config = readConfig(deployed({ TANGLE_API_KEY: "k-deploy" }));
    expect(config).toMatchObject({ provider: "tangle", sandboxBaseUrl: "https://sandbox.tangle.tools", local: false });
  });

  it("PROVIDER=cli-bridge needs CLI_BRIDGE_URL; a bad CLI_BRIDGE_EXECUTION is named", () => {
    expect(configError(deployed({ PROVIDER: "cli-bridge" })).details).toEqual({ variables: ["CLI_BRIDGE_URL"] });
    const bad = configError(
      deployed({ PROVIDER: "cli-bridge", CLI_BRIDGE_URL: "http://127.0.0.1:3344", CLI_BRIDGE_EXECUTION: "[1]" }),
    );
    expect(bad.details).toEqual({ variables: ["CLI_BRIDGE_EXECUTION"] });
    expect(readConfig(deployed({ PROVIDER: "cli-bridge", CLI_BRIDGE_URL: "http://127.0.0.1:3344" })).provider).toBe(
      "cli-bridge",
    );
  });

  it("local development (npm start, the tests) runs the emulator when no provider is configured", () => {
    expect(readConfig(env as unknown as Env)).toMatchObject({ provider: "emulator", local: true });
  });

  it("npm start with a real account key (.dev.vars) talks to the Sandbox, and keeps dev login", async () => {
    const local = { ...testEnv, TANGLE_API_KEY: "k-local" } as unknown as Env;
    expect(readConfig(local)).toMatchObject({ provider: "tangle", local: true });
    expect(await (await call(local, "http://127.0.0.1:8787/healthz")).json()).toMatchObject({
      provider: "tangle",
      devLogin: true,
    });
  });

  it("dev login and the emulator's routes do not exist in a deploy, even with DEV_LOGIN set and a loopback Host", async () => {
    const prod = deployed({ TANGLE_API_KEY: "k-deploy", DEV_LOGIN: "true" });
    const login = await call(prod, "http://127.0.0.1:8787/v1/dev/login", {
      method: "POST",
      headers: { "content-type": "application/json", host: "localhost" },
      body: JSON.stringify({ user: "mallory" }),
    });
    expect(login.status).toBe(404);
    expect((await call(prod, "http://localhost/_emulator/counters")).status).toBe(404);
    expect(
      (
        await call(prod, "http://localhost/_emulator/reset", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        })
      ).status,
    ).toBe(404);
    expect(await (await call(prod, "http://127.0.0.1/healthz")).json()).toMatchObject({
      provider: "tangle",
      devLogin: false,
    });
    // The same request to the local development server is served.
    const local = await call(env as unknown as Env, "http://127.0.0.1:8787/v1/dev/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: "dev" }),
    });
    expect(local.status).toBe(200);
  });
});
