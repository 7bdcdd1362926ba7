// The chat page's security headers (public/_headers, issue 19) as served by `wrangler dev`: on `/`
// and on every file of the built page (dist/page/, scripts/build-page.mjs), a CSP that the page works
// under (every browser test fails on a violation, csp.mjs), and another site cannot frame the page; and
// how long each may be cached: a year for the files named by their content's hash, a revalidation for
// the pages.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { createServer } from "node:http";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { cspDirectives, expectedCsp, expectedHeaders } from "../page/page-policy.mjs";
import { takeViolations } from "./csp.mjs";
import { openPage, server, signIn, unique } from "./harness.mjs";

/** Every file the assets serve (the built page, dist/page/), as URL paths. */
function assetPaths(dir = "dist/page") {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return assetPaths(path);
    return entry.name === "_headers" ? [] : [`/${relative("dist/page", path)}`];
  });
}

function assertSecurityHeaders(res, path, styleHashes) {
  const csp = res.headers.get("content-security-policy");
  assert.ok(csp, `${path}: no Content-Security-Policy`);
  assert.deepEqual(cspDirectives(csp), expectedCsp(styleHashes), path);
  for (const [name, value] of Object.entries(expectedHeaders))
    assert.equal(res.headers.get(name), value, `${path}: ${name}`);
}

/** The violations reported (taken from csp.mjs, so they do not fail the test) once `enough` holds, or after 5 s. */
async function violationsWhen(page, enough) {
  const seen = takeViolations();
  for (let i = 0; i < 50 && !enough(seen); i++) {
    await page.waitForTimeout(100);
    seen.push(...takeViolations());
  }
  return seen;
}

describe("security headers", () => {
  it("`/` and every asset carry the CSP (allowing the served page's inline style by its hash), frame protection, nosniff and no-referrer", async () => {
    const root = await fetch(`${server.base}/`);
    assert.equal(root.status, 200);
    const html = await root.text();
    assert.doesNotMatch(html, /importmap/);
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    assert.equal(styles.length, 1, "the loading notice's style is in the page");
    const hashes = styles.map((s) => `'sha256-${createHash("sha256").update(s).digest("base64")}'`);
    assertSecurityHeaders(root, "/", hashes);
    const paths = assetPaths();
    for (const expected of [
      "/index.html",
      "/docs.html",
      /^\/assets\/app-[A-Z2-7]{8}\.js$/,
      /^\/assets\/boot-[A-Z2-7]{8}\.js$/,
      /^\/assets\/style-[A-Z2-7]{8}\.css$/,
      /^\/assets\/favicon-[A-Z2-7]{8}\.svg$/,
      /^\/assets\/highlight\.min-[A-Z2-7]{8}\.js$/,
    ]) {
      assert.ok(
        paths.some((p) => (typeof expected === "string" ? p === expected : expected.test(p))),
        `${expected} is in dist/page/`,
      );
    }
    for (const path of [...paths, "/?c=some-conversation"]) {
      // /index.html answers a redirect to /, /docs.html one to /docs (test/e2e/docs.mjs): they carry them too.
      const res = await fetch(`${server.base}${path}`, { redirect: "manual" });
      assert.ok(
        res.status === 200 || (["/index.html", "/docs.html"].includes(path) && res.status === 307),
        `${path}: ${res.status}`,
      );
      assertSecurityHeaders(res, path, hashes);
      // Cached long only where the URL names the content (its hash): the pages revalidate.
      const cache = res.headers.get("cache-control");
      if (path.startsWith("/assets/")) assert.equal(cache, "public, max-age=31536000, immutable", path);
      else if (res.status === 200) assert.equal(cache, "public, max-age=0, must-revalidate", path);
      await res.arrayBuffer();
    }
    // The rules themselves are not served.
    assert.equal((await fetch(`${server.base}/_headers`)).status, 404);
  });

  it("the policy is enforced: a script injected into the page does not run and is reported", async () => {
    const page = await openPage();
    await signIn(page, unique("csp"));
    const ran = await page.evaluate(async () => {
      const script = document.createElement("script");
      script.textContent = "window.__injected = 1";
      document.head.append(script);
      const handler = document.createElement("img");
      handler.setAttribute("onerror", "window.__injected = 2");
      handler.src = "/no-such-image.png";
      document.body.append(handler);
      await new Promise((r) => setTimeout(r, 300));
      handler.remove();
      return window.__injected;
    });
    assert.equal(ran, undefined);
    // Both refused and reported: the harness (csp.mjs) sees what the page reports.
    const directivesSeen = (seen) => [...new Set(seen.filter((v) => v.directive).map((v) => v.directive))].sort();
    const seen = await violationsWhen(page, (seen) => directivesSeen(seen).length === 2);
    assert.deepEqual(directivesSeen(seen), ["script-src-attr", "script-src-elem"], JSON.stringify(seen, null, 2));
    await page.context().close();
  });

  it("a page on another origin cannot frame the chat page", async (t) => {
    // Another origin (another port) on the same machine: a public one would be refused by
    // Chromium's local network rules whatever the app's headers say.
    const framer = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(
        `<!doctype html><title>framer</title><iframe id="app" src="${server.base}/" width="800" height="600"></iframe>`,
      );
    });
    await new Promise((resolve) => framer.listen(0, "127.0.0.1", resolve));
    t.after(() => {
      framer.closeAllConnections();
      framer.close();
    });
    const page = await openPage();
    await page.goto(`http://127.0.0.1:${framer.address().port}/`);
    // Chromium fetched the app's document, read its policy (frame-ancestors 'none';
    // X-Frame-Options: DENY for older browsers) and put its error page in the frame instead.
    const child = page.frames().find((f) => f !== page.mainFrame());
    assert.ok(child, "the iframe exists");
    for (let i = 0; i < 50 && !/^chrome-error:/.test(child.url()); i++) await page.waitForTimeout(100);
    assert.equal(child.url(), "chrome-error://chromewebdata/", "the frame shows the refusal, not the app");
    assert.equal(
      await page.frameLocator("#app").locator("#signin, #app").count(),
      0,
      "none of the app is in the frame",
    );
    // Chromium says why, in the framing page's console: the one violation this test expects.
    const seen = await violationsWhen(page, (seen) => seen.length > 0);
    assert.ok(
      seen.length > 0 && seen.every((v) => /frame-ancestors 'none'/.test(String(v.console))),
      JSON.stringify(seen, null, 2),
    );
    await page.context().close();
  });
});
