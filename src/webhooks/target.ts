/**
 * Which URLs a webhook may be delivered to (docs/webhooks.md#webhooks, target rules). Checked when an
 * endpoint is created, before every attempt and at every redirect hop:
 *  - https only when deployed; in local development (`npm start`, the tests) http too, but only
 *    to a loopback address;
 *  - no credentials in the URL, no fragment;
 *  - no literal address that is private, loopback (when deployed), link-local, unspecified,
 *    multicast, reserved or a cloud metadata address, in any IPv4 or IPv6 form (the URL parser
 *    normalises `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`); an IPv6 address that carries an
 *    IPv4 one (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64's 64:ff9b::/96, 6to4) is
 *    checked by the IPv4 address it carries, and one that tunnels or translates to an address
 *    nothing here can check (Teredo, local-use NAT64 64:ff9b:1::/48) is refused; outside those,
 *    only global unicast (2000::/3) is allowed, less its special-purpose ranges (IETF protocol
 *    assignments 2001::/23, documentation 2001:db8::/32 and 3fff::/20);
 *  - no name that is local by construction: `localhost` and `*.localhost` (except loopback in
 *    local development), single-label names, `.local`, `.internal`, `.home.arpa`, `.lan`,
 *    `.intranet`, `.corp`, and names under `in-addr.arpa` / `ip6.arpa`.
 * What a name resolves to cannot be checked in a Worker: it has no DNS API that a later fetch
 * would be bound to (a name could resolve to a public address when checked and a private one
 * when fetched). A deployed Worker's subrequests leave from Cloudflare's network to the public
 * Internet, which does not route to the gateway operator's private networks (this Worker binds
 * no tunnel or VPC service), so a name that resolves to a private address reaches nothing of ours.
 * Pure: no I/O.
 */

export type TargetVerdict = { ok: true; url: URL } | { ok: false; reason: string };

/** Names that are local by construction, whatever DNS says. */
const LOCAL_SUFFIXES = [
  ".localhost",
  ".local",
  ".internal",
  ".home.arpa",
  ".lan",
  ".intranet",
  ".corp",
  ".in-addr.arpa",
  ".ip6.arpa",
];

/** `local`: the deployment is local development (wrangler.toml's `local` environment). */
export function checkTarget(raw: string, local: boolean): TargetVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "is not an absolute URL" };
  }
  if (url.username || url.password) return { ok: false, reason: "must not carry credentials (user:password@)" };
  if (url.hash) return { ok: false, reason: "must not have a fragment (#…)" };
  const host = url.hostname.toLowerCase();
  const loopback = isLoopbackHost(host);
  if (url.protocol === "http:") {
    if (!local) return { ok: false, reason: "must be https" };
    if (!loopback)
      return { ok: false, reason: "must be https (http is allowed only to a loopback address in local development)" };
    return { ok: true, url };
  }
  if (url.protocol !== "https:") return { ok: false, reason: "must be https" };
  if (loopback) return local ? { ok: true, url } : { ok: false, reason: "must not be a loopback address" };
  const refused = refusedHost(host);
  return refused ? { ok: false, reason: refused } : { ok: true, url };
}

function isLoopbackHost(host: string): boolean {
  if (host === "localhost" || host === "localhost." || host.endsWith(".localhost") || host.endsWith(".localhost."))
    return true;
  const v4 = parseIpv4(host);
  if (v4 !== null) return v4 >>> 24 === 127;
  const v6 = host.startsWith("[") ? parseIpv6(host.slice(1, -1)) : null;
  if (v6 === null) return false;
  if (v6.every((w, i) => w === (i === 7 ? 1 : 0))) return true;
  // Only the IPv4-mapped form is the host's own IPv4 loopback; the other forms route elsewhere.
  const embedded = embeddedIpv4(v6);
  return embedded?.form === "IPv4-mapped" && embedded.v4 >>> 24 === 127;
}

/** Why a (non-loopback) host is refused, or null. */
function refusedHost(host: string): string | null {
  if (host.startsWith("[")) {
    const v6 = parseIpv6(host.slice(1, -1));
    return v6 === null ? "is not a valid IPv6 address" : refusedIpv6Address(v6);
  }
  const v4 = parseIpv4(host);
  if (v4 !== null) return refusedIpv4(v4);
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  if (!name.includes(".")) return "must be a fully qualified name (a single-label name resolves inside a network)";
  if (LOCAL_SUFFIXES.some((suffix) => name.endsWith(suffix))) return "must not be a local-network name";
  if (name === "metadata.google.internal" || name === "metadata") return "must not be a cloud metadata address";
  return null;
}

/**
 * Why an IPv6 address (eight 16-bit words) is refused as a webhook target, or null. Pure; the
 * rules of the header, in order: the IPv4 address a carrying form holds, then the ranges refused
 * by name, then anything outside global unicast.
 */
export function refusedIpv6Address(words: readonly number[]): string | null {
  const embedded = embeddedIpv4(words);
  if (embedded !== null) {
    const why = refusedIpv4(embedded.v4);
    return why ? `${why} (carried in an ${embedded.form} IPv6 address)` : null;
  }
  if (words.every((x) => x === 0)) return "must not be the unspecified address";
  if (words.slice(0, 7).every((x) => x === 0) && words[7] === 1) return "must not be a loopback address";
  for (const [prefix, bits, why] of V6_REFUSED) if (inPrefix(words, prefix, bits)) return why;
  if ((words[0]! & 0xe000) !== 0x2000)
    return "must not be a reserved IPv6 address (only global unicast, 2000::/3, reaches the Internet)";
  return null;
}

/** Dotted IPv4 as a 32-bit number (the URL parser already normalised other spellings), else null. */
function parseIpv4(host: string): number | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.reduce((acc, p) => acc * 256 + Number(p), 0) >>> 0;
}

/** An IPv6 address as eight 16-bit words (`::` and a dotted IPv4 tail allowed; no zone), else null. */
function parseIpv6(text: string): number[] | null {
  if (text.includes("%")) return null;
  let body = text;
  const lastColon = text.lastIndexOf(":");
  if (lastColon >= 0 && text.slice(lastColon + 1).includes(".")) {
    // A dotted IPv4 tail (`::ffff:127.0.0.1`) is two words.
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === null) return null;
    body = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const words = (s: string) => (s === "" ? [] : s.split(":"));
  const head = words(halves[0]!);
  const rest = halves.length === 2 ? words(halves[1]!) : [];
  if (![...head, ...rest].every((w) => /^[0-9a-f]{1,4}$/i.test(w))) return null;
  const fixed = head.length + rest.length;
  if (halves.length === 1 ? fixed !== 8 : fixed > 7) return null;
  const zeros = new Array<number>(8 - fixed).fill(0);
  return [...head, ...(halves.length === 2 ? zeros.map(String) : []), ...rest].map((w) => parseInt(w, 16));
}

/** The IPv6 forms that carry an IPv4 address, and where: the IPv4 address and the form's name, else null. */
function embeddedIpv4(w: readonly number[]): { v4: number; form: string } | null {
  const low = ((w[6]! << 16) | w[7]!) >>> 0;
  const zeroTo = (n: number) => w.slice(0, n).every((x) => x === 0);
  // ::ffff:0:0/96 (RFC 4291 §2.5.5.2)
  if (zeroTo(5) && w[5] === 0xffff) return { v4: low, form: "IPv4-mapped" };
  // ::ffff:0:0:0/96 (RFC 2765 §2.1, SIIT)
  if (zeroTo(4) && w[4] === 0xffff && w[5] === 0) return { v4: low, form: "IPv4-translated" };
  // ::/96 but :: and ::1 (RFC 4291 §2.5.5.1, deprecated)
  if (zeroTo(6) && low > 1) return { v4: low, form: "IPv4-compatible" };
  // 64:ff9b::/96 (RFC 6052 §2.1, the well-known NAT64 prefix)
  if (w[0] === 0x64 && w[1] === 0xff9b && w.slice(2, 6).every((x) => x === 0)) return { v4: low, form: "NAT64" };
  // 2002::/16 (RFC 3056: the IPv4 address in bits 16-47)
  if (w[0] === 0x2002) return { v4: ((w[1]! << 16) | w[2]!) >>> 0, form: "6to4" };
  return null;
}

/** Whether the address's first `bits` bits are the prefix's (given as its leading words). */
function inPrefix(w: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i * 16 < bits; i++) {
    const take = Math.min(16, bits - i * 16);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if ((w[i]! & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

/** IPv6 ranges refused by name (IANA's special-purpose registry, RFC 4291), the narrower first. */
const V6_REFUSED: Array<[readonly number[], number, string]> = [
  [
    [0x64, 0xff9b, 0x1],
    48,
    "must not be a local-use NAT64 address (64:ff9b:1::/48: it translates to an IPv4 address inside a network)",
  ],
  [[0x100], 64, "must not be a discard-only address"],
  [[0xfc00], 7, "must not be a private (unique local) address"],
  [[0xfe80], 10, "must not be a link-local address"],
  [[0xfec0], 10, "must not be a site-local address"],
  [[0xff00], 8, "must not be a multicast address"],
  [[0x2001, 0x0000], 32, "must not be a Teredo address (2001::/32: it tunnels to an IPv4 address)"],
  [[0x2001], 23, "must not be an IETF protocol assignment address (2001::/23)"],
  [[0x2001, 0x0db8], 32, "must not be a documentation address"],
  [[0x3fff], 20, "must not be a documentation address"],
];

const V4_REFUSED: Array<[number, number, string]> = [
  [0x00000000, 8, "must not be an unspecified (0.0.0.0/8) address"],
  [0x0a000000, 8, "must not be a private address"],
  [0x64400000, 10, "must not be a shared (carrier-grade NAT) address"],
  [0x7f000000, 8, "must not be a loopback address"],
  [0xa9fe0000, 16, "must not be a link-local or metadata address"],
  [0xac100000, 12, "must not be a private address"],
  [0xc0000000, 24, "must not be a reserved (IETF protocol) address"],
  [0xc0000200, 24, "must not be a documentation address"],
  [0xc0586300, 24, "must not be a reserved (retired 6to4 relay anycast) address"],
  [0xc0a80000, 16, "must not be a private address"],
  [0xc6120000, 15, "must not be a benchmarking address"],
  [0xc6336400, 24, "must not be a documentation address"],
  [0xcb007100, 24, "must not be a documentation address"],
  [0xe0000000, 4, "must not be a multicast address"],
  [0xf0000000, 4, "must not be a reserved or broadcast address"],
];

function refusedIpv4(address: number): string | null {
  for (const [base, bits, why] of V4_REFUSED) {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if ((address & mask) >>> 0 === base) return why;
  }
  return null;
}
