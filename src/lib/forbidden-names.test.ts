import { describe, expect, it } from "vitest";
import { forbiddenPaths, isForbiddenName } from "./forbidden-names";

describe("forbidden member names", () => {
  it("names each forbidden own member at any depth, arrays included, as JSON.parse leaves them", () => {
    const raw = JSON.parse(
      '{"a":{"__proto__":{"x":1}},"list":[{"ok":1},{"constructor":2}],"prototype":3,"fine":{"deep":{"y":0}}}',
    );
    expect(forbiddenPaths(raw, "data")).toEqual(["data.a.__proto__", "data.list[1].constructor", "data.prototype"]);
    expect(forbiddenPaths(raw, "")).toEqual(["a.__proto__", "list[1].constructor", "prototype"]);
  });

  it("finds nothing in values without them, nor in scalars", () => {
    expect(forbiddenPaths({ name: "proto", nested: [{ constructorName: 1 }] }, "data")).toEqual([]);
    expect(forbiddenPaths("__proto__", "data")).toEqual([]);
    expect(forbiddenPaths(null, "data")).toEqual([]);
  });

  it("tells a forbidden name from its look-alikes", () => {
    expect(["__proto__", "constructor", "prototype"].every(isForbiddenName)).toBe(true);
    expect(["proto", "Constructor", "__proto", "prototypes"].some(isForbiddenName)).toBe(false);
  });
});
