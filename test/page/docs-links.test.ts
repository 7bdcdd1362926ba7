/// <reference types="vite/client" />
// The documents the code, tests and README cite live in this repository: every relative link and
// every `docs/…` path named in README, docs/ and the sources resolves in a clone.
import { describe, expect, it } from "vitest";

/** The repository's text files as vite reads them, by path from the root ("/docs/x.md"). */
const tree = import.meta.glob(["/README.md", "/docs/**/*", "/src/**/*", "/test/**/*.{ts,mjs,md}", "/scripts/*.mjs", "/public/**/*.{js,html,css}", "/bench/*", "/examples/*", "/wrangler.toml", "/package.json"], {
  query: "?raw",
  import: "default",
  eager: true,
}) as Record<string, string>;
const paths = Object.keys(tree);

/** A file or a folder of the repository (a folder: some file under it). */
function exists(path: string): boolean {
  const clean = `/${path.replace(/^\.?\//, "").replace(/\/$/, "")}`;
  return clean in tree || paths.some((p) => p.startsWith(`${clean}/`));
}

function resolveFrom(doc: string, target: string): string {
  const parts = doc.split("/").slice(1, -1);
  for (const piece of target.split("/")) {
    if (piece === "..") parts.pop();
    else if (piece !== "." && piece !== "") parts.push(piece);
  }
  return parts.join("/");
}

describe("documents at home", () => {
  it("README's and docs' relative links resolve", () => {
    const docs = paths.filter((p) => p.endsWith(".md") && !p.includes("/cli-bridge-transcripts/"));
    expect(docs).toContain("/README.md");
    const missing: string[] = [];
    for (const doc of docs) {
      for (const [, target] of tree[doc]!.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        if (!exists(resolveFrom(doc, target!))) missing.push(`${doc} → ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("every docs/… document the sources, tests and README name exists, and none points outside the repository", () => {
    const missing: string[] = [];
    const outside: string[] = [];
    for (const file of paths.filter((p) => !p.startsWith("/docs/cli-bridge-transcripts/") && p !== "/test/page/docs-links.test.ts")) {
      const text = tree[file]!;
      for (const [path] of text.matchAll(/\bdocs\/[A-Za-z0-9_-]+\.md\b/g)) if (!exists(path)) missing.push(`${file}: ${path}`);
      if (text.includes("../shared/")) outside.push(file);
    }
    expect(missing).toEqual([]);
    expect(outside).toEqual([]);
  });
});
