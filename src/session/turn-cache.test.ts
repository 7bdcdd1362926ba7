import { describe, expect, it } from "vitest";
import { executionIdFor, turnRequestDigest } from "./turn-cache";

describe("turn identity", () => {
  it("digests ignore absent optional fields and see every present one", async () => {
    expect(await turnRequestDigest({ message: "a" })).toBe(await turnRequestDigest({ message: "a", model: undefined }));
    expect(await turnRequestDigest({ message: "a" })).not.toBe(await turnRequestDigest({ message: "a", model: "m" }));
    expect(await turnRequestDigest({ message: "a", interactions: {} })).not.toBe(
      await turnRequestDigest({ message: "a" }),
    );
  });

  it("execution ids are deterministic per (session, turn) and never collide across splits", async () => {
    expect(await executionIdFor("s1", "t1")).toBe(await executionIdFor("s1", "t1"));
    expect(await executionIdFor("s1", "t1")).not.toBe(await executionIdFor("s1", "t2"));
    expect(await executionIdFor("ab", "c")).not.toBe(await executionIdFor("a", "bc"));
  });
});
