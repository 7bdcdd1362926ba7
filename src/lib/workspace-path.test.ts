import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { workspacePath } from "./workspace-path";

const ok = (raw: string) => {
  const r = workspacePath(raw);
  return r.ok ? r.path : null;
};

describe("a workspace path", () => {
  it("normalized: . for the root, redundant separators and . segments gone", () => {
    expect(ok("")).toBe(".");
    expect(ok(".")).toBe(".");
    expect(ok("./")).toBe(".");
    expect(ok("src//lib/./x.ts")).toBe("src/lib/x.ts");
    expect(ok("src/")).toBe("src");
    expect(ok("a file with spaces.md")).toBe("a file with spaces.md");
    expect(ok("ünïcødé/😀.txt")).toBe("ünïcødé/😀.txt");
  });

  it("refused when it leaves the workspace, is absolute, or carries control characters or backslashes", () => {
    for (const raw of [
      "..",
      "../etc/passwd",
      "src/../../x",
      "src/../x",
      "/etc/passwd",
      "C:/Windows",
      "c:x",
      "src\\..\\x",
      "\\\\host\\share",
      "a\nb",
      "a\u0000b",
      "a\u0085b",
      `${"a".repeat(256)}/x`,
      "a/".repeat(2100),
    ])
      expect(workspacePath(raw).ok, JSON.stringify(raw)).toBe(false);
  });

  it("whatever it is given, an accepted path has no .., no empty or . segment, no leading / and no control character", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 80 }), (raw) => {
        const r = workspacePath(raw);
        if (!r.ok) return;
        if (r.path === ".") return;
        const segments = r.path.split("/");
        expect(segments.every((s) => s !== "" && s !== "." && s !== "..")).toBe(true);
        expect(r.path.startsWith("/")).toBe(false);
        // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
        expect(/[\u0000-\u001f\u007f-\u009f\\]/.test(r.path)).toBe(false);
        // Normalizing twice changes nothing.
        expect(ok(r.path)).toBe(r.path);
      }),
    );
  });
});
