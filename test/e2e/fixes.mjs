// The chat page's "broken today" list (issue 12), one test per item, each named for what it pins.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  assertAccessible,
  assertNoSidewaysScroll,
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
  variants,
  waitForBadge,
} from "./harness.mjs";

const LONG_WORD = "Supercalifragilisticexpialidocious".repeat(6);
const LONG_URL = `https://example.com/${"a-very-long-path-segment/".repeat(8)}index.html?query=${"x".repeat(60)}`;

describe("fixed: phones do not scroll sideways", () => {
  for (const [width, height] of [
    [390, 844],
    [320, 640],
  ]) {
    it(`at ${width}px: a long first message, title, URL and unbroken word stay inside the window`, async () => {
      const page = await openPage({ width, height });
      await signIn(page, unique("phone"));
      await assertNoSidewaysScroll(page, "empty");
      await send(page, `Please look at ${LONG_URL} and explain ${LONG_WORD} in this repository`);
      await waitForBadge(page, "done");
      await assertNoSidewaysScroll(page, "after an answer");
      const title = await page.locator("#conversation-title").boundingBox();
      assert.ok(title && title.x + title.width <= width, `the title fits: ${JSON.stringify(title)}`);
      const bubble = await lastTurn(page).locator(".bubble-user").boundingBox();
      assert.ok(bubble && bubble.x + bubble.width <= width, `the message fits: ${JSON.stringify(bubble)}`);
      await page.locator("#toggle-sidebar").click();
      await page.locator("#sidebar.open").waitFor();
      await page.waitForTimeout(250); // the slide-in
      await assertNoSidewaysScroll(page, "sidebar open");
      await shot(page, `phone-${width}-long-words`);
      await page.context().close();
    });
  }
});

describe("fixed: answered asks and the cancel reason survive a reload", () => {
  it("a denied permission reads as denied after a reload, and as answered (not accepted) on another device", async () => {
    const user = unique("asks-reload");
    const page = await openPage();
    await signIn(page, user);
    await send(page, "Run the tests [permission]");
    const card = page.locator(".interaction", { hasText: "Run the test suite?" });
    await card.getByRole("button", { name: "Deny" }).click();
    await card.locator(".outcome", { hasText: "Denied." }).waitFor();
    await waitForBadge(page, "done");
    const cid = await cidOf(page);

    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    const again = page.locator(".interaction", { hasText: "Run the test suite?" });
    await again.locator(".outcome", { hasText: "Denied." }).waitFor();
    assert.equal(await again.getAttribute("data-status"), "answered");
    assert.equal(await again.locator("button:enabled").count(), 0, "an answered ask offers nothing to press");
    // The order is kept: the ask sits before the answer that followed it.
    const order = await lastTurn(page)
      .locator(".parts > *")
      .evaluateAll((nodes) => nodes.map((n) => n.className.split(" ")[0]));
    assert.ok(order.indexOf("interaction") < order.lastIndexOf("text"), order.join(","));

    const other = await openPage();
    await signIn(other, user, cid);
    const elsewhere = other.locator(".interaction", { hasText: "Run the test suite?" });
    await elsewhere.locator(".outcome", { hasText: "Answered (in another tab or on another device)." }).waitFor();
    assert.doesNotMatch(await elsewhere.textContent(), /accepted/i);
    await page.context().close();
    await other.context().close();
  });

  it("an answered question and a stopped turn's reason are there after switching conversations", async () => {
    const page = await openPage();
    await signIn(page, unique("asks-switch"));
    await send(page, "Set things up [ask]");
    const form = page.locator(".interaction", { hasText: "A few details before I start" });
    await form.getByLabel("Project name *").fill("gateway");
    await form.getByLabel("Test framework *").selectOption("vitest");
    await form.getByRole("button", { name: "Send answer" }).click();
    await waitForBadge(page, "done");
    await send(page, "A long job [long] [slow]");
    await lastTurn(page).locator(".agent .text").first().waitFor();
    await page.locator("#stop").click();
    await waitForBadge(page, "cancelled");
    const cid = await cidOf(page);

    await page.locator("#new-conversation").click();
    await page.locator("#empty").waitFor();
    await page.locator(".conversation-list a", { hasText: "Set things up" }).click();
    await page.waitForFunction((id) => new URL(location.href).searchParams.get("c") === id, cid);
    await page.locator("#connection[data-state=live]").waitFor();
    const card = page.locator(".interaction", { hasText: "A few details before I start" });
    await card.locator(".outcome", { hasText: "Answered: Project name: gateway · Test framework: vitest" }).waitFor();
    assert.match(await lastTurn(page).locator(".turn-footer").textContent(), /cancelled.*stopped by the user/);
    await page.context().close();
  });
});

describe("fixed: a failed send keeps the message", () => {
  it("with the server unreachable the message stays, with the error and Retry, also after a reload; Retry sends the same turn", async () => {
    const page = await openPage();
    await signIn(page, unique("offline"));
    const cid = await cidOf(page);
    await page.route("**/v1/conversations/*/turns", (route) => route.abort("internetdisconnected"));
    await send(page, "Please keep this message");
    const failed = lastTurn(page);
    await failed.locator(".send-error", { hasText: "Not sent: could not reach the server." }).waitFor();
    assert.equal(await failed.locator(".bubble-user").textContent(), "Please keep this message");
    assert.equal(await page.locator("#composer-input").inputValue(), "", "the message is on the page once, not twice");
    const turnId = await failed.getAttribute("data-turn");
    await shot(page, "send-failed");

    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    const kept = page.locator(`li.turn[data-turn="${turnId}"]`);
    await kept.locator(".send-error").waitFor();
    assert.equal(await kept.locator(".bubble-user").textContent(), "Please keep this message");

    await page.unroute("**/v1/conversations/*/turns");
    await kept.getByRole("button", { name: "Retry" }).click();
    await waitForBadge(page, "done");
    assert.equal(await page.locator("li.turn").count(), 1);
    const turn = await api(`/v1/conversations/${cid}/turns/${turnId}`, await tokenOf(page));
    assert.equal(turn.message, "Please keep this message", "the retry is the same turn id");
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    assert.equal(await page.locator(".send-error:visible").count(), 0, "once sent, it is no longer kept as unsent");
    await page.context().close();
  });

  it("a refused send (the message is too large) gives the text back to the composer, with the reason", async () => {
    const page = await openPage();
    await signIn(page, unique("refused"));
    await page.route("**/v1/conversations/*/turns", (route) =>
      route.fulfill({
        status: 413,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "message_too_large", message: "the message is too large" } }),
      }),
    );
    await send(page, "Too large, say");
    await page.locator("#banner", { hasText: "the message is too large" }).waitFor();
    assert.equal(await page.locator("#composer-input").inputValue(), "Too large, say");
    assert.equal(await page.locator("li.turn").count(), 0);
    await page.context().close();
  });
});

describe("fixed: the answer stays in view", () => {
  it("a tall message is followed by its answer; scrolling up stops following and shows Jump to latest", async () => {
    const page = await openPage({ width: 1000, height: 600 });
    await signIn(page, unique("scroll"));
    const tall = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`).join("\n");
    await send(page, `${tall}\nExplain [long]`);
    await waitForBadge(page, "done");
    const inView = await page.evaluate(() => {
      const list = document.getElementById("transcript").getBoundingClientRect();
      const texts = document.querySelectorAll("li.turn:last-child .agent .text");
      const last = texts[texts.length - 1].getBoundingClientRect();
      return last.bottom <= list.bottom + 1 && last.bottom > list.top;
    });
    assert.ok(inView, "the end of the answer is visible");

    await send(page, "And more [long] [slow]");
    await lastTurn(page).locator(".agent .text").nth(1).waitFor();
    await page.locator("#transcript").hover();
    await page.mouse.wheel(0, -600);
    await page.locator("#jump-latest").waitFor();
    const held = await page.evaluate(() => document.getElementById("transcript").scrollTop);
    await page.waitForTimeout(800);
    assert.equal(
      await page.evaluate(() => document.getElementById("transcript").scrollTop),
      held,
      "no longer following",
    );
    await page.locator("#jump-latest").click();
    await page.waitForFunction(() => {
      const list = document.getElementById("transcript");
      return list.scrollHeight - list.scrollTop - list.clientHeight < 48;
    });
    assert.equal(await page.locator("#jump-latest").isHidden(), true);
    await page.keyboard.press("Escape");
    await waitForBadge(page, "cancelled");
    await page.context().close();
  });
});

describe("fixed: a conversation deleted elsewhere is noticed", () => {
  it("the other tab says so and leaves it; sending from there does not bring it back", async () => {
    const user = unique("deleted");
    const a = await openPage();
    await signIn(a, user);
    await send(a, "Soon to be deleted");
    await waitForBadge(a, "done");
    const cid = await cidOf(a);
    const b = await openPage({ width: 390, height: 844 });
    await signIn(b, user, cid);
    await waitForBadge(b, "done");

    await a
      .locator(".conversation-list li", { hasText: "Soon to be deleted" })
      .getByRole("button", { name: /Delete conversation/ })
      .click();
    await b
      .locator("#banner", { hasText: "“Soon to be deleted” was deleted in another tab or on another device." })
      .waitFor({ timeout: 15_000 });
    assert.notEqual(await cidOf(b), cid, "the other tab left the deleted conversation");
    assert.equal(await b.locator("#conversation-title").textContent(), "New conversation");
    assert.equal(await b.locator("li.turn").count(), 0);
    assert.equal(await b.locator("#usage-total").textContent(), "");
    await shot(b, "deleted-elsewhere-phone");

    await send(b, "A new start");
    await waitForBadge(b, "done");
    const { conversations } = await api("/v1/conversations", await tokenOf(b));
    assert.deepEqual(
      conversations.map((c) => c.conversationId),
      [await cidOf(b)],
      "the deleted conversation was not re-created",
    );
    await a.context().close();
    await b.context().close();
  });
});

describe("fixed: focus and keyboard", () => {
  it("after Stop, focus is in the message box; Escape stops a running turn", async () => {
    const page = await openPage();
    await signIn(page, unique("focus"));
    // The first stop's answer is held back until the end: the stream says "cancelled" long before it
    // comes, as it can on a busy server, and the next turn's stop must not wait for it.
    let releaseFirst = () => {};
    const firstAnswered = new Promise((resolve) => (releaseFirst = resolve));
    let cancels = 0;
    await page.route("**/cancel", async (route) => {
      const response = await route.fetch();
      if (++cancels === 1) await firstAnswered;
      await route.fulfill({ response });
    });
    await send(page, "A long job [long] [slow]");
    await lastTurn(page).locator(".agent .text").first().waitFor();
    await page.locator("#stop").focus();
    await page.keyboard.press("Enter");
    await waitForBadge(page, "cancelled");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "composer-input");

    await send(page, "Another long job [long] [slow]");
    // Escape at once, while the message is still being sent: the turn stops as soon as it runs.
    await page.keyboard.press("Escape");
    await waitForBadge(page, "cancelled");
    releaseFirst();
    assert.equal(await page.locator("li.turn").count(), 2);
    assert.equal(await page.evaluate(() => document.activeElement?.id), "composer-input");
    await page.context().close();
  });

  it("on a phone the closed sidebar is out of the tab order; it opens, takes focus, and Escape closes it", async () => {
    const page = await openPage({ width: 390, height: 844 });
    await signIn(page, unique("sidebar"));
    await send(page, "First conversation");
    await waitForBadge(page, "done");
    // Tab through the whole page: nothing inside the closed sidebar takes focus.
    await page.locator("body").focus();
    const visited = [];
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press("Tab");
      visited.push(
        await page.evaluate(() => ({
          inSidebar: !!document.activeElement?.closest("#sidebar"),
          id: document.activeElement?.id || document.activeElement?.textContent?.slice(0, 20),
        })),
      );
    }
    assert.deepEqual(
      visited.filter((v) => v.inSidebar),
      [],
      JSON.stringify(visited),
    );

    await page.locator("#toggle-sidebar").focus();
    await page.keyboard.press("Enter");
    await page.locator("#sidebar.open").waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), "new-conversation");
    await page.keyboard.press("Tab");
    assert.ok(
      await page.evaluate(() => !!document.activeElement?.closest("#sidebar")),
      "Tab moves within the open sidebar",
    );
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !document.getElementById("sidebar").classList.contains("open"));
    assert.equal(await page.evaluate(() => document.activeElement?.id), "toggle-sidebar");
    await page.context().close();
  });

  it("keyboard only: sign in, send, answer an ask, open another conversation", async () => {
    const page = await openPage();
    await page.goto(server.base);
    await page.locator("#dev-user").waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), "dev-user");
    await page.keyboard.type(unique("keys"));
    await page.keyboard.press("Enter");
    await page.locator("#connection[data-state=live]").waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), "composer-input");
    await page.keyboard.type("Run the tests [permission]");
    await page.keyboard.press("Enter");
    const card = page.locator(".interaction", { hasText: "Run the test suite?" });
    await card.waitFor();
    // From the message box, Shift+Tab walks back into the ask: the note, then its grants.
    await card.getByRole("button", { name: "Allow once" }).focus();
    await page.keyboard.press("Enter");
    await card.locator(".outcome", { hasText: "Allowed once." }).waitFor();
    assert.ok(
      await page.evaluate(() => !!document.activeElement?.closest(".interaction")),
      "focus stays on the card's outcome, not <body>",
    );
    await waitForBadge(page, "done");
    await page.locator("#new-conversation").focus();
    await page.keyboard.press("Enter");
    await page.locator("#empty").waitFor();
    await page.locator(".conversation-list a", { hasText: "Run the tests" }).focus();
    await page.keyboard.press("Enter");
    await page.locator("li.turn").first().waitFor();
    await page.context().close();
  });
});

describe("fixed: asks read clearly", () => {
  it("the card says what was chosen; a number outside its range is refused on its field, by its label", async () => {
    const page = await openPage();
    await signIn(page, unique("clear"));
    await send(page, "Set things up [ask]");
    const form = page.locator(".interaction", { hasText: "A few details before I start" });
    await form.getByLabel("Project name *").fill("gateway");
    await form.getByLabel("Test framework *").selectOption("jest");
    await form.getByLabel("Parallel workers").fill("99");
    await form.getByRole("button", { name: "Send answer" }).click();
    const workers = form.getByLabel("Parallel workers");
    assert.equal(await workers.getAttribute("aria-invalid"), "true");
    const described = await workers.getAttribute("aria-describedby");
    assert.match(
      await page.locator(`[id="${described.split(" ").at(-1)}"]`).textContent(),
      /^Parallel workers must be at most 16\.$/,
    );
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute("name")),
      "workers",
      "focus goes to the field to fix",
    );
    await shot(page, "ask-field-error");
    await assertAccessible(page, "a question with a field error");

    // The server's refusal (422) is placed the same way, by label.
    await page.route("**/interactions/**", (route) =>
      route.fulfill({
        status: 422,
        contentType: "application/json",
        body: JSON.stringify({
          operationId: "x",
          status: "invalid_response",
          message: "project: must be at most 80 characters",
        }),
      }),
    );
    await workers.fill("3");
    await form.getByRole("button", { name: "Send answer" }).click();
    await form.locator(".field-error", { hasText: "Project name must be at most 80 characters." }).waitFor();
    assert.equal(await form.getByLabel("Project name *").getAttribute("aria-invalid"), "true");
    assert.equal(await workers.getAttribute("aria-invalid"), null);
    await page.unroute("**/interactions/**");

    await form.getByRole("button", { name: "Send answer" }).click();
    await form
      .locator(".outcome", {
        hasText: "Answered: Project name: gateway · Test framework: jest · Collect coverage?: no · Parallel workers: 3",
      })
      .waitFor();
    await waitForBadge(page, "done");
    await page.context().close();
  });

  it("a plan approved reads as approved; rejecting needs feedback", async () => {
    const page = await openPage();
    await signIn(page, unique("plan"));
    await send(page, "Plan it [plan]");
    const card = page.locator(".interaction", { hasText: "Approve plan revision 1?" });
    await card.getByRole("button", { name: "Reject with feedback" }).click();
    await card.locator(".outcome", { hasText: "Say what should change" }).waitFor();
    await card.getByRole("button", { name: "Approve" }).click();
    await card.locator(".outcome", { hasText: "Approved." }).waitFor();
    await waitForBadge(page, "done");
    await page.context().close();
  });
});

describe("fixed: a turn that waits for a person says what for", () => {
  it("the turn says Waiting for you: permission (so does its list entry, and a reload); answered, it works again", async () => {
    const page = await openPage();
    await signIn(page, unique("waiting"));
    await send(page, "Run the tests slowly [permission] [slow]");
    const typing = lastTurn(page).locator(".typing");
    await typing.filter({ hasText: "Waiting for you: permission" }).waitFor();
    assert.equal(await lastTurn(page).locator(".badge").textContent(), "waiting for you");
    await page.locator(".conversation-list li[aria-current=page] .meta", { hasText: "waiting for you" }).waitFor();
    const turnId = await lastTurn(page).getAttribute("data-turn");
    const turn = await api(`/v1/conversations/${await cidOf(page)}/turns/${turnId}`, await tokenOf(page));
    assert.deepEqual([turn.status, turn.waitingFor], ["running", "awaiting_permission"]);
    await shot(page, "waiting-for-permission");

    // A reload reads it from the summary.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await typing.filter({ hasText: "Waiting for you: permission" }).waitFor();

    await page.getByRole("button", { name: "Allow once" }).click();
    await typing.filter({ hasText: /^Working$/ }).waitFor();
    assert.equal(await lastTurn(page).locator(".badge").textContent(), "working");
    await waitForBadge(page, "done", 60_000);
    assert.equal(await typing.isHidden(), true);
    await page.context().close();
  });
});

describe("fixed: asks answered in their own form", () => {
  it("a permission in the Sandbox SDK's { response } form: its card offers its own decisions, and the run goes on when answered from the page", async () => {
    await variants({ permissionAnswer: "response" });
    try {
      const page = await openPage();
      await signIn(page, unique("response-form"));
      await send(page, "Run the tests [permission]");
      const card = page.locator(".interaction", { hasText: "Run the test suite?" });
      await card.waitFor();
      assert.deepEqual(await card.locator("button").allTextContents(), ["Allow once", "Deny"]);
      await card.getByRole("button", { name: "Allow once" }).click();
      await card.locator(".outcome", { hasText: "Allowed once." }).waitFor();
      await waitForBadge(page, "done");
      assert.match(await shownText(page), /The tests pass \(allowed once\)/);
      const tool = lastTurn(page).locator("details.tool", { hasText: "bash" });
      assert.equal(await tool.locator(".tool-status").textContent(), "completed");
      await page.context().close();
    } finally {
      await variants({});
    }
  });

  it("scopes in the contract's vocabulary still offer Allow once", async () => {
    await variants({ permissionScopes: "contract" });
    try {
      const page = await openPage();
      await signIn(page, unique("contract-scopes"));
      await send(page, "Run the tests [permission]");
      const card = page.locator(".interaction", { hasText: "Run the test suite?" });
      await card.waitFor();
      assert.deepEqual(await card.locator("button").allTextContents(), [
        "Allow once",
        "Allow for this session",
        "Deny",
      ]);
      await card.getByRole("button", { name: "Allow once" }).click();
      await card.locator(".outcome", { hasText: "Allowed once." }).waitFor();
      await waitForBadge(page, "done");
      await page.context().close();
    } finally {
      await variants({});
    }
  });
});

describe("fixed: accessibility", () => {
  it("the sign-in screen, an empty conversation, an answer, an ask and a stopped turn have no serious axe violation", async () => {
    const page = await openPage();
    await page.goto(server.base);
    await page.locator("#dev-user").waitFor();
    await assertAccessible(page, "sign-in");
    assert.equal(await page.locator("main:visible").count(), 1, "the sign-in screen is a main landmark");
    await page.getByLabel("Your name").fill(unique("axe"));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#empty").waitFor();
    await assertAccessible(page, "empty conversation");
    await send(page, "Use `npm test` and read **the README** [permission]");
    await page
      .locator(".interaction")
      .waitFor()
      .catch(async (err) => {
        await page.diagnose("axe-diag");
        throw err;
      });
    await assertAccessible(page, "an outstanding permission");
    await page.getByRole("button", { name: "Allow once" }).click();
    await waitForBadge(page, "done");
    await lastTurn(page).locator("details.tool summary").first().click();
    await assertAccessible(page, "an answer with a tool card");
    await send(page, "A long job [long] [slow]");
    await lastTurn(page).locator(".agent .text").first().waitFor();
    await page.locator("#stop").click();
    await waitForBadge(page, "cancelled");
    await assertAccessible(page, "a cancelled turn");
    await page.emulateMedia({ colorScheme: "dark" });
    await assertAccessible(page, "dark");
    await page.setViewportSize({ width: 390, height: 844 });
    await assertAccessible(page, "dark, narrow");
    await page.context().close();
  });
});
