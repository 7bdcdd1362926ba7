import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalDigest, canonicalJson, stripUndefined } from "./digest";

describe("canonical JSON (RFC 8785)", () => {
  it("sorts keys by UTF-16 code units, recursively, without whitespace", () => {
    expect(canonicalJson({ b: 1, a: [{ d: true, c: null }], A: "x" })).toBe(
      '{"A":"x","a":[{"c":null,"d":true}],"b":1}',
    );
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

describe("canonical JSON properties (fast-check)", () => {
  // Well-formed Unicode only (lone surrogates are refused, tested below): ASCII, BMP, astral, and
  // names JSON must escape.
  const key = fc.string({
    unit: fc.constantFrom("a", "b", "A", "_", "1", "é", "\ufb33", "😀", "\u0000", '"', "\\", " ", "\u2028"),
    maxLength: 4,
  });
  // Names without an escape, for properties that parse canonical text back: the runtime's
  // JSON.parse can read an escaped member name back as "\\" once its key cache holds one (a V8
  // bug, nodejs/node#63785; reproduced in this workerd with fast-check's seed 42).
  const plainKey = fc.string({
    unit: fc.constantFrom("a", "b", "A", "_", "1", "é", "\ufb33", "😀", " ", "\u2028"),
    maxLength: 4,
  });
  const jsonWith = (names: fc.Arbitrary<string>): fc.Arbitrary<unknown> =>
    fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constant(null),
        fc.boolean(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer(),
        fc.string({ unit: "grapheme", maxLength: 6 }),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(names, tie("value"), { maxKeys: 5 }),
      ),
    })).value;
  const json = jsonWith(key);

  /** The same value with every object's keys inserted in another order (given by `seed`). */
  function reorder(value: unknown, seed: number): unknown {
    if (Array.isArray(value)) return value.map((v, i) => reorder(v, seed + i));
    if (value === null || typeof value !== "object") return value;
    const entries = Object.entries(value);
    const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]!).reverse();
    // defineProperty: a "__proto__" key stays an own member, as JSON.parse leaves it.
    const out = {};
    for (const [k, v] of rotated)
      Object.defineProperty(out, k, {
        value: reorder(v, seed + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return out;
  }

  it("does not depend on key order, at any depth", () => {
    fc.assert(
      fc.property(json, fc.nat(), (value, seed) => {
        expect(canonicalJson(reorder(value, seed))).toBe(canonicalJson(value));
      }),
      { numRuns: 300 },
    );
  });

  it("is JSON that reads back as the same value, and is a fixed point", () => {
    fc.assert(
      fc.property(jsonWith(plainKey), (value) => {
        const text = canonicalJson(value);
        // Compared as canonical texts: toEqual mishandles an own "__proto__" member, which the
        // generator produces on purpose. -0 is written as 0 (Number::toString); nothing else changes.
        expect(canonicalJson(JSON.parse(JSON.stringify(value)))).toBe(text);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        // No whitespace between tokens: any raw control character would be inside a string, escaped.
        expect(text).not.toMatch(/[\n\r\t]/);
      }),
      { numRuns: 300 },
    );
  });

  it("orders object members by UTF-16 code units", () => {
    fc.assert(
      fc.property(fc.dictionary(key, fc.constant(0), { minKeys: 1, maxKeys: 8 }), (object) => {
        // Read the member names off the text: parsing it back would list integer-like names first.
        const keys = [...canonicalJson(object).matchAll(/"((?:[^"\\]|\\.)*)":0/g)].map(
          (m) => JSON.parse(`"${m[1]}"`) as string,
        );
        const sorted = [...Object.keys(object)].sort((a, b) => {
          for (let i = 0; i < Math.min(a.length, b.length); i++)
            if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.charCodeAt(i) - b.charCodeAt(i);
          return a.length - b.length;
        });
        expect(keys).toEqual(sorted);
      }),
      { numRuns: 300 },
    );
  });

  it("writes every finite number so that it reads back exactly, as ECMAScript does", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
        const text = canonicalJson(n);
        expect(Number(text)).toBe(n === 0 ? 0 : n);
        expect(text).toBe(String(n === 0 ? 0 : n));
        expect(text).toMatch(/^-?(0|[1-9]\d*)(\.\d+)?(e[+-]\d+)?$/);
      }),
      { numRuns: 500 },
    );
  });

  it("refuses a lone surrogate anywhere: in a value or in a key, at any depth", () => {
    const lone = fc.constantFrom("\ud800", "\udbff", "\udc00", "\udfff", "a\ud83d", "\ude00b");
    fc.assert(
      fc.property(json, lone, fc.boolean(), (value, bad, asKey) => {
        const poisoned = asKey ? { wrap: [value, { [bad]: 1 }] } : { wrap: [value, bad] };
        expect(() => canonicalJson(poisoned)).toThrow(/lone surrogate/);
      }),
      { numRuns: 200 },
    );
  });

  it("an object without a prototype is canonicalized like the plain object with the same members", () => {
    fc.assert(
      fc.property(fc.dictionary(key, json, { maxKeys: 5 }), (object) => {
        const bare = Object.assign(Object.create(null) as object, object);
        expect(canonicalJson(bare)).toBe(canonicalJson(object));
      }),
      { numRuns: 200 },
    );
  });

  it("digests equal exactly when the canonical texts are equal", async () => {
    await fc.assert(
      fc.asyncProperty(json, json, fc.nat(), async (a, b, seed) => {
        expect(await canonicalDigest(reorder(a, seed))).toBe(await canonicalDigest(a));
        if (canonicalJson(a) !== canonicalJson(b)) expect(await canonicalDigest(a)).not.toBe(await canonicalDigest(b));
      }),
      { numRuns: 100 },
    );
  });
});
