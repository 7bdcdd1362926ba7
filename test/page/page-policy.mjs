// The security headers the chat page (issue 19) and the API reference (issue 37) are held to: one
// list, read by the check of the built page's _headers (test/page/headers.test.ts) and by the browser
// suite's check of what `wrangler dev` serves (test/e2e/security.mjs, test/e2e/docs.mjs).

/** CSP value → directive → its sources, as a plain object. */
export const cspDirectives = (csp) =>
  Object.fromEntries(
    csp
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...sources]) => [name, sources]),
  );

/**
 * Every directive of the page's policy. No inline script at all; `styleHashes`: the inline styles it
 * allows, each by its hash (the loading notice's, which the build puts in index.html).
 * @param {string[]} styleHashes
 */
export function expectedCsp(styleHashes) {
  return {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", ...styleHashes],
    "img-src": ["'self'"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
  };
}

/**
 * The API reference's policy (GET /docs, public/docs.html): the page's, but for style-src
 * (public/_headers says why): inline style for its renderer.
 */
export function expectedDocsCsp() {
  return { ...expectedCsp([]), "style-src": ["'self'", "'unsafe-inline'"] };
}

/** The other headers on every answer of the page and its files. */
export const expectedHeaders = {
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
};
