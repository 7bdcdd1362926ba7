/**
 * Which URLs a webhook may be delivered to (README "Webhooks", target rules). Checked when an
 * endpoint is created, before every attempt and at every redirect hop:
 *  - https only when deployed; in local development (`npm start`, the tests) http too, but only
 *    to a loopback address;
 *  - no credentials in the URL, no fragment;
 *  - no literal address that is private, loopback (when deployed), link-local, unspecified,
 *    multicast, reserved or a cloud metadata address, in any IPv4 or IPv6 form (the URL parser
 *    normalises `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`; IPv4-mapped, IPv4-compatible,
 *    NAT64 and 6to4 addresses are checked by the IPv4 address they embed);
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
const LOCAL_SUFFIXES = [".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet", ".corp", ".in-addr.arpa", ".ip6.arpa"];

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
    if (!loopback) return { ok: false, reason: "must be https (http is allowed only to a loopback address in local development)" };
    return { ok: true, url };
  }
  if (url.protocol !== "https:") return { ok: false, reason: "must be https" };
  if (loopback) return local ? { ok: true, url } : { ok: false, reason: "must not be a loopback address" };
  const refused = refusedHost(host);
  return refused ? { ok: false, reason: refused } : { ok: true, url };
}

function isLoopbackHost(host: string): boolean {
  if (host === "localhost" || host === "localhost." || host.endsWith(".localhost") || host.endsWith(".localhost.")) return true;
  const v4 = parseIpv4(host);
  if (v4 !== null) return v4 >>> 24 === 127;
  const v6 = host.startsWith("[") ? parseIpv6(host.slice(1, -1)) : null;
  if (v6 === null) return false;
  if (v6.every((w, i) => w === (i === 7 ? 1 : 0))) return true;
  const embedded = embeddedIpv4(v6);
  return embedded !== null && embedded >>> 24 === 127;
}

/** Why a (non-loopback) host is refused, or null. */
function refusedHost(host: string): string | null {
  if (host.startsWith("[")) {
    const v6 = parseIpv6(host.slice(1, -1));
    if (v6 === null) return "is not a valid IPv6 address";
    const embedded = embeddedIpv4(v6);
    if (embedded !== null) {
      const why = refusedIpv4(embedded);
      return why ? `${why} (embedded in an IPv6 address)` : null;
    }
    return refusedIpv6(v6);
  }
  const v4 = parseIpv4(host);
  if (v4 !== null) return refusedIpv4(v4);
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  if (!name.includes(".")) return "must be a fully qualified name (a single-label name resolves inside a network)";
  if (LOCAL_SUFFIXES.some((suffix) => name.endsWith(suffix))) return "must not be a local-network name";
  if (name === "metadata.google.internal" || name === "metadata") return "must not be a cloud metadata address";
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

/** The IPv4 address an IPv6 address carries (mapped ::ffff:0:0/96, compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16), else null. */
function embeddedIpv4(w: number[]): number | null {
  const low = ((w[6]! << 16) | w[7]!) >>> 0;
  const zeroTo = (n: number) => w.slice(0, n).every((x) => x === 0);
  if (zeroTo(5) && w[5] === 0xffff) return low;
  if (zeroTo(6) && low > 1) return low;
  if (w[0] === 0x64 && w[1] === 0xff9b && w.slice(2, 6).every((x) => x === 0)) return low;
  if (w[0] === 0x2002) return ((w[1]! << 16) | w[2]!) >>> 0;
  return null;
}

const V4_REFUSED: Array<[number, number, string]> = [
  [0x00000000, 8, "must not be an unspecified (0.0.0.0/8) address"],
  [0x0a000000, 8, "must not be a private address"],
  [0x64400000, 10, "must not be a shared (carrier-grade NAT) address"],
  [0x7f000000, 8, "must not be a loopback address"],
  [0xa9fe0000, 16, "must not be a link-local or metadata address"],
  [0xac100000, 12, "must not be a private address"],
  [0xc0000000, 24, "must not be a reserved (IETF protocol) address"],
  [0xc0000200, 24, "must not be a documentation address"],
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

function refusedIpv6(w: number[]): string | null {
  if (w.every((x) => x === 0)) return "must not be the unspecified address";
  if (w.slice(0, 7).every((x) => x === 0) && w[7] === 1) return "must not be a loopback address";
  const first = w[0]!;
  if ((first & 0xfe00) === 0xfc00) return "must not be a private (unique local) address";
  if ((first & 0xffc0) === 0xfe80) return "must not be a link-local address";
  if ((first & 0xffc0) === 0xfec0) return "must not be a site-local address";
  if ((first & 0xff00) === 0xff00) return "must not be a multicast address";
  if (first === 0x2001 && w[1] === 0x0db8) return "must not be a documentation address";
  if (first === 0x0100 && w.slice(1, 4).every((x) => x === 0)) return "must not be a discard-only address";
  return null;
}
