import { describe, expect, it } from "vitest";
import { InputLimit } from "./input-limit";

describe("InputLimit", () => {
  it("admits up to the frame rate in a second, refuses past it, and starts again the next second", () => {
    const limit = new InputLimit(1000, 3);
    expect([1, 2, 3].map(() => limit.admit(1, 10))).toEqual([true, true, true]);
    expect(limit.admit(1, 500)).toBe(false);
    expect(limit.admit(1, 1010)).toBe(true);
  });

  it("refuses past the byte rate", () => {
    const limit = new InputLimit(100, 50);
    expect(limit.admit(60, 0)).toBe(true);
    expect(limit.admit(60, 10)).toBe(false);
  });
});
