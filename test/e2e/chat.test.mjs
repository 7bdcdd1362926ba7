// Browser tests of the chat page: Debian's Chromium driven by playwright-core, against the real
// dev server (`wrangler dev` + the Sandbox emulator), one of each for the whole run (harness.mjs).
// Run with `npm run test:e2e`. Screenshots of the main states go to test-results/screenshots/.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  cidOf,
  lastTurn,
  openPage,
  send,
  server,
  shot,
  shownText,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";
import "./fixes.mjs";
import "./features.mjs";
import "./layout.mjs";
import "./access.mjs";
import "./usage.mjs";

// The rest of the page's tests are in page.test.mjs, which runs beside this file.

describe("the chat page", () => {
  it("signs in, sends a message, streams the answer with a tool card, and shows usage", async () => {
    const page = await openPage();
    await page.goto(server.base);
    await shot(page, "sign-in");
    await page.getByLabel("Your name").fill(unique("ada"));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#empty").waitFor();
    await send(page, "What does the README say?");
    // The message shows at once.
    await lastTurn(page).locator(".bubble-user", { hasText: "What does the README say?" }).waitFor({ timeout: 2000 });
    await waitForBadge(page, "done");
    const tool = lastTurn(page).locator("details.tool");
    assert.equal(await tool.count(), 1);
    assert.equal(await tool.locator(".tool-name").textContent(), "read");
    assert.equal(await tool.locator(".tool-status").textContent(), "completed");
    assert.equal(await tool.getAttribute("open"), null, "tool cards start collapsed");
    const reasoning = lastTurn(page).locator("details.reasoning");
    assert.equal(await reasoning.count(), 1);
    assert.equal(await reasoning.getAttribute("open"), null, "reasoning starts collapsed");
    assert.match(await reasoning.locator(".reasoning-body").textContent(), /read the README first/);
    const footer = await lastTurn(page).locator(".turn-footer").textContent();
    assert.match(footer, /in 1,980 · out 80 · \$0\.0021/);
    assert.match(await page.locator("#usage-total").textContent(), /Total: in 1,980 · out 80/);
    const turn = await api(
      `/v1/conversations/${await cidOf(page)}/turns/${await lastTurn(page).getAttribute("data-turn")}`,
      await tokenOf(page),
    );
    assert.equal(await shownText(page), turn.result.text);
    await tool.locator("summary").click();
    await shot(page, "answer-with-tool");
    // The conversation is listed, and the URL names it.
    await page.locator(".conversation-list li", { hasText: "What does the README say?" }).waitFor();
    await page.context().close();
  });

  it("a reload in the middle of a long answer resumes it; the text ends identical to the turn's result", async () => {
    const page = await openPage();
    await signIn(page, unique("reload"));
    await send(page, "Explain everything [long] [slow]");
    await lastTurn(page).locator(".agent .text").nth(1).waitFor();
    await page.waitForFunction(
      () => (document.querySelectorAll("li.turn .agent .text")[1]?.textContent ?? "").split(" ").length > 8,
    );
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await waitForBadge(page, "done", 60_000);
    const turnId = await lastTurn(page).getAttribute("data-turn");
    const turn = await api(`/v1/conversations/${await cidOf(page)}/turns/${turnId}`, await tokenOf(page));
    assert.equal(turn.status, "completed");
    assert.equal(await shownText(page), turn.result.text);
    assert.equal(await page.locator("li.turn").count(), 1);
    await shot(page, "after-reload");
    await page.context().close();
  });

  it("two tabs see the same stream; a permission answered in one resolves in both; a question is answered through its form", async () => {
    const user = unique("twotabs");
    const a = await openPage();
    await signIn(a, user);
    const cid = await cidOf(a);
    const b = await openPage({ width: 390, height: 844 });
    await signIn(b, user, cid);
    await send(a, "Run the tests please [permission]");
    const cardA = a.locator(".interaction", { hasText: "Run the test suite?" });
    const cardB = b.locator(".interaction", { hasText: "Run the test suite?" });
    await cardA.waitFor();
    await cardB.waitFor();
    // Only the grants the request's scopes allow are offered.
    assert.deepEqual(await cardA.locator("button").allTextContents(), ["Allow once", "Allow for this session", "Deny"]);
    await shot(b, "permission-phone");
    await cardA.getByRole("button", { name: "Allow for this session" }).click();
    await cardA.locator(".outcome", { hasText: "Allowed for this session." }).waitFor();
    await cardB.locator(".outcome", { hasText: "Answered (in another tab or on another device)." }).waitFor();
    await waitForBadge(a, "done");
    await waitForBadge(b, "done");
    assert.equal(await shownText(a), await shownText(b));
    assert.match(await shownText(a), /allowed for this session/);

    await send(b, "Set things up [ask]");
    const form = b.locator(".interaction", { hasText: "A few details before I start" });
    await form.waitFor();
    await form.getByLabel("Project name *").fill("gateway");
    await form.getByLabel("Test framework *").selectOption("jest");
    await form.getByLabel("Collect coverage?").check();
    await form.getByLabel("Parallel workers").fill("3");
    await form.getByLabel("ci").check();
    await form.getByLabel("Registry token (optional)").fill("s3cret-value");
    await shot(b, "question-form", { fullPage: true });
    await form.getByRole("button", { name: "Send answer" }).click();
    await form.locator(".outcome", { hasText: "Answered: Project name: gateway" }).waitFor();
    await waitForBadge(b, "done");
    await waitForBadge(a, "done");
    assert.match(await shownText(a), /Setting up gateway with jest and coverage/);
    assert.doesNotMatch(await a.content(), /s3cret-value/, "the other tab never sees the answer's values");
    await a.context().close();
    await b.context().close();
  });

  it("a running turn can be stopped and is marked cancelled", async () => {
    const page = await openPage();
    await signIn(page, unique("stop"));
    await send(page, "A long job [long] [slow]");
    await page.locator("#stop").waitFor({ state: "visible" });
    await lastTurn(page).locator(".agent .text").first().waitFor();
    await page.locator("#stop").click();
    await waitForBadge(page, "cancelled");
    assert.match(await lastTurn(page).locator(".turn-footer").textContent(), /stopped by the user/);
    assert.equal(await page.locator("#stop").isHidden(), true);
    await shot(page, "cancelled");
    await page.context().close();
  });

  it("when the server closes the stream mid-turn, the page reconnects and finishes the answer by itself", async () => {
    const page = await openPage();
    await signIn(page, unique("drop"));
    await send(page, "Keep going [long] [slow]");
    await lastTurn(page).locator(".agent .text").nth(1).waitFor();
    const dropped = await api(`/v1/conversations/${await cidOf(page)}/dev/drop-streams`, await tokenOf(page), {
      method: "POST",
    });
    assert.equal(dropped.dropped, 1);
    await page.locator("#connection[data-state=reconnecting]").waitFor({ timeout: 5000 });
    await page.locator("#connection[data-state=live]").waitFor({ timeout: 10_000 });
    await waitForBadge(page, "done", 60_000);
    const turn = await api(
      `/v1/conversations/${await cidOf(page)}/turns/${await lastTurn(page).getAttribute("data-turn")}`,
      await tokenOf(page),
    );
    assert.equal(await shownText(page), turn.result.text);
    await page.context().close();
  });

  it("agent text containing HTML and script tags is shown as text", async () => {
    const page = await openPage();
    await signIn(page, unique("xss"));
    const hostile = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>`;
    await send(page, hostile);
    await waitForBadge(page, "done");
    const text = await lastTurn(page).locator(".agent .text").first().textContent();
    assert.ok(text.includes('<img src=x onerror="window.__pwned=1">'), text);
    assert.ok(text.includes("<script>window.__pwned=2</script>"));
    assert.equal(await page.locator("li.turn img, li.turn script, li.turn b").count(), 0);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await lastTurn(page).locator(".bubble-user").textContent(), hostile);
    await shot(page, "html-as-text");
    await page.context().close();
  });
});
