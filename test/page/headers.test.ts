/// <reference types="vite/client" />
/**
 * The chat page's security headers (public/_headers, issue 19), in Node: the committed policy allows
 * exactly index.html's import map by hash (scripts/vendor.mjs rewrites it at build time; this fails
 * when the committed copy is stale), carries every directive the page is held to, and index.html
 * has nothing inline that the policy would have to allow. The browser tests (test/e2e/security.mjs)
 * check the served headers and fail on any violation the page reports.
 */
import { describe, expect, it } from "vitest";
import pkg from "../../package.json";
import headersFile from "../../public/_headers?raw";
import docsHtml from "../../public/docs.html?raw";
import html from "../../public/index.html?raw";
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

const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)].map((m) => ({
  attrs: m[1]!,
  body: m[2]!,
}));

describe("the chat page's security headers", () => {
  const rules = rulesOf(headersFile);
  const rule = rules.get("/*") ?? new Map<string, string>();
  const csp = new Map(Object.entries(cspDirectives(rule.get("content-security-policy") ?? "")));

  it("allow the import map by the hash of its text in index.html, and no other inline script", async () => {
    const maps = scripts.filter((s) => /type="importmap"/.test(s.attrs));
    expect(maps).toHaveLength(1);
    const hash = `'sha256-${await sha256(maps[0]!.body.replace(/\r\n?/g, "\n"))}'`;
    expect(csp.get("script-src"), "run node scripts/vendor.mjs (npm start does) and commit public/_headers").toEqual([
      "'self'",
      hash,
    ]);
    // Every other script is a file of the page's own origin.
    for (const s of scripts.filter((s) => s !== maps[0])) {
      expect(s.attrs).toMatch(/\bsrc="\/[^/]/);
      expect(s.body.trim()).toBe("");
    }
  });

  it("carry a strict policy, frame protection, nosniff and a referrer policy", () => {
    expect(Object.fromEntries(csp)).toEqual(expectedCsp(csp.get("script-src")?.[1]));
    for (const [name, value] of Object.entries(expectedHeaders)) expect(rule.get(name), name).toBe(value);
  });

  it("cache only what is immutable by its URL: the versioned libraries for a year, nothing else past a revalidation", () => {
    expect([...rules.keys()]).toEqual(["/*", "/vendor/*", "/docs"]);
    expect(rules.get("/vendor/*")).toEqual(new Map([["cache-control", "public, max-age=31536000, immutable"]]));
    // The page and its modules keep the platform's `max-age=0, must-revalidate`: no rule sets theirs.
    expect(rule.has("cache-control")).toBe(false);
    // Every library URL the page names is versioned (scripts/vendor.mjs writes /vendor/<name>-<version>/).
    const libraries = [...html.matchAll(/"(\/vendor\/[^"]+)"/g)].map((m) => m[1]!);
    expect(libraries.length).toBeGreaterThanOrEqual(3);
    for (const url of libraries) expect(url).toMatch(/^\/vendor\/[a-z]+-\d+\.\d+\.\d+[^/]*\/[^/]+$/);
  });

  it("leave index.html nothing inline to allow: no event handler attributes, style, or javascript: URLs", () => {
    const tags = [...html.matchAll(/<[a-z][^>]*>/gi)].map((m) => m[0]);
    expect(tags.filter((t) => /\son[a-z]+\s*=/i.test(t))).toEqual([]);
    expect(tags.filter((t) => /\sstyle\s*=/i.test(t))).toEqual([]);
    expect(html).not.toMatch(/<style\b/i);
    expect(html).not.toMatch(/javascript:/i);
  });
});

describe("the API reference's page (GET /docs)", () => {
  const rules = rulesOf(headersFile);
  const scripts = [...docsHtml.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)].map((m) => ({
    attrs: m[1]!,
    body: m[2]!,
  }));

  it("has a policy of its own instead of the page's, which allows inline style and nothing else more", () => {
    const rule = rules.get("/docs") ?? new Map<string, string>();
    // Dropped first: served beside the page's, the stricter policy would also be enforced.
    expect(rule.has("!content-security-policy")).toBe(true);
    expect(cspDirectives(rule.get("content-security-policy") ?? "")).toEqual(expectedDocsCsp());
    // The page's other headers reach it from /*; the rule sets nothing else.
    expect([...rule.keys()].sort()).toEqual(["!content-security-policy", "content-security-policy"]);
  });

  it("runs no inline script: its two scripts are our configuration and the renderer's pinned build", () => {
    expect(scripts.map((s) => s.body.trim())).toEqual(["", ""]);
    const sources = scripts.map((s) => /\bsrc="([^"]+)"/.exec(s.attrs)?.[1]);
    // docs.js first: it configures what the renderer reads as it loads; both deferred, so in this order.
    const pinned = pkg.dependencies["@scalar/api-reference"];
    expect(sources).toEqual(["/docs.js", `/vendor/scalar-api-reference-${pinned}/standalone.js`]);
    for (const s of scripts) expect(s.attrs).toMatch(/\bdefer\b/);
    expect(docsHtml).not.toMatch(/\son[a-z]+\s*=|<style\b|\sstyle\s*=|javascript:/i);
  });
});
