/**
 * Canonical JSON (RFC 8785 / JCS) and the SHA-256 digest over it.
 *
 * One digest function for the whole project: request digests, control refs, turn identity.
 * Refuses what JCS cannot represent faithfully: undefined, non-finite numbers, lone surrogates,
 * cycles and non-plain objects.
 */

class CanonicalJsonError extends Error {
  override name = "CanonicalJsonError";
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function canonicalString(value: string, path: string): string {
  if (LONE_SURROGATE.test(value)) throw new CanonicalJsonError(`lone surrogate in string at ${path}`);
  return JSON.stringify(value);
}

function write(value: unknown, path: string, seen: Set<object>): string {
  switch (typeof value) {
    case "string":
      return canonicalString(value, path);
    case "number":
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`non-finite number at ${path}`);
      // JSON.stringify writes numbers as ECMAScript Number::toString, which JCS mandates; -0 is 0.
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
      throw new CanonicalJsonError(`undefined at ${path}`);
    case "object": {
      if (value === null) return "null";
      if (seen.has(value)) throw new CanonicalJsonError(`cycle at ${path}`);
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          return `[${value.map((item, i) => write(item, `${path}[${i}]`, seen)).join(",")}]`;
        }
        if (!isPlainObject(value)) throw new CanonicalJsonError(`non-plain object at ${path}`);
        // JCS sorts keys by UTF-16 code units, which is what the default sort compares.
        const keys = Object.keys(value).sort();
        const members = keys.map((key) => {
          const child = (value as Record<string, unknown>)[key];
          return `${canonicalString(key, path)}:${write(child, `${path}.${key}`, seen)}`;
        });
        return `{${members.join(",")}}`;
      } finally {
        seen.delete(value);
      }
    }
    default:
      throw new CanonicalJsonError(`${typeof value} at ${path} is not JSON`);
  }
}

export function canonicalJson(value: unknown): string {
  return write(value, "$", new Set());
}

export type Sha256Digest = `sha256:${string}`;

export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = "";
  for (const byte of view) out += byte.toString(16).padStart(2, "0");
  return out;
}

export async function sha256Hex(text: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

export async function canonicalDigest(value: unknown): Promise<Sha256Digest> {
  return `sha256:${await sha256Hex(canonicalJson(value))}`;
}

/** Drops keys whose value is undefined, recursively, so optional-but-absent fields can be hashed. */
export function stripUndefined<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => stripUndefined(v)) as T;
  if (value !== null && typeof value === "object" && isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (child !== undefined) out[key] = stripUndefined(child);
    }
    return out as T;
  }
  return value;
}
