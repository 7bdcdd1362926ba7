#!/usr/bin/env node
// Builds the chat page (public/, its source) into what wrangler serves as static assets: dist/page/
// (generated, not committed; wrangler.toml's [assets] directory). Run by wrangler before `wrangler
// dev` and `wrangler deploy` ([build] in wrangler.toml), and by vitest's config before the tests, so
// `npm start`, the tests and a deploy all serve the page built from this tree.
//
// What it writes (docs/chat-page.md "How it is built"):
// - assets/: every script, stylesheet and file the pages load, named by a hash of its content
//   (`app-5Q3TZ2KC.js`), so public/_headers serves them immutable for a year: a change is a new name.
//   - app.js and everything it imports (marked and DOMPurify included) as one minified ES module;
//     what it imports only when needed (highlight.js, at the first code block; the agent picker, the settings,
//     the workspace panel, the attachments, the terminal with xterm) a chunk of its own; a stylesheet a script
//     imports (workspace.css, terminal.css, xterm's) is its text, minified, in the script (cssAsText);
//   - boot.js (the theme before the first paint, and the page's first requests: lib/early.js) and
//     docs.js (the API reference's configuration), each one minified classic script;
//   - style.css minified; favicon.svg; Scalar's API reference (its browser build, copied as it is).
// - index.html and docs.html: their `<script src>` and `<link href>` rewritten to those names (a
//   reference to a file the build does not make fails the build); a `<link rel="stylesheet"
//   data-inline>` replaced by the stylesheet itself, minified, in a `<style>` element (boot.css: what
//   the loading notice needs, so it paints with the HTML, before any file has come).
// - _headers: public/_headers with the SHA-256 of each inline `<style>` put where it says
//   `{inline-style-hashes}`, so the Content-Security-Policy allows exactly those and nothing else
//   inline (no inline script at all). Computed here, from what is served, it cannot go stale.
// Every file is written only when its bytes changed (another server serving this directory, a test
// suite's, never sees a file rewritten under it), and what an earlier build wrote but this one does
// not is removed.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, extname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build, transform } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Where every hashed file goes, under the output; public/_headers caches this path for a year. */
export const ASSETS = "assets";
/** The pages: each one's `<script src>` and `<link href>` name source files, rewritten to the built ones. */
const PAGES = ["index.html", "docs.html"];
/** Browsers the page is built for: what it already needed (ES2022: top-level await is not used, class fields are). */
const TARGET = ["es2022", "chrome111", "firefox113", "safari16.4"];
/** The API reference's renderer: Scalar's standalone browser build (its 20 MB source map stays behind). */
const RENDERER = { pkg: "@scalar/api-reference", file: "dist/browser/standalone.js", name: "scalar-api-reference" };
/** Files copied under their content hash, by the path the pages name them with. */
const COPIED = ["/favicon.svg"];

const sha256 = (/** @type {string | Uint8Array} */ data) => createHash("sha256").update(data).digest();
/**
 * A stylesheet a script imports (`import css from "../workspace.css"`: a lazy chunk's own style, not on
 * the way to "live") comes as its text, minified, which the chunk adopts (a constructed stylesheet).
 * @type {import("esbuild").Plugin}
 */
const cssAsText = {
  name: "css-as-text",
  setup(build) {
    // Named relative to the source (an absolute path would change the chunks' names with the directory built in).
    const base = build.initialOptions.absWorkingDir ?? root;
    // A package's stylesheet (`@xterm/xterm/css/xterm.css`) from the packages' folder.
    const packages = build.initialOptions.nodePaths?.[0] ?? join(root, "node_modules");
    build.onResolve({ filter: /\.css$/ }, (args) =>
      args.kind === "import-statement"
        ? {
            path: relative(
              base,
              args.path.startsWith(".") ? join(args.resolveDir, args.path) : join(packages, args.path),
            ),
            namespace: "css-text",
          }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "css-text" }, async (args) => {
      const file = join(base, args.path);
      const css = (await transform(readFileSync(file, "utf8"), { loader: "css", minify: true, target: TARGET })).code;
      return { contents: css, loader: "text", watchFiles: [file] };
    });
  },
};

/** An 8-character content hash in esbuild's alphabet (A–Z, 2–7), so every hashed name looks alike. */
function contentHash(/** @type {Uint8Array} */ bytes) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const digest = sha256(bytes);
  let out = "";
  for (let i = 0; i < 8; i++) out += alphabet[/** @type {number} */ (digest[i]) % 32];
  return out;
}

/**
 * Builds `source` (default public/) into `out` (default dist/page/). Answers what it wrote: each
 * output path (relative to `out`) and its bytes, and which source path each hashed file is built from.
 * @param {{ source?: string, out?: string, nodeModules?: string, write?: boolean }} [options]
 *   `write: false` builds in memory only (the tests read the answer)
 */
export async function buildPage({
  source = join(root, "public"),
  out = join(root, "dist", "page"),
  nodeModules = join(root, "node_modules"),
  write = true,
} = {}) {
  /** @type {Map<string, Uint8Array>} output path → bytes */
  const files = new Map();
  /** @type {Map<string, string>} the path a page names (`/app.js`) → the URL it is served at */
  const urls = new Map();
  const common = {
    absWorkingDir: source,
    bundle: true,
    minify: true,
    write: false,
    metafile: true,
    target: TARGET,
    outdir: join(source, ASSETS),
    entryNames: "[name]-[hash]",
    chunkNames: "[name]-[hash]",
    sourcemap: /** @type {const} */ ("linked"),
    nodePaths: [nodeModules],
    legalComments: /** @type {const} */ ("linked"),
    logLevel: /** @type {const} */ ("silent"),
  };
  /** Keeps esbuild's output files and the URL of each entry point's output. */
  const collect = (/** @type {import("esbuild").BuildResult<{ write: false, metafile: true }>} */ result) => {
    for (const file of result.outputFiles) files.set(relative(source, file.path), file.contents);
    for (const [path, output] of Object.entries(result.metafile.outputs))
      if (output.entryPoint)
        urls.set(`/${output.entryPoint.replace(/^\.\//, "")}`, `/${relative(source, join(source, path))}`);
    return result.metafile;
  };
  // The page's module, split only where it imports on demand: the highlight.js chunk, the lazy controllers.
  const app = collect(
    await build({
      ...common,
      entryPoints: ["app.js"],
      format: "esm",
      splitting: true,
      outbase: ".",
      plugins: [cssAsText],
    }),
  );
  // The classic scripts: run before the first paint (boot.js) or beside the renderer (docs.js).
  collect(await build({ ...common, entryPoints: ["boot.js", "docs.js"], format: "iife" }));
  collect(await build({ ...common, entryPoints: ["style.css"], sourcemap: false }));

  // Files copied as they are, each under its content hash.
  const copy = (/** @type {string} */ from, /** @type {string} */ name) => {
    const bytes = readFileSync(from);
    const ext = extname(name);
    const path = `${ASSETS}/${basename(name, ext)}-${contentHash(bytes)}${ext}`;
    files.set(path, bytes);
    return `/${path}`;
  };
  for (const path of COPIED) urls.set(path, copy(join(source, path), path));
  const renderer = join(nodeModules, RENDERER.pkg, RENDERER.file);
  if (!existsSync(renderer)) throw new Error(`build-page: ${RENDERER.pkg}/${RENDERER.file} is missing; run npm ci`);
  urls.set(`/${RENDERER.name}.js`, copy(renderer, `${RENDERER.name}.js`));

  // The page module's own static imports (none today: one module) are preloaded beside it.
  const appOutput = Object.values(app.outputs).find((output) => output.entryPoint === "app.js");
  const preloads = (appOutput?.imports ?? [])
    .filter((i) => i.kind === "import-statement" && !i.external)
    .map((i) => `/${relative(source, join(source, i.path))}`);

  /** @type {string[]} */
  const styleHashes = [];
  for (const page of PAGES) {
    let html = readFileSync(join(source, page), "utf8");
    // A stylesheet marked data-inline goes into the page itself, minified.
    const inline = /<link rel="stylesheet" href="\/([^"]+)" data-inline \/>/g;
    for (const [tag, path] of [...html.matchAll(inline)]) {
      const css = (
        await transform(readFileSync(join(source, /** @type {string} */ (path)), "utf8"), {
          loader: "css",
          minify: true,
          target: TARGET,
        })
      ).code.trim();
      styleHashes.push(`'sha256-${sha256(css).toString("base64")}'`);
      html = html.replace(tag, () => `<style>${css}</style>`);
    }
    html = html.replace(/(<(?:script|link)\b[^>]*?\s(?:src|href)=")(\/[^"/][^"]*)"/g, (_tag, head, path) => {
      const url = urls.get(path);
      if (!url) throw new Error(`build-page: public/${page} loads ${path}, which the build does not make`);
      return `${head}${url}"`;
    });
    if (page === "index.html" && preloads.length) {
      const app = /** @type {string} */ (urls.get("/app.js"));
      html = html.replace(
        `<script type="module" src="${app}"></script>`,
        (tag) => `${tag}\n${preloads.map((p) => `    <link rel="modulepreload" href="${p}" />`).join("\n")}`,
      );
    }
    // Its comments are for its readers: the served page goes without them.
    html = html.replace(/[ \t]*<!--[\s\S]*?-->\n?/g, "");
    if (/<script\b(?![^>]*\bsrc=)/i.test(html)) throw new Error(`build-page: public/${page} has an inline script`);
    files.set(page, new TextEncoder().encode(html));
  }

  // The rules, without the comments (the served copy is read by the platform alone), the hashes filled in.
  const rules = readFileSync(join(source, "_headers"), "utf8")
    .split("\n")
    .filter((line) => !line.startsWith("#"))
    .join("\n");
  if (!/style-src [^;\n]*\{inline-style-hashes\}/.test(rules))
    throw new Error("build-page: public/_headers has no {inline-style-hashes} in a style-src to fill in");
  files.set("_headers", new TextEncoder().encode(rules.replaceAll("{inline-style-hashes}", styleHashes.join(" "))));

  if (write) writeOutput(out, files);
  return { files, urls };
}

/** Writes `files` under `out`, each only if its bytes changed (atomically), and removes what else is there. */
function writeOutput(/** @type {string} */ out, /** @type {Map<string, Uint8Array>} */ files) {
  mkdirSync(out, { recursive: true });
  for (const [path, bytes] of files) {
    const target = join(out, path);
    if (existsSync(target) && readFileSync(target).equals(bytes)) continue;
    mkdirSync(dirname(target), { recursive: true });
    const temporary = `${target}.${process.pid}.tmp`;
    writeFileSync(temporary, bytes);
    renameSync(temporary, target);
  }
  const walk = (/** @type {string} */ dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      return entry.isDirectory() ? walk(path) : [relative(out, path)];
    });
  for (const path of walk(out))
    if (!files.has(path) && !path.endsWith(".tmp")) rmSync(join(out, path), { force: true });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  try {
    const { files } = await buildPage();
    const bytes = [...files.values()].reduce((sum, b) => sum + b.length, 0);
    console.log(
      `build-page: ${files.size} files, ${Math.round(bytes / 1024)} KiB, into dist/page/ in ${Math.round(performance.now() - started)} ms`,
    );
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
