// @ts-check
/**
 * The API reference at /docs (docs.html): Scalar's API reference drawing the gateway's own OpenAPI
 * document, configured from this file because the page's Content-Security-Policy runs no inline
 * script (public/_headers). Loaded before the renderer (both deferred, in order) and mounts it once
 * the renderer has loaded.
 *
 * - The document is /openapi.json of this origin, and its `servers` is the relative "/": "try it"
 *   sends its requests to this same origin, whatever the port or host.
 * - A route that needs a user's token shows the document's `bearer` scheme: paste a token (locally,
 *   `POST /v1/dev/login` answers one) and the reference sends it as `Authorization: Bearer …`. It
 *   stays in this tab (`persistAuth` off): nothing of it is written to the browser's storage.
 * - Nothing leaves this origin: no web fonts (the page's fonts are the system's), no telemetry, no
 *   request proxy (the reference's requests go straight to the gateway).
 */

// Zod (inside the renderer) probes whether it may compile validators with `new Function`; under a
// policy without 'unsafe-eval' the probe is refused and reported as a violation. `jitless` is Zod's
// own switch for such pages (what `z.config({ jitless: true })` sets): it reads this shared
// configuration object, which it creates only when the page has not.
/** @type {{ __zod_globalConfig?: Record<string, unknown> }} */ (globalThis).__zod_globalConfig = { jitless: true };

/**
 * What the renderer's build (a classic script) defines on `window`.
 * @typedef {{ createApiReference: typeof import("@scalar/api-reference").createApiReference }} Scalar
 */

document.addEventListener("DOMContentLoaded", () => {
  const scalar = /** @type {{ Scalar?: Scalar }} */ (/** @type {unknown} */ (window)).Scalar;
  if (!scalar) throw new Error("the API reference's renderer did not load");
  scalar.createApiReference("#reference", {
    url: "/openapi.json",
    persistAuth: false,
    withDefaultFonts: false,
    telemetry: false,
    // Its chat assistant and its developer tools are services of Scalar's own site.
    agent: { disabled: true },
    showDeveloperTools: "never",
  });
});
