import { describe, expect, it } from "vitest";
import { backoffMs, retryAfterMsOf } from "./retry";

describe("waiting before trying again", () => {
  it("backs off exponentially up to a cap", () => {
    expect([0, 1, 2, 3, 10].map((a) => backoffMs(a, 100, 1000))).toEqual([0, 100, 200, 400, 1000]);
  });

  it("reads Retry-After as seconds or a date", () => {
    expect(retryAfterMsOf("120", 0)).toBe(120_000);
    expect(retryAfterMsOf(new Date(90_000).toUTCString(), 30_000)).toBe(60_000);
    expect(retryAfterMsOf("soon", 0)).toBeUndefined();
    expect(retryAfterMsOf(null, 0)).toBeUndefined();
  });
});
