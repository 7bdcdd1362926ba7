// The chat page's static module graph, for index.html's modulepreload list (scripts/vendor.mjs
// writes it): every module app.js reaches through static imports (`import … from`, `export … from`,
// `import "…"`), relative ones resolved against the importing module and bare ones through the
// page's import map. Dynamic `import()` is left out: what the page loads only when needed
// (highlight.js, on the first code block) should not take bandwidth from what it needs to start.
// The list is breadth first from app.js (app.js itself is the page's module script, not listed).
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The block of index.html that vendor.mjs rewrites: from its opening comment to its closing one. */
export const PRELOAD_BLOCK = /<!-- modulepreload\b[^>]*-->[\s\S]*?<!-- \/modulepreload -->/;

const STATIC_IMPORT = /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']/gm;

/**
 * @param {string} publicDir  the directory the page is served from
 * @param {string} html  index.html, for its import map
 * @returns {string[]} URL paths of every module of the graph but app.js, breadth first
 */
export function moduleGraph(publicDir, html) {
  const mapText = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html)?.[1];
  /** @type {Record<string, string>} */
  const imports = mapText ? (JSON.parse(mapText).imports ?? {}) : {};
  const resolve = (/** @type {string} */ spec, /** @type {string} */ from) => {
    if (spec.startsWith("./") || spec.startsWith("../") || spec.startsWith("/"))
      return new URL(spec, `http://page${from}`).pathname;
    const mapped = imports[spec];
    if (!mapped) throw new Error(`${from} imports "${spec}", which the import map does not name`);
    return new URL(mapped, "http://page/").pathname;
  };
  const seen = new Set(["/app.js"]);
  const order = [];
  for (const queue = ["/app.js"]; queue.length; ) {
    const path = /** @type {string} */ (queue.shift());
    const code = readFileSync(join(publicDir, path), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
    for (const m of code.matchAll(STATIC_IMPORT)) {
      const next = resolve(/** @type {string} */ (m[1] ?? m[2]), path);
      if (seen.has(next)) continue;
      seen.add(next);
      order.push(next);
      queue.push(next);
    }
  }
  return order;
}

/**
 * The block listing `paths`, indented like the one it replaces.
 * @param {string[]} paths
 * @param {string} block  the block as it stands in index.html
 */
export function preloadBlock(paths, block) {
  const indent = /\n([ \t]*)<!-- \/modulepreload -->$/.exec(block)?.[1] ?? "    ";
  const opening = /^<!-- modulepreload\b[^>]*-->/.exec(block)?.[0];
  return [opening, ...paths.map((p) => `<link rel="modulepreload" href="${p}" />`), "<!-- /modulepreload -->"].join(
    `\n${indent}`,
  );
}
