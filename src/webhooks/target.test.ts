import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkTarget, refusedIpv6Address } from "./target";

const verdict = (url: string, local = false) => {
  const v = checkTarget(url, local);
  return v.ok ? "ok" : v.reason;
};

describe("webhook targets when deployed", () => {
  it("accepts a public https URL, with a port and a path", () => {
    expect(verdict("https://hooks.example.com/agent?x=1")).toBe("ok");
    expect(verdict("https://203.0.114.9:8443/in")).toBe("ok");
    expect(verdict("https://[2606:4700::1111]/in")).toBe("ok");
  });

  it("refuses anything but https, credentials and fragments", () => {
    expect(verdict("http://hooks.example.com/")).toBe("must be https");
    expect(verdict("ws://hooks.example.com/")).toBe("must be https");
    expect(verdict("file:///etc/passwd")).toBe("must be https");
    expect(verdict("https://a:b@hooks.example.com/")).toContain("credentials");
    expect(verdict("https://hooks.example.com/#x")).toContain("fragment");
    expect(verdict("hooks.example.com/in")).toBe("is not an absolute URL");
  });

  it.each([
    ["https://127.0.0.1/", "loopback"],
    ["https://127.9.9.9/", "loopback"],
    ["https://localhost/", "loopback"],
    ["https://LOCALHOST./", "loopback"],
    ["https://api.localhost/", "loopback"],
    ["https://[::1]/", "loopback"],
    ["https://[::ffff:127.0.0.1]/", "loopback"],
    ["https://0x7f.1/", "loopback"],
    ["https://2130706433/", "loopback"],
    ["https://0177.0.0.1/", "loopback"],
    ["https://10.0.0.1/", "private"],
    ["https://172.16.5.4/", "private"],
    ["https://172.31.255.255/", "private"],
    ["https://192.168.1.1/", "private"],
    ["https://100.64.0.1/", "carrier-grade NAT"],
    ["https://169.254.169.254/", "metadata"],
    ["https://169.254.1.1/", "link-local"],
    ["https://0.0.0.0/", "unspecified"],
    ["https://224.0.0.1/", "multicast"],
    ["https://255.255.255.255/", "broadcast"],
    ["https://192.0.2.10/", "documentation"],
    ["https://[::]/", "unspecified"],
    ["https://[fc00::1]/", "unique local"],
    ["https://[fd00:ec2::254]/", "unique local"],
    ["https://[fe80::1]/", "link-local"],
    ["https://[ff02::1]/", "multicast"],
    ["https://[2001:db8::1]/", "documentation"],
    ["https://[::ffff:10.0.0.1]/", "private"],
    ["https://[::ffff:a9fe:a9fe]/", "metadata"],
    ["https://[64:ff9b::a00:1]/", "private"],
    ["https://[2002:c0a8:101::1]/", "private"],
    ["https://[::10.0.0.1]/", "private"],
    // The probe's (issue 36 item 19): IPv4-translated, local-use NAT64, Teredo, the newer documentation prefix.
    ["https://[::ffff:0:10.0.0.1]/", "private"],
    ["https://[::ffff:0:a9fe:a9fe]/", "metadata"],
    ["https://[64:ff9b:1::a9fe:a9fe]/", "local-use NAT64"],
    ["https://[64:ff9b::10.0.0.1]/", "private"],
    ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"],
    ["https://[2001:2::1]/", "IETF protocol assignment"],
    ["https://[3fff::1]/", "documentation"],
    ["https://[5f00::1]/", "reserved IPv6"],
    ["https://[100::1]/", "discard-only"],
    ["https://[2002:a9fe:a9fe::1]/", "metadata"],
    ["https://192.88.99.1/", "6to4 relay"],
    ["https://intranet/", "fully qualified"],
    ["https://printer.local/", "local-network"],
    ["https://db.internal/", "local-network"],
    ["https://metadata.google.internal/", "local-network"],
    ["https://nas.home.arpa/", "local-network"],
    ["https://1.0.0.10.in-addr.arpa/", "local-network"],
  ])("refuses %s (%s)", (url, why) => {
    expect(verdict(url)).toContain(why);
  });

  it("a look-alike of a refused range is not refused", () => {
    expect(verdict("https://172.32.0.1/")).toBe("ok");
    expect(verdict("https://11.0.0.1/")).toBe("ok");
    expect(verdict("https://169.255.0.1/")).toBe("ok");
    expect(verdict("https://local.example.com/")).toBe("ok");
    expect(verdict("https://localhost.example.com/")).toBe("ok");
  });
});

describe("webhook targets in local development", () => {
  it("allows http and https to loopback only", () => {
    expect(verdict("http://127.0.0.1:9999/hook", true)).toBe("ok");
    expect(verdict("http://localhost:9999/hook", true)).toBe("ok");
    expect(verdict("http://[::1]:9999/hook", true)).toBe("ok");
    expect(verdict("https://localhost/hook", true)).toBe("ok");
    expect(verdict("http://hooks.example.com/", true)).toContain("only to a loopback address");
    expect(verdict("http://10.0.0.1/", true)).toContain("only to a loopback address");
  });

  it("still refuses private, link-local and metadata addresses", () => {
    expect(verdict("https://10.0.0.1/", true)).toContain("private");
    expect(verdict("https://169.254.169.254/", true)).toContain("metadata");
    expect(verdict("https://[fe80::1]/", true)).toContain("link-local");
  });
});

/** Eight words as an IPv6 literal, spelled one of the ways RFC 4291 allows (full, leading zeros, `::`, a dotted tail, upper case). */
function spell(words: number[], style: { zeros: boolean; compress: boolean; dotted: boolean; upper: boolean }): string {
  const hex = (w: number) => (style.zeros ? w.toString(16).padStart(4, "0") : w.toString(16));
  let parts = words.map(hex);
  if (style.dotted)
    parts = [...parts.slice(0, 6), `${words[6]! >> 8}.${words[6]! & 255}.${words[7]! >> 8}.${words[7]! & 255}`];
  let text = parts.join(":");
  if (style.compress) {
    // The longest run of zero words (of those spelled as hex) becomes `::`.
    let best: [number, number] = [-1, 0];
    for (let i = 0; i < (style.dotted ? 6 : 8); i++) {
      let j = i;
      while (j < (style.dotted ? 6 : 8) && words[j] === 0) j++;
      if (j - i > best[1]) best = [i, j - i];
    }
    if (best[1] > 1) text = `${parts.slice(0, best[0]).join(":")}::${parts.slice(best[0] + best[1]).join(":")}`;
  }
  return style.upper ? text.toUpperCase() : text;
}

const word = fc.integer({ min: 0, max: 0xffff });
const words = (...head: number[]) =>
  fc.array(word, { minLength: 8 - head.length, maxLength: 8 - head.length }).map((tail) => [...head, ...tail]);
const ipv4 = fc.integer({ min: 0, max: 0xffffffff });
const dotted = (v4: number) => [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255].join(".");
const style = fc.record({ zeros: fc.boolean(), compress: fc.boolean(), dotted: fc.boolean(), upper: fc.boolean() });

describe("webhook targets: IPv6, for any address (property tests)", () => {
  it("an address's verdict does not depend on how it is spelled", () => {
    fc.assert(
      fc.property(words(), style, (w, how) => {
        expect(verdict(`https://[${spell(w, how)}]/`)).toBe(
          verdict(`https://[${spell(w, { zeros: false, compress: false, dotted: false, upper: false })}]/`),
        );
      }),
      { numRuns: 500 },
    );
  });

  it("a form that carries an IPv4 address is refused exactly when that IPv4 address is, naming why", () => {
    fc.assert(
      fc.property(ipv4, words(), style, (v4, rest, how) => {
        const [hi, lo] = [v4 >>> 16, v4 & 0xffff];
        const forms = [
          [0, 0, 0, 0, 0, 0xffff, hi, lo],
          [0, 0, 0, 0, 0xffff, 0, hi, lo],
          [0x64, 0xff9b, 0, 0, 0, 0, hi, lo],
          [0x2002, hi, lo, ...rest.slice(3)],
          ...(v4 > 1 ? [[0, 0, 0, 0, 0, 0, hi, lo]] : []),
        ];
        const own = checkTarget(`https://${dotted(v4)}/`, false);
        for (const form of forms) {
          const carried = checkTarget(`https://[${spell(form, how)}]/`, false);
          if (own.ok) expect(carried.ok, spell(form, how)).toBe(true);
          else expect(carried.ok ? "ok" : carried.reason, spell(form, how)).toContain(own.reason);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses every address of the ranges that reach no public host, and every address outside global unicast", () => {
    const refused = fc.oneof(
      words(0x64, 0xff9b, 1),
      words(0x2001, 0),
      words().map((w) => [0x2001, w[1]! & 0x01ff, ...w.slice(2)]),
      words(0x2001, 0xdb8),
      words().map((w) => [0x3fff, w[1]! & 0x0fff, ...w.slice(2)]),
      words().map((w) => [0xfc00 | (w[0]! & 0x01ff), ...w.slice(1)]),
      words().map((w) => [0xfe80 | (w[0]! & 0x007f), ...w.slice(1)]),
      words().map((w) => [0xff00 | (w[0]! & 0x00ff), ...w.slice(1)]),
      // Outside 2000::/3 (the forms that carry an IPv4 address aside).
      words().filter(
        (w) => (w[0]! & 0xe000) !== 0x2000 && !(w[0] === 0x64 && w[1] === 0xff9b) && w.slice(0, 4).some((x) => x !== 0),
      ),
    );
    fc.assert(
      fc.property(refused, (w) => {
        expect(refusedIpv6Address(w), w.map((x) => x.toString(16)).join(":")).not.toBeNull();
      }),
      { numRuns: 1000 },
    );
  });

  it("accepts global unicast outside the special-purpose ranges", () => {
    // 2400:: up to 3ffe:ffff:…: global unicast, short of 3fff::/20 (documentation, refused above).
    const open = words().map((w) => [0x2400 + (w[0]! % 0x1bff), ...w.slice(1)]);
    fc.assert(
      fc.property(open, style, (w, how) => {
        expect(verdict(`https://[${spell(w, how)}]/`)).toBe("ok");
      }),
      { numRuns: 500 },
    );
  });
});
