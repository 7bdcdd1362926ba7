/**
 * Standard Webhooks signatures, our own (WebCrypto): the symmetric scheme, `v1`, an HMAC-SHA256
 * over `${webhook-id}.${webhook-timestamp}.${body}` keyed with the secret's bytes, base64. A
 * secret is shown to its owner as `whsec_` and the base64 of 32 random bytes. During a rotation's
 * grace period a delivery carries one signature per secret, space-separated, newest first, so a
 * receiver holding either secret verifies it (the specification's zero-downtime rotation).
 * Pure apart from the random bytes of a new secret.
 */

const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
}

/** A new signing secret: `whsec_` and base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/** The key bytes of a `whsec_` secret. */
function secretBytes(secret: string): Uint8Array {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("a signing secret starts with whsec_");
  return fromBase64(secret.slice(SECRET_PREFIX.length));
}

/** One `v1,<base64>` signature of a message. */
export async function signatureOf(
  secret: string,
  webhookId: string,
  timestampSeconds: number,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(`${webhookId}.${timestampSeconds}.${body}`),
  );
  return `v1,${toBase64(new Uint8Array(mac))}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated, in the order given. */
export async function signatureHeader(
  secrets: readonly string[],
  webhookId: string,
  timestampSeconds: number,
  body: string,
): Promise<string> {
  const signatures = await Promise.all(secrets.map((secret) => signatureOf(secret, webhookId, timestampSeconds, body)));
  return signatures.join(" ");
}

/** A new message id (`webhook-id`): `msg_` and 32 hex digits; no `.`, so it cannot shift the signed content. */
export function newWebhookId(): string {
  return `msg_${[...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** A new endpoint id. */
export function newEndpointId(): string {
  return `wh_${[...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Secrets at rest: the object must sign with them, so it keeps them, sealed with AES-GCM under a
 * key derived (HKDF-SHA256) from the server secret (`SESSION_ID_SECRET`), bound to the endpoint's
 * id, so a stored row or a copy of the database holds no secret in clear. Rotating the server
 * secret makes every stored signing secret unreadable (deliveries fail until endpoints are created again).
 */
async function sealingKey(serverSecret: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(serverSecret), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: new Uint8Array(0),
      info: new TextEncoder().encode("agent-gateway webhook signing secret v1"),
    },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

export async function sealSecret(serverSecret: string, endpointId: string, secret: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(endpointId) },
    await sealingKey(serverSecret),
    new TextEncoder().encode(secret),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function openSecret(serverSecret: string, endpointId: string, sealed: string): Promise<string> {
  const [version, iv, data] = sealed.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("not a sealed secret");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv), additionalData: new TextEncoder().encode(endpointId) },
    await sealingKey(serverSecret),
    fromBase64(data),
  );
  return new TextDecoder().decode(plain);
}
