import { describe, expect, it } from "vitest";
import { titleFrom } from "./dispatch";

describe("a conversation's title", () => {
  it("is its first message on one line, cut at 80 characters", () => {
    expect(titleFrom("  fix\n\tthe   build  ")).toBe("fix the build");
    expect(titleFrom("x".repeat(80))).toBe("x".repeat(80));
    expect(titleFrom("x".repeat(81))).toBe(`${"x".repeat(79)}…`);
    expect(titleFrom(" \n ")).toBe("New conversation");
  });
});
