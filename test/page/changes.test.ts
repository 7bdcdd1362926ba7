/**
 * What the agent changed (public/lib/changes.js), in Node: the line diff of an edit's old text
 * against its new text; a write of a new file is all additions; a write over a file whose earlier
 * content is unknown says so and claims no counts; each provider's tool shape is read; only
 * completed calls count; a turn's changes are grouped by file with their sums.
 */
import { describe, expect, it } from "vitest";
import { changedFiles, diffText, lineDiff, patchChanges, toolChanges } from "../../public/lib/changes.js";

const tool = (tool: string, input: unknown, extra: Record<string, unknown> = {}) => ({
  kind: "tool",
  tool,
  status: "completed",
  input,
  ...extra,
});
const ops = (diff: { op: string }[]) => diff.map((l) => l.op).join("");

describe("the line diff", () => {
  it("keeps common lines, removes then adds what changed", () => {
    const diff = lineDiff("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n");
    expect(diffText(diff)).toBe(" a\n-b\n+B\n c\n d\n+e");
  });

  it("is the longest common subsequence in the middle too", () => {
    const diff = lineDiff("x\n1\n2\n3\ny", "x\n2\n3\n4\ny");
    expect(diffText(diff)).toBe(" x\n-1\n 2\n 3\n+4\n y");
  });

  it("from nothing is all additions, to nothing all removals, same text all context", () => {
    expect(ops(lineDiff("", "one\ntwo\n"))).toBe("++");
    expect(ops(lineDiff("one\ntwo", ""))).toBe("--");
    expect(ops(lineDiff("one\r\ntwo\r\n", "one\ntwo"))).toBe("  ");
  });

  it("stays linear for a large rewrite: everything removed, then everything added", () => {
    const before = Array.from({ length: 3000 }, (_, i) => `old ${i}`).join("\n");
    const after = Array.from({ length: 3000 }, (_, i) => `new ${i}`).join("\n");
    const diff = lineDiff(before, after);
    expect(diff.filter((l) => l.op === "-")).toHaveLength(3000);
    expect(diff.filter((l) => l.op === "+")).toHaveLength(3000);
    expect(diff[0]!.op).toBe("-");
    expect(diff[5999]!.op).toBe("+");
  });
});

describe("one tool call's changes", () => {
  it("OpenCode's edit: the diff of oldString → newString, with its counts", () => {
    const [change] = toolChanges(
      tool("edit", {
        filePath: "src/a.ts",
        oldString: "const a = 1;\nconst b = 2;",
        newString: "const a = 1;\nconst b = 3;\nconst c = 4;",
      }),
    );
    expect(change).toMatchObject({ path: "src/a.ts", action: "edited", added: 2, removed: 1, note: null });
    expect(diffText(change!.diff!)).toBe(" const a = 1;\n-const b = 2;\n+const b = 3;\n+const c = 4;");
  });

  it("Claude's Edit and MultiEdit (file_path, old_string, new_string), and a str_replace editor's", () => {
    expect(toolChanges(tool("Edit", { file_path: "/w/x.py", old_string: "a", new_string: "b" }))[0]).toMatchObject({
      path: "/w/x.py",
      added: 1,
      removed: 1,
    });
    const [multi] = toolChanges(
      tool("MultiEdit", {
        file_path: "m.js",
        edits: [
          { old_string: "1", new_string: "2" },
          { old_string: "3", new_string: "4\n5" },
        ],
      }),
    );
    expect(multi).toMatchObject({ added: 3, removed: 2 });
    expect(diffText(multi!.diff!)).toBe("-1\n+2\n@@\n-3\n+4\n+5");
    expect(
      toolChanges(
        tool("str_replace_based_edit_tool", { command: "str_replace", path: "p.md", old_str: "x", new_str: "y" }),
      )[0],
    ).toMatchObject({ path: "p.md", added: 1, removed: 1 });
  });

  it("an edit of every occurrence does not claim counts", () => {
    const [change] = toolChanges(tool("edit", { filePath: "a", oldString: "x", newString: "y", replaceAll: true }));
    expect(change).toMatchObject({ added: null, removed: null });
    expect(change!.note).toMatch(/every occurrence/);
    expect(change!.diff).not.toBeNull();
  });

  it("a write of a new file is all additions (the provider said it is new)", () => {
    const [opencode] = toolChanges(
      tool("write", { filePath: "new.ts", content: "a\nb\nc\n" }, { metadata: { exists: false } }),
    );
    expect(opencode).toMatchObject({ path: "new.ts", action: "created", added: 3, removed: 0 });
    expect(diffText(opencode!.diff!)).toBe("+a\n+b\n+c");
    const [claude] = toolChanges(
      tool("Write", { file_path: "n.md", content: "x" }, { output: "File created successfully at: n.md" }),
    );
    expect(claude).toMatchObject({ action: "created", added: 1, removed: 0 });
  });

  it("a write over a file whose earlier content is unknown says so: no diff, no counts, the content", () => {
    for (const extra of [{ metadata: { exists: true } }, {}, { output: "Wrote file successfully." }]) {
      const [change] = toolChanges(tool("write", { filePath: "README.md", content: "# New\n" }, extra));
      expect(change).toMatchObject({
        path: "README.md",
        action: "written",
        added: null,
        removed: null,
        diff: null,
        content: "# New\n",
      });
      expect(change!.note).toMatch(/earlier content is not reported/);
    }
  });

  it("only a completed call counts; a tool that writes no file has no changes", () => {
    for (const status of ["pending", "running", "error"])
      expect(toolChanges({ ...tool("edit", { filePath: "a", oldString: "x", newString: "y" }), status })).toEqual([]);
    expect(toolChanges(tool("read", { filePath: "a" }))).toEqual([]);
    expect(toolChanges(tool("bash", { command: "rm -rf x" }))).toEqual([]);
    expect(toolChanges(tool("edit", { filePath: "a" }))).toEqual([]); // no old/new text: nothing known
    expect(toolChanges({ kind: "text" })).toEqual([]);
  });
});

describe("a patch", () => {
  it("in the unified format: each file, created, edited and deleted, with its counts", () => {
    const patch = [
      "diff --git a/src/a.ts b/src/a.ts",
      "index 1111111..2222222 100644",
      "--- a/src/a.ts",
      "+++ b/src/a.ts",
      "@@ -1,3 +1,3 @@",
      " keep",
      "-old",
      "--- a removed line that looks like a header",
      "+new",
      "@@ -10,2 +10,2 @@",
      " later",
      "--- /dev/null",
      "+++ b/src/new.ts",
      "@@ -0,0 +1,2 @@",
      "+one",
      "+two",
      "--- a/gone.txt",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-bye",
    ].join("\n");
    const files = patchChanges(patch);
    expect(files.map((f) => [f.path, f.action, f.added, f.removed])).toEqual([
      ["src/a.ts", "edited", 1, 2],
      ["src/new.ts", "created", 2, 0],
      ["gone.txt", "deleted", 0, 1],
    ]);
    expect(diffText(files[0]!.diff!)).toBe(
      " keep\n-old\n--- a removed line that looks like a header\n+new\n@@ -10,2 +10,2 @@\n later",
    );
  });

  it("in the *** Begin Patch format, through the patch tools' inputs", () => {
    const patchText = [
      "*** Begin Patch",
      "*** Add File: hello.txt",
      "+Hello",
      "*** Update File: src/app.py",
      "*** Move to: src/main.py",
      "@@ def f():",
      "-    return 1",
      "+    return 2",
      "*** Delete File: old.txt",
      "*** End Patch",
    ].join("\n");
    for (const block of [
      tool("patch", { patchText }),
      tool("apply_patch", { input: patchText }),
      tool("apply_patch", patchText),
    ]) {
      expect(toolChanges(block).map((f) => [f.path, f.action, f.added, f.removed, f.note])).toEqual([
        ["hello.txt", "created", 1, 0, null],
        ["src/main.py", "edited", 1, 1, "Moved from src/app.py."],
        ["old.txt", "deleted", 0, null, "Deleted; its content is not reported."],
      ]);
    }
  });
});

describe("a turn's changed files", () => {
  it("groups the changes by file in the order first changed, summing counts; unknown stays unknown", () => {
    const files = changedFiles([
      tool("write", { filePath: "a.ts", content: "1\n2\n" }, { metadata: { exists: false } }),
      { kind: "text" },
      tool("edit", { filePath: "b.ts", oldString: "x", newString: "y" }),
      tool("edit", { filePath: "a.ts", oldString: "2", newString: "2\n3" }),
      { ...tool("edit", { filePath: "c.ts", oldString: "x", newString: "y" }), status: "error" },
      tool("write", { filePath: "b.ts", content: "z" }),
    ]);
    expect(files.map((f) => [f.path, f.added, f.removed, f.changes.length])).toEqual([
      ["a.ts", 3, 0, 2],
      ["b.ts", null, null, 2],
    ]);
  });
});
