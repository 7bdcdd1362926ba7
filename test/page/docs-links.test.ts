// The documents the code, tests and README cite live in this repository: every relative link and
// every `docs/…` path named in README, docs/ and the sources resolves in a clone.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(__dirname, "..", "..");

function files(dir: string, ext: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name);
    if (name === "node_modules" || name === "vendor" || name === "cli-bridge-transcripts") continue;
    if (statSync(join(root, path)).isDirectory()) out.push(...files(path, ext));
    else if (ext.test(name)) out.push(path);
  }
  return out;
}

describe("documents at home", () => {
  it("README's and docs' relative links resolve", () => {
    const missing: string[] = [];
    for (const doc of ["README.md", ...files("docs", /\.md$/), ...files("bench", /\.md$/), ...files("test", /\.md$/)]) {
      const text = readFileSync(join(root, doc), "utf8");
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        if (!existsSync(resolve(root, dirname(doc), target!))) missing.push(`${doc} → ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("every docs/… document the sources, tests and README name exists, and none points outside the repository", () => {
    const missing: string[] = [];
    const outside: string[] = [];
    for (const file of ["README.md", ...files("src", /\.(ts|js|mjs)$/), ...files("test", /\.(ts|mjs)$/), ...files("scripts", /\.mjs$/), ...files("public", /\.js$/), ...files("bench", /\.(mjs|md)$/)]) {
      const text = readFileSync(join(root, file), "utf8");
      for (const [path] of text.matchAll(/\bdocs\/[A-Za-z0-9_-]+\.md\b/g)) if (!existsSync(join(root, path))) missing.push(`${file}: ${path}`);
      if (text.includes("../shared/")) outside.push(file);
    }
    expect(missing).toEqual([]);
    expect(outside.filter((f) => f !== "test/page/docs-links.test.ts")).toEqual([]);
  });
});
