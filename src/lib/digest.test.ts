import { describe, expect, it } from "vitest";
import { canonicalDigest, canonicalJson, stripUndefined } from "./digest";

describe("canonical JSON (RFC 8785)", () => {
  it("sorts keys by UTF-16 code units, recursively, without whitespace", () => {
    expect(canonicalJson({ b: 1, a: [{ d: true, c: null }], A: "x" })).toBe('{"A":"x","a":[{"c":null,"d":true}],"b":1}');
    // U+FB33 sorts after U+1F600 (surrogates 0xD83D…) in UTF-16 order, though not in code point order.
    expect(canonicalJson({ "\ufb33": 1, "\ud83d\ude00": 2 })).toBe('{"😀":2,"\ufb33":1}');
  });

  it("writes numbers as ECMAScript does", () => {
    expect(canonicalJson([1e21, 0.1, -0, 1.5e-7, 100])).toBe("[1e+21,0.1,0,1.5e-7,100]");
  });

  it("refuses undefined, non-finite numbers, lone surrogates, cycles and non-plain objects", () => {
    expect(() => canonicalJson({ a: undefined })).toThrow(/undefined at \$\.a/);
    expect(() => canonicalJson([Number.NaN])).toThrow(/non-finite/);
    expect(() => canonicalJson(Infinity)).toThrow(/non-finite/);
    expect(() => canonicalJson("\ud800")).toThrow(/lone surrogate/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/cycle/);
    expect(() => canonicalJson(new Date())).toThrow(/non-plain/);
    expect(() => canonicalJson(new Map())).toThrow(/non-plain/);
  });

  it("allows a shared (non-cyclic) reference twice", () => {
    const shared = { x: 1 };
    expect(canonicalJson([shared, shared])).toBe('[{"x":1},{"x":1}]');
  });

  it("digests as sha256: and 64 lowercase hex, independent of key order", async () => {
    const a = await canonicalDigest({ x: 1, y: [1, 2] });
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await canonicalDigest({ y: [1, 2], x: 1 })).toBe(a);
    expect(await canonicalDigest({ x: 2, y: [1, 2] })).not.toBe(a);
    // sha256 of "{}"
    expect(await canonicalDigest({})).toBe("sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  });

  it("stripUndefined drops absent optional fields so they can be hashed", () => {
    expect(stripUndefined({ a: 1, b: undefined, c: { d: undefined, e: [1] } })).toEqual({ a: 1, c: { e: [1] } });
  });
});
