/**
 * Identity derivation. The session id is an HMAC of (user, conversation) under a server secret:
 * stable across a user's devices, unguessable, and never the same for two users — a user cannot
 * name another user's session. The owner key is the same idea for the user alone.
 */

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();

/** The HMAC-SHA256 key for a secret, imported once per secret. */
export function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keyCache.set(secret, key);
  }
  return key;
}

function base64url(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = "";
  for (const b of view) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

async function hmac(secret: string, parts: string[]): Promise<string> {
  // Length-prefixed parts: no choice of user and conversation ids can collide with another pair.
  const message = parts.map((p) => `${p.length}:${p}`).join("|");
  return base64url(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message)));
}

export async function deriveSessionId(secret: string, userId: string, conversationId: string): Promise<string> {
  return `s_${await hmac(secret, ["session/v1", userId, conversationId])}`;
}

export async function deriveOwnerKey(secret: string, userId: string): Promise<string> {
  return `u_${(await hmac(secret, ["owner/v1", userId])).slice(0, 32)}`;
}
