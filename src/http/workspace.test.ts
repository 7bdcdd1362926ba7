import { describe, expect, it } from "vitest";
import type { WorkspaceEntry } from "../providers/provider";
import { checkedPath, listingOf } from "./workspace";

const entry = (name: string, kind: WorkspaceEntry["kind"] = "file"): WorkspaceEntry => ({
  name,
  path: name,
  kind,
  size: null,
  modified: null,
});

describe("a listing", () => {
  it("directories first, then the rest by name (code units)", () => {
    const listed = listingOf(".", [
      entry("b.ts"),
      entry("z", "dir"),
      entry("A.md"),
      entry("link", "symlink"),
      entry("a", "dir"),
    ]);
    expect(listed.entries.map((e) => e.name)).toEqual(["a", "z", "A.md", "b.ts", "link"]);
    expect(listed.truncated).toBe(false);
  });

  it("bounded: the first entries in that order, truncated when there were more", () => {
    const many = Array.from({ length: 5 }, (_, i) => entry(`f${4 - i}`));
    expect(listingOf("src", many, 3)).toEqual({
      path: "src",
      entries: [entry("f0"), entry("f1"), entry("f2")],
      truncated: true,
    });
    expect(listingOf("src", many.slice(0, 3), 3).truncated).toBe(false);
  });
});

describe("a path from a request", () => {
  it("the root when absent; refused 400 path_invalid naming why", () => {
    expect(checkedPath(undefined)).toBe(".");
    expect(checkedPath("./src//a.ts")).toBe("src/a.ts");
    expect(() => checkedPath("../x")).toThrow(expect.objectContaining({ status: 400, code: "path_invalid" }));
  });
});
