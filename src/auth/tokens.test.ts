import { env } from "cloudflare:test";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { readConfig } from "../config";
import type { ApiError } from "../errors";
import { deriveOwnerKey, deriveSessionId } from "./ids";
import { type JwksFetch, signToken, verifyUserToken } from "./tokens";

const base = env as unknown as Record<string, string>;
const jwksConfig = readConfig({
  ...base,
  AUTH_JWT_SECRET: undefined,
  DEV_LOGIN: "false",
  AUTH_JWKS_URL: "https://idp.example/.well-known/jwks.json",
  AUTH_ISSUER: "https://idp.example",
} as unknown as Env);

async function keySet() {
  const rsa = await generateKeyPair("RS256");
  const ec = await generateKeyPair("ES256");
  const keys = [
    { ...(await exportJWK(rsa.publicKey)), kid: "rsa-1", alg: "RS256", use: "sig" },
    { ...(await exportJWK(ec.publicKey)), kid: "ec-1", alg: "ES256", use: "sig" },
  ];
  let fetches = 0;
  const fetchJwks: JwksFetch = async () => {
    fetches++;
    return Response.json({ keys });
  };
  return { rsa, ec, fetchJwks, fetches: () => fetches };
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return (err as ApiError).code;
  }
}

describe("tokens from a JWKS URL", () => {
  it("accepts RS256 and ES256 tokens signed by a key of the set, with the configured issuer and audience", async () => {
    const { rsa, ec, fetchJwks } = await keySet();
    const rs = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", kid: "rsa-1" })
      .setSubject("u-rsa")
      .setIssuer("https://idp.example")
      .setAudience("gateway-test")
      .setExpirationTime("5m")
      .sign(rsa.privateKey);
    const es = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: "ec-1" })
      .setSubject("u-ec")
      .setIssuer("https://idp.example")
      .setAudience("gateway-test")
      .setExpirationTime("5m")
      .sign(ec.privateKey);
    expect((await verifyUserToken(jwksConfig, rs, undefined, fetchJwks)).userId).toBe("u-rsa");
    expect((await verifyUserToken(jwksConfig, es, undefined, fetchJwks)).userId).toBe("u-ec");
  });

  it("refuses a wrong issuer, a key outside the set, and an HS256 token when no secret is configured", async () => {
    const { rsa, fetchJwks } = await keySet();
    const other = await generateKeyPair("RS256");
    const wrongIssuer = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", kid: "rsa-1" })
      .setSubject("u")
      .setIssuer("https://evil.example")
      .setAudience("gateway-test")
      .setExpirationTime("5m")
      .sign(rsa.privateKey);
    expect(await code(verifyUserToken(jwksConfig, wrongIssuer, undefined, fetchJwks))).toBe("token_claim_invalid");
    const foreign = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", kid: "rsa-1" })
      .setSubject("u")
      .setIssuer("https://idp.example")
      .setAudience("gateway-test")
      .setExpirationTime("5m")
      .sign(other.privateKey);
    expect(await code(verifyUserToken(jwksConfig, foreign, undefined, fetchJwks))).toBe("token_signature_invalid");
    const hs = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("u")
      .setIssuer("https://idp.example")
      .setAudience("gateway-test")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode("x".repeat(40)));
    expect(await code(verifyUserToken(jwksConfig, hs, undefined, fetchJwks))).toBe("token_algorithm_invalid");
  });
});

describe("token lifetimes", () => {
  const config = readConfig(env);
  const key = new TextEncoder().encode(base.AUTH_JWT_SECRET);
  const now = () => Math.floor(Date.now() / 1000);
  const token = (build: (jwt: SignJWT) => SignJWT) =>
    build(new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("u").setAudience("gateway-test")).sign(key);

  it("a token without exp is refused: it would never expire", async () => {
    expect(await code(verifyUserToken(config, await token((j) => j.setIssuedAt())))).toBe("token_claim_invalid");
  });

  it("an iat in the future is refused beyond the allowed clock skew of 60 s, and accepted within it", async () => {
    expect(
      await code(
        verifyUserToken(config, await token((j) => j.setIssuedAt(now() + 600).setExpirationTime(now() + 1200))),
      ),
    ).toBe("token_claim_invalid");
    expect(
      await code(verifyUserToken(config, await token((j) => j.setIssuedAt(now() + 30).setExpirationTime(now() + 600)))),
    ).toBe("ok");
  });

  it("token age is capped at 24 h: an older token, or one that would live longer, is refused", async () => {
    expect(
      await code(
        verifyUserToken(config, await token((j) => j.setIssuedAt(now() - 25 * 3600).setExpirationTime(now() + 600))),
      ),
    ).toBe("token_expired");
    expect(
      await code(
        verifyUserToken(config, await token((j) => j.setIssuedAt(now()).setExpirationTime(now() + 30 * 24 * 3600))),
      ),
    ).toBe("token_claim_invalid");
    expect(await code(verifyUserToken(config, await token((j) => j.setExpirationTime(now() + 30 * 24 * 3600))))).toBe(
      "token_claim_invalid",
    );
    expect(
      await code(
        verifyUserToken(config, await token((j) => j.setIssuedAt(now() - 3600).setExpirationTime(now() + 3600))),
      ),
    ).toBe("ok");
  });

  it("an exp just past is still accepted within the skew; further past, token_expired", async () => {
    expect(
      await code(verifyUserToken(config, await token((j) => j.setIssuedAt(now() - 600).setExpirationTime(now() - 30)))),
    ).toBe("ok");
    expect(
      await code(
        verifyUserToken(config, await token((j) => j.setIssuedAt(now() - 600).setExpirationTime(now() - 120))),
      ),
    ).toBe("token_expired");
  });
});

describe("token use", () => {
  it("a token minted for another use (a stream token) is not a user token, and the reverse", async () => {
    const config = readConfig(env);
    const stream = await signToken(config, { sub: "u", use: "stream", cid: "c" }, 60);
    expect(await code(verifyUserToken(config, stream))).toBe("token_use_invalid");
    expect((await verifyUserToken(config, stream, "stream")).userId).toBe("u");
    const user = await signToken(config, { sub: "u" }, 60);
    expect(await code(verifyUserToken(config, user, "stream"))).toBe("token_use_invalid");
  });
});

describe("identity derivation", () => {
  it("session ids are stable per (user, conversation), distinct across users, and not splittable", async () => {
    const secret = "s".repeat(40);
    const a = await deriveSessionId(secret, "alice", "c1");
    expect(a).toMatch(/^s_[A-Za-z0-9_-]{43}$/);
    expect(await deriveSessionId(secret, "alice", "c1")).toBe(a);
    expect(await deriveSessionId(secret, "bob", "c1")).not.toBe(a);
    expect(await deriveSessionId(secret, "ali", "cec1")).not.toBe(await deriveSessionId(secret, "alic", "ec1"));
    expect(await deriveSessionId("t".repeat(40), "alice", "c1")).not.toBe(a);
    expect(await deriveOwnerKey(secret, "alice")).not.toBe(await deriveOwnerKey(secret, "bob"));
  });
});
