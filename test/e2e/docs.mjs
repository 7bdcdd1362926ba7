// The API reference at /docs (public/docs.html, issue 37): Scalar's API reference drawing this
// server's /openapi.json under the reference's own policy (public/_headers; csp.mjs fails a test on
// any violation), loading nothing from another origin, and its "try it" answered by this same
// server, with a token pasted into it where a route needs one.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cspDirectives, expectedDocsCsp, expectedHeaders } from "../page/page-policy.mjs";
import { openPage, server, unique } from "./harness.mjs";

/** The document the reference draws, as this server answers it. */
async function openApi() {
  return (await fetch(`${server.base}/openapi.json`)).json();
}

/** /docs in a new browser profile; `requests` is every request the page makes, as it makes them. */
async function openDocs() {
  const page = await openPage();
  /** @type {Array<{ method: string, url: string, authorization?: string }>} */
  const requests = [];
  page.on("request", (r) =>
    requests.push({ method: r.method(), url: r.url(), authorization: r.headers().authorization }),
  );
  const res = await page.goto(`${server.base}/docs`);
  return { page, res, requests };
}

/**
 * An operation's section in the reference, found by its heading (the operation's `summary`), once
 * its entry in the sidebar was clicked: the reference draws sections as they come into view.
 */
async function operation(page, summary) {
  await page.locator("aside").getByText(summary, { exact: true }).click();
  const section = page.locator("section", { has: page.getByRole("heading", { name: summary, exact: true }) }).last();
  await section.waitFor();
  return section;
}

/** Opens the operation's "try it" client (its Test Request button); answers the client's dialog. */
async function openClient(page, summary) {
  await (await operation(page, summary)).getByRole("button", { name: "Test Request" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  return dialog;
}

/** Sends the client's request; answers the request the browser made, once the client shows its answer's status. */
async function send(page, dialog, path, status) {
  const [request] = await Promise.all([
    page.waitForRequest((r) => new URL(r.url()).pathname === path),
    dialog
      .getByRole("button", { name: /^Send\b/ })
      .first()
      .click(),
  ]);
  await dialog.getByText(status, { exact: true }).waitFor();
  return request;
}

describe("the API reference at /docs", () => {
  it("lists every operation of /openapi.json, under its own policy, loading nothing from another origin", async () => {
    const { page, res, requests } = await openDocs();
    assert.equal(res.status(), 200);
    const headers = res.headers();
    assert.deepEqual(cspDirectives(headers["content-security-policy"] ?? ""), expectedDocsCsp());
    for (const [name, value] of Object.entries(expectedHeaders)) assert.equal(headers[name], value, name);
    // The page itself revalidates; the renderer's versioned copy is immutable (checked below, with the requests).
    assert.equal(headers["cache-control"], "public, max-age=0, must-revalidate");
    const doc = await openApi();
    const turns = doc.paths["/v1/conversations/{cid}/turns"].post;
    const section = await operation(page, turns.summary);
    assert.match(await section.innerText(), /\/v1\/conversations\/\{cid\}\/turns/);
    // Every operation of the document is in the reference's sidebar, by its summary.
    const summaries = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.summary));
    assert.ok(summaries.length > 30, `${summaries.length} operations`);
    const shown = await page.locator("aside").innerText();
    assert.deepEqual(
      summaries.filter((s) => !shown.includes(s)),
      [],
      "operations the reference does not list",
    );
    // Everything it loaded came from this server: the page, its script, the renderer, the document.
    const paths = requests.map((r) => r.url);
    assert.deepEqual(
      paths.filter((url) => !url.startsWith(`${server.base}/`)),
      [],
      "requests to another origin",
    );
    const renderer = paths.find((url) => /\/assets\/scalar-api-reference-[A-Z2-7]{8}\.js$/.test(url));
    assert.ok(renderer, JSON.stringify(paths));
    assert.ok(paths.includes(`${server.base}/openapi.json`), JSON.stringify(paths));
    const copy = await fetch(renderer);
    assert.equal(copy.headers.get("cache-control"), "public, max-age=31536000, immutable");
    await copy.arrayBuffer();
    await page.context().close();
  });

  it("try it: GET /healthz goes to this server, without a token, and its answer is shown", async () => {
    const { page } = await openDocs();
    const doc = await openApi();
    const health = await (await fetch(`${server.base}/healthz`)).json();
    const dialog = await openClient(page, doc.paths["/healthz"].get.summary);
    const request = await send(page, dialog, "/healthz", "200 OK");
    assert.equal(request.url(), `${server.base}/healthz`);
    assert.equal(request.headers().authorization, undefined, "a route without security gets no Authorization");
    const shown = await dialog.innerText();
    assert.match(shown, /"ok": true/);
    assert.ok(shown.includes(`"version": "${health.version}"`), shown);
    await page.context().close();
  });

  it("try it with a pasted token: a user's route answers that user's data, and the token is kept nowhere", async () => {
    const user = unique("docs");
    const login = await fetch(`${server.base}/v1/dev/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user }),
    });
    const { token } = await login.json();
    const cid = unique("docs-conv");
    const sent = await fetch(`${server.base}/v1/conversations/${cid}/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ turnId: unique("turn"), message: "hello" }),
    });
    assert.equal(sent.status, 202);
    await sent.arrayBuffer();

    const { page } = await openDocs();
    const doc = await openApi();
    const list = doc.paths["/v1/conversations"].get;
    assert.deepEqual(list.security, [{ bearer: [] }]);
    const dialog = await openClient(page, list.summary);
    // Without a token the gateway refuses it.
    const refused = await send(page, dialog, "/v1/conversations", "401 Unauthorized");
    assert.ok(!refused.headers().authorization?.includes("."), "no token was sent");
    // With the token pasted into the route's Authentication, the user's own list.
    await dialog.getByRole("button", { name: /Authentication/ }).click();
    await dialog.getByLabel("Bearer Token").fill(token);
    const request = await send(page, dialog, "/v1/conversations", "200 OK");
    assert.equal(request.headers().authorization, `Bearer ${token}`);
    assert.equal(new URL(request.url()).origin, server.base);
    await dialog.getByText(`"conversationId": "${cid}"`).waitFor();
    // The reference keeps it in this tab's memory only (docs.js: persistAuth off).
    const kept = await page.evaluate(() =>
      JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie]),
    );
    assert.ok(!kept.includes(token), "the token is in the browser's storage");
    await page.context().close();
  });
});
