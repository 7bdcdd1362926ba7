#!/usr/bin/env node
// Copies the chat page's libraries' browser builds from node_modules into public/vendor/, where
// the page's import map (public/index.html) finds them. Run by wrangler before `wrangler dev` and
// `wrangler deploy` ([build] in wrangler.toml), so `npm start`, the browser tests and a deploy all
// serve the versions package-lock.json pins. The copies are generated: public/vendor/ is ignored.
// Then brings the import map's CSP hash in public/_headers up to date with index.html (below).
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "public", "vendor");

/** node_modules path → file name under public/vendor/ (each import map entry names one). */
const FILES = {
  "marked/lib/marked.esm.js": "marked.esm.js",
  "dompurify/dist/purify.es.mjs": "purify.es.mjs",
  "@highlightjs/cdn-assets/es/highlight.min.js": "highlight.min.js",
};

/**
 * Copies a file unless the target already holds the same bytes: a server already serving public/
 * (another `npm start`, a test suite's) never sees its assets rewritten under it.
 */
function copyIfChanged(source, target) {
  if (existsSync(target) && readFileSync(target).equals(readFileSync(source))) return;
  copyFileSync(source, target);
}

mkdirSync(out, { recursive: true });
for (const [from, to] of Object.entries(FILES)) {
  const source = join(root, "node_modules", from);
  if (!existsSync(source)) {
    console.error(`vendor: ${from} is missing; run npm ci`);
    process.exit(1);
  }
  copyIfChanged(source, join(out, to));
  // The source map beside it, when the package ships one (devtools asks for it).
  if (existsSync(`${source}.map`)) copyIfChanged(`${source}.map`, join(out, `${to}.map`));
}

// The Content-Security-Policy (public/_headers) allows the page's one inline script, its import
// map, by the SHA-256 of its text. index.html is the source of truth: when the map changes, the
// hash in _headers is rewritten here, before wrangler serves or deploys the assets, so a stale
// hash (which would block the map and every library import) cannot be served. _headers is
// committed so the policy can be read and reviewed; test/page/headers.test.ts fails if the
// committed copy is stale.
const html = readFileSync(join(root, "public", "index.html"), "utf8");
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
