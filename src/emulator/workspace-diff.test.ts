/** The workspace diff (workspace-diff.ts): statuses, renames by content, binaries, unified hunks, the byte bound. */
import { describe, expect, it } from "vitest";
import { diffTrees, isBinary, unifiedDiff } from "./workspace-diff";

const t = (s: string) => new TextEncoder().encode(s);
const tree = (files: Record<string, Uint8Array | string>) =>
  new Map(Object.entries(files).map(([p, v]) => [p, typeof v === "string" ? t(v) : v] as const));

describe("the workspace diff", () => {
  it("marks bytes with a NUL or not valid UTF-8 as binary, text (any script) as not", () => {
    expect(isBinary(new Uint8Array([0x89, 0x50, 0x00]))).toBe(true);
    expect(isBinary(new Uint8Array([0xc3, 0x28]))).toBe(true);
    expect(isBinary(t("héllo — 世界\n"))).toBe(false);
    expect(isBinary(new Uint8Array())).toBe(false);
  });

  it("writes a unified diff with three lines of context, separate hunks for far changes", () => {
    const before = `${Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n")}\n`;
    const after = before.replace("line 2\n", "line two\n").replace("line 18\n", "").concat("line 21\n");
    expect(unifiedDiff(before, after, "f.txt", "f.txt")).toBe(
      [
        "--- a/f.txt",
        "+++ b/f.txt",
        "@@ -1,5 +1,5 @@",
        " line 1",
        "-line 2",
        "+line two",
        " line 3",
        " line 4",
        " line 5",
        "@@ -15,6 +15,6 @@",
        " line 15",
        " line 16",
        " line 17",
        "-line 18",
        " line 19",
        " line 20",
        "+line 21",
        "",
      ].join("\n"),
    );
    expect(unifiedDiff("", "a\nb\n", "", "new.txt")).toBe("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n");
    expect(unifiedDiff("a\n", "", "old.txt", "")).toBe("--- a/old.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-a\n");
  });

  it("finds added, modified, deleted and renamed files (a rename: the same bytes under another path), binaries without a diff", () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]);
    const { files, truncated } = diffTrees(
      tree({ "a.txt": "one\n", "old/name.md": "same\n", "logo.png": png, "gone.txt": "bye\n", "keep.txt": "k\n" }),
      tree({
        "a.txt": "two\n",
        "new/name.md": "same\n",
        "logo.png": new Uint8Array([...png, 3]),
        "added.txt": "hi\n",
        "keep.txt": "k\n",
      }),
      1 << 20,
    );
    expect(truncated).toBe(false);
    expect(files.map((f) => [f.path, f.status, f.binary, f.diff !== undefined])).toEqual([
      ["a.txt", "modified", false, true],
      ["added.txt", "added", false, true],
      ["gone.txt", "deleted", false, true],
      ["logo.png", "modified", true, false],
      ["new/name.md", "renamed", false, false],
    ]);
    expect(files.find((f) => f.status === "renamed")).toMatchObject({
      from: "old/name.md",
      sizeBefore: 5,
      sizeAfter: 5,
    });
    expect(files.find((f) => f.path === "logo.png")).toMatchObject({ sizeBefore: 7, sizeAfter: 8 });
    expect(files[0]!.diff).toBe("--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-one\n+two\n");
  });

  it("leaves the diffs out past maxBytes in all, and says truncated", () => {
    const { files, truncated } = diffTrees(
      tree({}),
      tree({ "a.txt": "x\n".repeat(10), "b.txt": "y\n".repeat(50) }),
      80,
    );
    expect(truncated).toBe(true);
    expect(files[0]!.diff).toBeDefined();
    expect(files[1]!.diff).toBeUndefined();
    expect(files.map((f) => f.status)).toEqual(["added", "added"]);
  });

  it("shows a change too large for the line table as the middle removed and added whole", () => {
    const a = Array.from({ length: 2100 }, (_, i) => `a${i}`).join("\n");
    const b = Array.from({ length: 2100 }, (_, i) => `b${i}`).join("\n");
    const diff = unifiedDiff(`keep\n${a}\n`, `keep\n${b}\n`, "x", "x");
    expect(diff.split("\n").filter((l) => l.startsWith("-a")).length).toBe(2100);
    expect(diff.split("\n").filter((l) => l.startsWith("+b")).length).toBe(2100);
  });
});
