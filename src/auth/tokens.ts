/**
 * User-token verification with jose: HS256 under a shared secret, or RS256/ES256 from a JWKS URL,
 * with optional issuer and audience. `sub` is the user id. Every failure is a 401 with a code.
 */
import {
  createRemoteJWKSet,
  customFetch,
  errors,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
  SignJWT,
} from "jose";
import type { Config } from "../config";
import { ApiError } from "../errors";

export interface VerifiedUser {
  userId: string;
  claims: JWTPayload;
}

const encoder = new TextEncoder();
const jwksCache = new Map<string, JWTVerifyGetKey>();

export type JwksFetch = (
  url: string,
  options: { headers: Headers; method: "GET"; redirect: "manual"; signal: AbortSignal },
) => Promise<Response>;

/** The key set at `url`, fetched and cached by jose (keys are re-fetched on an unknown kid). */
function jwks(url: string, fetchJwks?: JwksFetch): JWTVerifyGetKey {
  const cacheKey = fetchJwks ? `${url}#custom` : url;
  let set = jwksCache.get(cacheKey);
  if (!set) {
    set = createRemoteJWKSet(new URL(url), fetchJwks ? { [customFetch]: fetchJwks } : {});
    if (!fetchJwks) jwksCache.set(cacheKey, set);
  }
  return set;
}

function unauthorized(code: string, message: string): ApiError {
  return new ApiError(401, code, message, undefined, { "www-authenticate": `Bearer error="invalid_token"` });
}

export function bearerToken(header: string | undefined): string {
  if (!header)
    throw new ApiError(401, "token_missing", "Authorization: Bearer <token> is required", undefined, {
      "www-authenticate": "Bearer",
    });
  const match = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)$/i.exec(header.trim());
  if (!match) throw unauthorized("token_malformed", "the Authorization header must be Bearer followed by a token");
  return match[1]!;
}

/** Clock skew allowed between the token's issuer and this Worker, on exp, nbf and iat. */
const CLOCK_SKEW_SECONDS = 60;
/** The longest a token may live (exp after iat, or after now without iat), and the oldest it may be. */
const MAX_TOKEN_LIFETIME_SECONDS = 24 * 60 * 60;

export async function verifyUserToken(
  config: Config,
  token: string,
  expectedUse?: string,
  fetchJwks?: JwksFetch,
): Promise<VerifiedUser> {
  const options = {
    ...(config.AUTH_ISSUER ? { issuer: config.AUTH_ISSUER } : {}),
    ...(config.AUTH_AUDIENCE ? { audience: config.AUTH_AUDIENCE } : {}),
    // A token without an expiry never expires: refused.
    requiredClaims: ["exp"],
    clockTolerance: CLOCK_SKEW_SECONDS,
  };
  let payload: JWTPayload;
  try {
    if (config.AUTH_JWKS_URL && !(config.AUTH_JWT_SECRET && isHs256(token))) {
      ({ payload } = await jwtVerify(token, jwks(config.AUTH_JWKS_URL, fetchJwks), {
        ...options,
        algorithms: ["RS256", "ES256"],
      }));
    } else {
      ({ payload } = await jwtVerify(token, encoder.encode(config.AUTH_JWT_SECRET!), {
        ...options,
        algorithms: ["HS256"],
      }));
    }
  } catch (err) {
    if (err instanceof errors.JWTExpired) throw unauthorized("token_expired", "the token has expired");
    if (err instanceof errors.JWTClaimValidationFailed)
      throw unauthorized("token_claim_invalid", `the token's ${err.claim} claim is not accepted`);
    if (err instanceof errors.JWSSignatureVerificationFailed)
      throw unauthorized("token_signature_invalid", "the token's signature does not verify");
    if (err instanceof errors.JOSEAlgNotAllowed)
      throw unauthorized("token_algorithm_invalid", "the token's algorithm is not accepted");
    if (err instanceof errors.JWKSNoMatchingKey)
      throw unauthorized("token_signature_invalid", "no key of the key set matches the token");
    if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
      throw new ApiError(503, "auth_keys_unavailable", "the token signing keys could not be fetched");
    }
    throw unauthorized("token_invalid", "the token is malformed");
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.iat === "number" && payload.iat > now + CLOCK_SKEW_SECONDS) {
    throw unauthorized("token_claim_invalid", "the token's iat claim is in the future");
  }
  if (typeof payload.iat === "number" && now - payload.iat > MAX_TOKEN_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) {
    throw unauthorized("token_expired", `the token is older than ${MAX_TOKEN_LIFETIME_SECONDS} s`);
  }
  const issuedAt = typeof payload.iat === "number" ? payload.iat : now;
  if (typeof payload.exp === "number" && payload.exp - issuedAt > MAX_TOKEN_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) {
    throw unauthorized(
      "token_claim_invalid",
      `the token's exp claim is more than ${MAX_TOKEN_LIFETIME_SECONDS} s after it was issued`,
    );
  }
  if (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > 256) {
    throw unauthorized("token_claim_invalid", "the token has no usable sub claim");
  }
  const use = typeof payload.use === "string" ? payload.use : undefined;
  if (use !== expectedUse)
    throw unauthorized(
      "token_use_invalid",
      expectedUse ? `a ${expectedUse} token is required here` : "this token cannot be used here",
    );
  return { userId: payload.sub, claims: payload };
}

function isHs256(token: string): boolean {
  try {
    const header = JSON.parse(atob(token.split(".")[0]!.replaceAll("-", "+").replaceAll("_", "/"))) as { alg?: string };
    return header.alg === "HS256";
  } catch {
    return false;
  }
}

/** Signs an HS256 token under AUTH_JWT_SECRET: dev login, and short-lived stream tokens. */
export async function signToken(
  config: Config,
  claims: { sub: string; use?: string; cid?: string; tid?: string },
  ttlSeconds: number,
): Promise<string> {
  let jwt = new SignJWT({
    ...(claims.use ? { use: claims.use } : {}),
    ...(claims.cid ? { cid: claims.cid } : {}),
    ...(claims.tid ? { tid: claims.tid } : {}),
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`);
  if (config.AUTH_ISSUER) jwt = jwt.setIssuer(config.AUTH_ISSUER);
  if (config.AUTH_AUDIENCE) jwt = jwt.setAudience(config.AUTH_AUDIENCE);
  return jwt.sign(encoder.encode(config.AUTH_JWT_SECRET!));
}
