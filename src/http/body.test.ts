import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nestsDeeperThan } from "./body";

/** How deep arrays and objects nest in a value (a scalar is 0, `[]` and `{}` are 1). */
function depthOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  const items = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...items.map(depthOf));
}

describe("a JSON body's nesting, measured on its text", () => {
  it("agrees with the parsed value's depth for any JSON, brackets and escapes inside strings included", () => {
    const text = fc.string({ unit: fc.constantFrom("[", "]", "{", "}", '"', "\\", "a", "é") });
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        text,
        fc.integer(),
        fc.constant(null),
        fc.array(tie("node")),
        fc.dictionary(text, tie("node")),
      ),
    })).node;
    fc.assert(
      fc.property(value, fc.nat(12), (v, limit) => {
        expect(nestsDeeperThan(JSON.stringify(v), limit)).toBe(depthOf(v) > limit);
      }),
    );
  });

  it("stops at the bound however deep the text goes (no recursion: 100,000 levels)", () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    expect(nestsDeeperThan(deep, 64)).toBe(true);
    expect(nestsDeeperThan(`{"a":${"[".repeat(64)}${"]".repeat(64)}}`, 64)).toBe(true);
    expect(nestsDeeperThan(`{"a":${"[".repeat(63)}${"]".repeat(63)}}`, 64)).toBe(false);
  });
});
