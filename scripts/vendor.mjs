#!/usr/bin/env node
// Copies the chat page's libraries' browser builds from node_modules into public/vendor/, where
// the page's import map (public/index.html) finds them, and the API reference's renderer, which
// public/docs.html loads. Run by wrangler before `wrangler dev` and `wrangler deploy` ([build] in
// wrangler.toml), so `npm start`, the browser tests and a deploy all serve the versions
// package-lock.json pins. The copies are generated: public/vendor/ is ignored.
// Each library lives under a directory named by its version (`/vendor/marked-18.2.1/…`): a URL
// there never changes content, so public/_headers lets browsers cache it for a year.
// Then brings index.html up to date (below): the import map's URLs (their versions), the
// modulepreload list of the page's module graph, and the import map's CSP hash in public/_headers.
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { moduleGraph, PRELOAD_BLOCK, preloadBlock } from "./module-graph.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "public", "vendor");

/**
 * Each library: its package, the file the page imports (its path in the package) and the import map
 * entry that names it. Its URL is /vendor/<dir>-<version>/<file name>.
 */
const LIBRARIES = [
  { dir: "marked", pkg: "marked", file: "lib/marked.esm.js", specifier: "marked" },
  { dir: "dompurify", pkg: "dompurify", file: "dist/purify.es.mjs", specifier: "dompurify" },
  {
    dir: "highlightjs",
    pkg: "@highlightjs/cdn-assets",
    file: "es/highlight.min.js",
    specifier: "@highlightjs/cdn-assets/es/highlight.min.js",
  },
];

/**
 * The API reference's renderer (GET /docs, public/docs.html): Scalar's standalone browser build, one
 * classic script that public/docs.html names by its versioned URL (rewritten here, as the import
 * map's are). Its 20 MB source map stays behind: it would be the largest asset of a deploy.
 */
const RENDERERS = [
  { dir: "scalar-api-reference", pkg: "@scalar/api-reference", file: "dist/browser/standalone.js", page: "docs.html" },
];

/**
 * Copies a file unless the target already holds the same bytes: a server already serving public/
 * (another `npm start`, a test suite's) never sees its assets rewritten under it.
 */
function copyIfChanged(source, target) {
  if (existsSync(target) && readFileSync(target).equals(readFileSync(source))) return;
  copyFileSync(source, target);
}

mkdirSync(out, { recursive: true });
const keep = new Set();
/** Copies a package's file to /vendor/<dir>-<version>/<file name> and answers that URL. */
function vendor({ dir, pkg, file }, { sourceMap }) {
  const source = join(root, "node_modules", pkg, file);
  const manifest = join(root, "node_modules", pkg, "package.json");
  if (!existsSync(source) || !existsSync(manifest)) {
    console.error(`vendor: ${pkg}/${file} is missing; run npm ci`);
    process.exit(1);
  }
  const versioned = `${dir}-${JSON.parse(readFileSync(manifest, "utf8")).version}`;
  const name = file.split("/").pop();
  keep.add(versioned);
  mkdirSync(join(out, versioned), { recursive: true });
  copyIfChanged(source, join(out, versioned, name));
  // The source map beside it, when the package ships one (devtools asks for it).
  if (sourceMap && existsSync(`${source}.map`)) copyIfChanged(`${source}.map`, join(out, versioned, `${name}.map`));
  return `/vendor/${versioned}/${name}`;
}
/** import map specifier → the library's versioned URL */
const urls = {};
for (const library of LIBRARIES) urls[library.specifier] = vendor(library, { sourceMap: true });
// Each renderer's page names its script by the versioned URL (`src="/vendor/<dir>-<any version>/<file name>"`).
for (const renderer of RENDERERS) {
  const url = vendor(renderer, { sourceMap: false });
  const pagePath = join(root, "public", renderer.page);
  const page = readFileSync(pagePath, "utf8");
  const named = new RegExp(`src="/vendor/${renderer.dir}-[^/"]+/${url.split("/").pop().replace(/\./g, "\\.")}"`);
  if (!named.test(page)) {
    const wanted = `<script src="/vendor/${renderer.dir}-<version>/…">`;
    console.error(`vendor: public/${renderer.page} has no ${wanted} to keep up to date`);
    process.exit(1);
  }
  const updated = page.replace(named, `src="${url}"`);
  if (updated !== page) {
    writeFileSync(pagePath, updated);
    console.log(`vendor: public/${renderer.page} now loads ${url} (commit it)`);
  }
}
// Other versions' copies, and the unversioned copies of before, are not served any more.
for (const entry of readdirSync(out)) if (!keep.has(entry)) rmSync(join(out, entry), { recursive: true, force: true });

// index.html: the import map names each library's versioned URL, and the modulepreload block lists
// every module of the page's static graph (scripts/module-graph.mjs), so the browser fetches them
// all at once instead of one level of imports per round trip. test/page/module-graph.test.ts fails
// when the committed index.html is stale.
const htmlPath = join(root, "public", "index.html");
let html = readFileSync(htmlPath, "utf8");
for (const [specifier, url] of Object.entries(urls)) {
  // The entry's value, in place: the map's text (and so its hash) changes only where a version did.
  const key = `"${specifier}":`;
  const at = html.indexOf(key);
  if (at < 0) {
    console.error(`vendor: public/index.html's import map has no entry "${specifier}"`);
    process.exit(1);
  }
  const open = html.indexOf('"', at + key.length);
  const close = html.indexOf('"', open + 1);
  html = `${html.slice(0, open + 1)}${url}${html.slice(close)}`;
}
if (!PRELOAD_BLOCK.test(html)) {
  console.error(
    "vendor: public/index.html has no modulepreload block (<!-- modulepreload: … --> … <!-- /modulepreload -->)",
  );
  process.exit(1);
}
const graph = moduleGraph(join(root, "public"), html);
html = html.replace(PRELOAD_BLOCK, (block) => preloadBlock(graph, block));
if (html !== readFileSync(htmlPath, "utf8")) {
  writeFileSync(htmlPath, html);
  console.log("vendor: public/index.html's import map or modulepreload list changed (commit it)");
}

// The Content-Security-Policy (public/_headers) allows the page's one inline script, its import
// map, by the SHA-256 of its text. index.html is the source of truth: when the map changes, the
// hash in _headers is rewritten here, before wrangler serves or deploys the assets, so a stale
// hash (which would block the map and every library import) cannot be served. _headers is
// committed so the policy can be read and reviewed; test/page/headers.test.ts fails if the
// committed copy is stale.
const maps = [...html.matchAll(/<script type="importmap">([\s\S]*?)<\/script>/g)];
if (maps.length !== 1) {
  console.error(`vendor: public/index.html must have exactly one <script type="importmap">, found ${maps.length}`);
  process.exit(1);
}
// The browser hashes the script's text as parsed: HTML turns CRLF and CR into LF.
const hash = `'sha256-${createHash("sha256").update(maps[0][1].replace(/\r\n?/g, "\n"), "utf8").digest("base64")}'`;
const headersPath = join(root, "public", "_headers");
const headers = readFileSync(headersPath, "utf8");
const scriptSrc = /(script-src 'self' )'sha256-[A-Za-z0-9+/=]+'/;
if (!scriptSrc.test(headers)) {
  console.error("vendor: public/_headers has no \"script-src 'self' 'sha256-…'\" to keep up to date");
  process.exit(1);
}
const updated = headers.replace(scriptSrc, `$1${hash}`);
if (updated !== headers) {
  writeFileSync(headersPath, updated);
  console.log(`vendor: the import map changed; public/_headers now allows it by ${hash} (commit it)`);
}
