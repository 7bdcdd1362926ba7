#!/usr/bin/env node
// Copies the chat page's libraries' browser builds from node_modules into public/vendor/, where
// the page's import map (public/index.html) finds them. Run by wrangler before `wrangler dev` and
// `wrangler deploy` ([build] in wrangler.toml), so `npm start`, the browser tests and a deploy all
// serve the versions package-lock.json pins. The copies are generated: public/vendor/ is ignored.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
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

mkdirSync(out, { recursive: true });
for (const [from, to] of Object.entries(FILES)) {
  const source = join(root, "node_modules", from);
  if (!existsSync(source)) {
    console.error(`vendor: ${from} is missing; run npm ci`);
    process.exit(1);
  }
  copyFileSync(source, join(out, to));
  // The source map beside it, when the package ships one (devtools asks for it).
  if (existsSync(`${source}.map`)) copyFileSync(`${source}.map`, join(out, `${to}.map`));
}
