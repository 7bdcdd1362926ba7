/// <reference types="vite/client" />
// The chat page's module graph stays flat: the browser finds a module's imports only once it has
// loaded it, so every level of imports is one more round trip before the page runs. Controllers
// (public/controllers/) are imported by app.js alone, never by one another or by lib/ or views/,
// and no module of the page is further from app.js than the markdown renderer has always been.
// And index.html preloads the whole graph (`<link rel="modulepreload">`, written by
// scripts/vendor.mjs), so the browser fetches every level at once: the list must be the graph.
import { describe, expect, it } from "vitest";
import highlight from "../../node_modules/@highlightjs/cdn-assets/package.json";
import dompurify from "../../node_modules/dompurify/package.json";
import marked from "../../node_modules/marked/package.json";
import html from "../../public/index.html?raw";
import { staticImports } from "./imports.mjs";

const sources = import.meta.glob(["/public/**/*.js", "!/public/vendor/**"], {
  query: "?raw",
  import: "default",
  eager: true,
}) as Record<string, string>;

/** The page modules a module imports statically (relative specifiers), as paths from the root. */
function importsOf(path: string): string[] {
  return staticImports(sources[path] ?? "").relative.map((spec) => new URL(spec, `file://${path}`).pathname);
}

/** Each module's distance from app.js in imports (app.js itself: 0). */
function distances(): Map<string, number> {
  const out = new Map([["/public/app.js", 0]]);
  const queue = ["/public/app.js"];
  for (let path = queue.shift(); path; path = queue.shift()) {
    for (const next of importsOf(path)) {
      if (out.has(next)) continue;
      out.set(next, (out.get(path) ?? 0) + 1);
      queue.push(next);
    }
  }
  return out;
}

/** index.html's import map: specifier → URL. */
const importMap = JSON.parse(/<script type="importmap">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "{}").imports as Record<
  string,
  string
>;

/** The bare specifiers (the libraries) a module imports statically. */
function librariesOf(path: string): string[] {
  return staticImports(sources[path] ?? "").bare;
}

describe("the page's module graph", () => {
  it("resolves: every import names a module of the page", () => {
    for (const path of Object.keys(sources))
      for (const target of importsOf(path)) expect(sources, `${path} imports ${target}`).toHaveProperty([target]);
  });

  it("has its controllers imported by app.js alone", () => {
    const controllers = Object.keys(sources).filter((p) => p.startsWith("/public/controllers/"));
    expect(controllers.length).toBeGreaterThan(0);
    for (const controller of controllers) {
      const importers = Object.keys(sources).filter((p) => importsOf(p).includes(controller));
      expect(importers, controller).toEqual(["/public/app.js"]);
    }
  });

  it("keeps every module within the markdown renderer's distance from app.js", () => {
    const depth = distances();
    const markdown = depth.get("/public/lib/markdown.js");
    expect(markdown).toBe(3); // app.js → views/transcript.js → views/turn.js → lib/markdown.js
    for (const [path, d] of depth) expect(d, path).toBeLessThanOrEqual(3);
  });

  it("is preloaded whole by index.html: every module app.js reaches statically, libraries included, and nothing else", () => {
    const graph = [...distances().keys()].filter((p) => p !== "/public/app.js").map((p) => p.replace(/^\/public/, ""));
    const libraries = [...new Set([...distances().keys()].flatMap(librariesOf))].map((spec) => {
      expect(importMap, `the import map names ${spec}`).toHaveProperty([spec]);
      return importMap[spec]!;
    });
    expect(libraries.length).toBeGreaterThan(0);
    const preloaded = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)"/g)].map((m) => m[1]!);
    expect(new Set(preloaded).size, "no module twice").toBe(preloaded.length);
    expect([...preloaded].sort(), "run node scripts/vendor.mjs (npm start does) and commit public/index.html").toEqual(
      [...graph, ...libraries].sort(),
    );
    // highlight.js is imported on demand (the first code block): not preloaded, so it takes no bandwidth from the start.
    expect(preloaded.some((p) => p.includes("highlight"))).toBe(false);
  });

  it("names each library by the version installed, so its long-cached URL changes when the library does", () => {
    expect(importMap).toEqual({
      marked: `/vendor/marked-${marked.version}/marked.esm.js`,
      dompurify: `/vendor/dompurify-${dompurify.version}/purify.es.mjs`,
      "@highlightjs/cdn-assets/es/highlight.min.js": `/vendor/highlightjs-${highlight.version}/highlight.min.js`,
    });
  });
});
