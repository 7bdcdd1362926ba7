/**
 * Secrets at rest (webhook signing secrets, users' model keys, MCP servers' auth headers): an
 * object that must use a secret keeps it sealed with AES-GCM under a key derived (HKDF-SHA256)
 * from the server secret (`SESSION_ID_SECRET`) for one purpose, bound to the record it belongs to
 * (the additional data), so a stored row or a copy of the database holds no secret in clear, and a
 * sealed value moved to another record or purpose does not open. Rotating the server secret makes
 * every sealed value unreadable.
 */

function b64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}
const unb64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

async function sealingKey(serverSecret: string, purpose: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(serverSecret), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode(purpose) },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** `plain` sealed for `purpose`, bound to `record`: `v1.<iv>.<ciphertext>`. */
export async function seal(serverSecret: string, purpose: string, record: string, plain: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(record) },
    await sealingKey(serverSecret, purpose),
    new TextEncoder().encode(plain),
  );
  return `v1.${b64(iv)}.${b64(new Uint8Array(sealed))}`;
}

/** What `seal` sealed for the same purpose and record; throws for anything else. */
export async function unseal(serverSecret: string, purpose: string, record: string, sealed: string): Promise<string> {
  const [version, iv, data] = sealed.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("not a sealed secret");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: unb64(iv), additionalData: new TextEncoder().encode(record) },
    await sealingKey(serverSecret, purpose),
    unb64(data),
  );
  return new TextDecoder().decode(plain);
}
