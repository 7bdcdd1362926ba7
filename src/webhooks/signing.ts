/**
 * Standard Webhooks signatures, our own (WebCrypto): the symmetric scheme, `v1`, an HMAC-SHA256
 * over `${webhook-id}.${webhook-timestamp}.${body}` keyed with the secret's bytes, base64. A
 * secret is shown to its owner as `whsec_` and the base64 of 32 random bytes. During a rotation's
 * grace period a delivery carries one signature per secret, space-separated, newest first, so a
 * receiver holding either secret verifies it (the specification's zero-downtime rotation).
 * Pure apart from the random bytes of a new secret.
 */

import { seal, unseal } from "../lib/seal";

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

/** Signing secrets at rest: sealed (../lib/seal.ts) for this purpose, bound to the endpoint's id. */
const SEALED_FOR = "agent-gateway webhook signing secret v1";

export function sealSecret(serverSecret: string, endpointId: string, secret: string): Promise<string> {
  return seal(serverSecret, SEALED_FOR, endpointId, secret);
}

export function openSecret(serverSecret: string, endpointId: string, sealed: string): Promise<string> {
  return unseal(serverSecret, SEALED_FOR, endpointId, sealed);
}
