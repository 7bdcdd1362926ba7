/// <reference types="vite/client" />
// The documents the code, tests and README cite live in this repository: every relative link and
// every `docs/…` path named in README, docs/ and the sources resolves in a clone, and so does every
// anchor they name: a heading of that page, by GitHub's rules for a heading's id.
import { describe, expect, it } from "vitest";

/** The repository's text files as vite reads them, by path from the root ("/docs/x.md"). */
const tree = import.meta.glob(
  [
    "/README.md",
    "/docs/**/*",
    "/src/**/*",
    "/test/**/*.{ts,mjs,md}",
    "/scripts/*.mjs",
    "/public/**/*.{js,html,css}",
    "/bench/*",
    "/bench/**/*.md",
    "/examples/*",
    "/wrangler.toml",
    "/package.json",
  ],
  {
    query: "?raw",
    import: "default",
    eager: true,
  },
) as Record<string, string>;
const paths = Object.keys(tree);
const SELF = "/test/page/docs-links.test.ts";

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

/**
 * A heading's id as GitHub makes it: the heading's text (a link's or an image's text, no tags), in
 * lower case, every character but letters, digits, marks, `_`, `-` and spaces dropped, spaces to
 * hyphens; a second heading with the same id gets `-1`, a third `-2`.
 */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]*>/g, "")
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a markdown page offers: its headings' ids (outside fenced code) and explicit `id`/`name`s. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === null || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence === null ? marker : null;
      continue;
    }
    if (fence !== null) continue;
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      found.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const [, id] of line.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) found.add(id!);
  }
  return found;
}

const ANCHOR = String.raw`[\p{L}\p{M}\p{N}_-]+`;
/** A markdown link's target: `](path#anchor)` or `](#anchor)`. */
const LINK = /\]\(([^)#\s]*)#([^)\s]*)\)/g;
/** A page named from the repository's root with an anchor, in any text: `docs/api.md#errors`, `README.md#run-it`. */
const CITATION = new RegExp(
  String.raw`(?<![\w./-])((?:README|(?:docs|bench|test|scripts|examples)/[\w./-]*[\w-])\.md)#(${ANCHOR})`,
  "gu",
);

function anchorMissing(page: string, anchor: string): boolean {
  const text = tree[`/${page}`];
  return text === undefined || !anchors(text).has(decodeURIComponent(anchor));
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
    for (const file of paths.filter((p) => !p.startsWith("/docs/cli-bridge-transcripts/") && p !== SELF)) {
      const text = tree[file]!;
      for (const [path] of text.matchAll(/\bdocs\/[A-Za-z0-9_-]+\.md\b/g))
        if (!exists(path)) missing.push(`${file}: ${path}`);
      if (text.includes("../shared/")) outside.push(file);
    }
    expect(missing).toEqual([]);
    expect(outside).toEqual([]);
  });

  it("every anchor a relative link names is a heading of the page it links to", () => {
    const docs = paths.filter((p) => p.endsWith(".md") && !p.includes("/cli-bridge-transcripts/"));
    const broken: string[] = [];
    for (const doc of docs) {
      for (const [, target, anchor] of tree[doc]!.matchAll(LINK)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const page = target === "" ? doc.slice(1) : resolveFrom(doc, target!);
        if (!page.endsWith(".md")) continue;
        if (anchorMissing(page, anchor!)) broken.push(`${doc} → ${target}#${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("every page#anchor the README, docs, sources, tests, scripts and benchmarks cite is a heading of that page", () => {
    const broken: string[] = [];
    for (const file of paths.filter((p) => !p.startsWith("/docs/cli-bridge-transcripts/") && p !== SELF)) {
      // A markdown link's target is relative to its page (the test above); what is left is named from the root.
      const text = file.endsWith(".md") ? tree[file]!.replace(/\]\([^)\s]*\)/g, "]()") : tree[file]!;
      for (const [, page, anchor] of text.matchAll(CITATION)) {
        if (anchorMissing(page!, anchor!)) broken.push(`${file}: ${page}#${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("a heading's id follows GitHub's rules", () => {
    expect(slug("The sandbox's life")).toBe("the-sandboxs-life");
    expect(slug("Public API (v1)")).toBe("public-api-v1");
    expect(slug("`npm start`: what it reads")).toBe("npm-start-what-it-reads");
    expect(slug("11. Lean delta frames: `message.part.delta`")).toBe("11-lean-delta-frames-messagepartdelta");
    expect(slug("[Webhooks](webhooks.md) and retries")).toBe("webhooks-and-retries");
    expect([...anchors("# A\n```sh\n# not a heading\n```\n## A\n### B ###\n")]).toEqual(["a", "a-1", "b"]);
  });
});
