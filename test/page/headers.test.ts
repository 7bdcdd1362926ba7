/**
 * The chat page as built (scripts/build-page.mjs: what wrangler serves, dist/page/), in Node: every
 * file the pages load is named by a hash of its content under /assets/ and cached a year, immutable,
 * while the pages themselves revalidate; the page opens with few files (the target of issue 38: at
 * most six static requests); and the security headers (public/_headers, issue 19) allow no inline
 * script at all and exactly the inline style the built page has, by its hash. The browser tests
 * (test/e2e/security.mjs) check the served headers and fail on any violation the page reports.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPage } from "../../scripts/build-page.mjs";
import { cspDirectives, expectedCsp, expectedDocsCsp, expectedHeaders } from "./page-policy.mjs";

/**
 * The rules of _headers: path pattern → header name (lower case) → value. A `! Name` line (the rule
 * drops the header a wider rule sets) is kept as `!name`.
 */
function rulesOf(text: string): Map<string, Map<string, string>> {
  const rules = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const line of text.split("\n")) {
    if (!line.trim() || line.startsWith("#")) continue;
    if (!/^\s/.test(line)) rules.set(line.trim(), (current = new Map()));
    else if (line.trim().startsWith("!")) current?.set(`!${line.trim().slice(1).trim().toLowerCase()}`, "");
    else {
      const at = line.indexOf(":");
      current?.set(line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim());
    }
  }
  return rules;
}

async function sha256(text: string) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return btoa(String.fromCharCode(...digest));
}

/** A hashed file's URL: /assets/<name>-<8 characters of its hash>.<ext>. */
const HASHED = /^\/assets\/[\w.-]+-[A-Z2-7]{8}\.(js|css|svg)$/;

type Built = Awaited<ReturnType<typeof buildPage>>;
let built: Built;
const text = (path: string) => new TextDecoder().decode(built.files.get(path));
/** The URLs a page's tags load: script src, stylesheet / icon / preload href. */
const loads = (html: string) =>
  [...html.matchAll(/<(?:script|link)\b[^>]*?\s(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);

beforeAll(async () => {
  built = await buildPage({ write: false });
});

describe("the built page", () => {
  it("names every file its pages load by a hash of its content, and builds each one it names", () => {
    for (const page of ["index.html", "docs.html"]) {
      const urls = loads(text(page));
      expect(urls.length, page).toBeGreaterThan(0);
      for (const url of urls) {
        expect(url, page).toMatch(HASHED);
        expect(built.files.has(url.slice(1)), `${page} loads ${url}`).toBe(true);
      }
    }
  });

  describe("a change to one source", () => {
    const dirs: string[] = [];
    afterAll(() => {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });
    /** A copy of public/ (each at the same depth: the output names the sources by relative path). */
    const copy = () => {
      const dir = mkdtempSync(join(tmpdir(), "page-source-"));
      dirs.push(dir);
      cpSync(join(process.cwd(), "public"), dir, { recursive: true });
      return dir;
    };

    it("is a new name for the file built from it; the others keep theirs", async () => {
      const same = await buildPage({ source: copy(), write: false });
      const source = copy();
      writeFileSync(
        join(source, "style.css"),
        `${readFileSync(join(source, "style.css"), "utf8")}\n.x { color: red }\n`,
      );
      const changed = await buildPage({ source, write: false });
      expect(changed.urls.get("/style.css")).toMatch(HASHED);
      expect(changed.urls.get("/style.css")).not.toBe(same.urls.get("/style.css"));
      for (const path of ["/app.js", "/boot.js", "/docs.js", "/favicon.svg"])
        expect(changed.urls.get(path), path).toBe(same.urls.get(path));
    });
  });

  it("opens with at most six static requests: the page, its icon, boot.js, app.js (one module) and style.css", () => {
    const html = text("index.html");
    const urls = loads(html);
    expect(urls.map((u) => u.replace(/-[A-Z2-7]{8}\./, "."))).toEqual([
      "/assets/favicon.svg",
      "/assets/boot.js",
      "/assets/app.js",
      "/assets/style.css",
    ]);
    expect(1 + urls.length).toBeLessThanOrEqual(6);
    // app.js imports no other file before it runs (highlight.js comes only at the first code block).
    const app = text(urls[2]?.slice(1) ?? "");
    expect(app).not.toMatch(/^import\s|[;}]import\s*["{*]/m);
    // No import map: the libraries are in app.js.
    expect(html).not.toMatch(/importmap/);
  });

  it("serves what is under /assets/ immutable for a year, and lets the pages revalidate", () => {
    const rules = rulesOf(text("_headers"));
    expect([...rules.keys()]).toEqual(["/*", "/assets/*", "/docs"]);
    expect(rules.get("/assets/*")).toEqual(new Map([["cache-control", "public, max-age=31536000, immutable"]]));
    // The pages keep the platform's `public, max-age=0, must-revalidate`: no other rule sets a cache.
    for (const [path, rule] of rules) if (path !== "/assets/*") expect(rule.has("cache-control"), path).toBe(false);
  });
});

describe("the chat page's security headers", () => {
  it("allow no inline script and exactly the built page's inline style, by its hash", async () => {
    const html = text("index.html");
    const rule = rulesOf(text("_headers")).get("/*") ?? new Map<string, string>();
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1] as string);
    // The loading notice's CSS is in the page, so it paints before any file has come.
    expect(styles).toHaveLength(1);
    expect(styles[0]).toMatch(/\.boot\b/);
    const hashes = await Promise.all(styles.map(async (s) => `'sha256-${await sha256(s)}'`));
    expect(cspDirectives(rule.get("content-security-policy") ?? "")).toEqual(expectedCsp(hashes));
    for (const [name, value] of Object.entries(expectedHeaders)) expect(rule.get(name), name).toBe(value);
    // Every script is a file of the page's own origin.
    for (const [, attrs, body] of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
      expect(attrs).toMatch(/\bsrc="\/[^/]/);
      expect(body?.trim()).toBe("");
    }
  });

  it("leave index.html nothing else inline to allow: no event handler attributes, style attributes or javascript: URLs", () => {
    const html = text("index.html");
    const tags = [...html.matchAll(/<[a-z][^>]*>/gi)].map((m) => m[0]);
    expect(tags.filter((t) => /\son[a-z]+\s*=/i.test(t))).toEqual([]);
    expect(tags.filter((t) => /\sstyle\s*=/i.test(t))).toEqual([]);
    expect(html).not.toMatch(/javascript:/i);
  });
});

describe("the API reference's page (GET /docs)", () => {
  it("has a policy of its own instead of the page's, which allows inline style and nothing else more", () => {
    const rule = rulesOf(text("_headers")).get("/docs") ?? new Map<string, string>();
    // Dropped first: served beside the page's, the stricter policy would also be enforced.
    expect(rule.has("!content-security-policy")).toBe(true);
    expect(cspDirectives(rule.get("content-security-policy") ?? "")).toEqual(expectedDocsCsp());
    expect([...rule.keys()].sort()).toEqual(["!content-security-policy", "content-security-policy"]);
  });

  it("runs no inline script: its two scripts are our configuration and the renderer's pinned build", () => {
    const html = text("docs.html");
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((s) => s[2]?.trim())).toEqual(["", ""]);
    // docs.js first: it configures what the renderer reads as it loads; both deferred, so in this order.
    expect(scripts.map((s) => /\bsrc="([^"]+)"/.exec(s[1] ?? "")?.[1]?.replace(/-[A-Z2-7]{8}\./, "."))).toEqual([
      "/assets/docs.js",
      "/assets/scalar-api-reference.js",
    ]);
    for (const s of scripts) expect(s[1]).toMatch(/\bdefer\b/);
    // The renderer is the installed (pinned) build, as it is.
    const renderer = built.urls.get("/scalar-api-reference.js")?.slice(1) ?? "";
    const pinned = readFileSync(join(process.cwd(), "node_modules/@scalar/api-reference/dist/browser/standalone.js"));
    expect(Buffer.from(built.files.get(renderer) ?? []).equals(pinned)).toBe(true);
    expect(html).not.toMatch(/\son[a-z]+\s*=|<style\b|\sstyle\s*=|javascript:/i);
  });
});
