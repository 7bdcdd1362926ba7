// Queued messages on the page (issue 21, "A queue"): Enter during a turn queues the message, shown
// under the running turn with Edit and Remove; the queue runs in order once the turn ends, and a
// second tab shows the same queue.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  assertAccessible,
  cidOf,
  lastTurn,
  openPage,
  send,
  shot,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

describe("queued messages", () => {
  it("Enter during a turn queues the message under the running turn; queued messages can be edited and removed, and run in order after it", async () => {
    const user = unique("queue");
    const page = await openPage();
    await signIn(page, user);
    await send(page, "Explain everything [words:600] [slow]");
    await page.getByRole("button", { name: "Stop" }).waitFor();
    const input = page.getByLabel("Message", { exact: true });
    // The first queued send is slow to reach the server (held here until all three are typed): the
    // server queues sends as they reach it, so the page sends each once the one before it is answered.
    const turns = "**/v1/conversations/*/turns";
    let release = () => {};
    const released = new Promise((resolve) => (release = resolve));
    let first = "to hold";
    /** @type {Promise<void>[]} queued sends that went out while the first was held */
    const overtaking = [];
    await page.route(turns, async (route) => {
      if (route.request().postDataJSON()?.whenBusy !== "queue") return route.continue();
      if (first === "to hold") {
        first = "held";
        await released;
        return route.continue();
      }
      if (first === "released") return route.continue();
      const answered = route.fetch().then((response) => route.fulfill({ response }));
      overtaking.push(answered);
      await answered;
    });
    for (const message of ["first queued", "second queued", "third queued"]) {
      await input.fill(message);
      await input.press("Enter");
    }
    await Promise.all(overtaking);
    first = "released";
    release();
    const queue = page.getByRole("list", { name: "Queued messages" });
    const item = (text) => queue.getByRole("listitem").filter({ hasText: text });
    await item("third queued").waitFor();
    await page.unroute(turns);
    assert.deepEqual(await queue.locator(".queued-text").allTextContents(), [
      "first queued",
      "second queued",
      "third queued",
    ]);
    // Not in the transcript: only the running turn is.
    assert.equal(await page.locator("li.turn").count(), 1);
    await assertAccessible(page, "queued messages");
    await shot(page, "queued-messages");

    // A second tab shows the same queue.
    const other = await openPage();
    await signIn(other, user, await cidOf(page));
    await other.getByRole("list", { name: "Queued messages" }).getByText("third queued").waitFor();
    await page.bringToFront();

    // Another client queues a message. The page reads the queue again, and that read is slow to
    // come back: meanwhile "first queued" is removed here. The late read, older than the removal,
    // is not shown (the queue is read again): the removed message never comes back.
    const [cid, token] = [await cidOf(page), await tokenOf(page)];
    const summary = `**/v1/conversations/${cid}`;
    let hold = true;
    /** @type {(release: () => Promise<void>) => void} */
    let onHeld = () => {};
    const held = new Promise((resolve) => (onHeld = resolve));
    await page.route(summary, async (route) => {
      if (!hold) return route.continue();
      hold = false;
      const response = await route.fetch();
      onHeld(() => route.fulfill({ response }));
    });
    const elsewhere = { turnId: `t-${crypto.randomUUID()}`, message: "queued elsewhere", whenBusy: "queue" };
    await api(`/v1/conversations/${cid}/turns`, token, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(elsewhere),
    });
    const answerLate = await held;
    await item("first queued").getByRole("button", { name: "Remove" }).click();
    await item("first queued").waitFor({ state: "detached" });
    await page.evaluate(() => {
      const list = /** @type {HTMLElement} */ (document.getElementById("queued-list"));
      window.queueShown = [];
      new MutationObserver(() => window.queueShown.push(list.textContent)).observe(list, {
        childList: true,
        subtree: true,
      });
    });
    await answerLate();
    await item("queued elsewhere").waitFor();
    await page.unroute(summary);
    assert.deepEqual(
      (await page.evaluate(() => window.queueShown)).filter((text) => text.includes("first queued")),
      [],
    );

    await item("second queued").getByRole("button", { name: "Edit" }).click();
    const box = page.getByLabel("Edit queued message");
    await box.fill("second, edited");
    // Meanwhile the other client removes its message: the page reads the queue again, and the
    // message being edited keeps what was typed in it, and the focus.
    await api(`/v1/conversations/${cid}/turns/${elsewhere.turnId}`, token, { method: "DELETE" });
    await item("queued elsewhere").waitFor({ state: "detached" });
    assert.equal(await box.inputValue(), "second, edited");
    assert.equal(await box.evaluate((node) => node === document.activeElement), true);
    await page.getByRole("button", { name: "Save" }).click();
    await queue.getByText("second, edited").waitFor();
    // The other tab follows the edit and the removal.
    // (Brought to the front: a page in the background draws no frames for the locator to see.)
    await other.bringToFront();
    await other.getByRole("list", { name: "Queued messages" }).getByText("second, edited").waitFor();
    assert.equal(await other.getByRole("list", { name: "Queued messages" }).getByText("first queued").count(), 0);
    await other.context().close();
    await page.bringToFront();

    // Stop ends the running turn; the queue runs on, in order.
    await page.getByRole("button", { name: "Stop" }).click();
    await page.locator(".bubble-user", { hasText: "third queued" }).waitFor({ timeout: 30_000 });
    await waitForBadge(page, "done", 30_000);
    assert.deepEqual(await page.locator(".bubble-user").allTextContents(), [
      "Explain everything [words:600] [slow]",
      "second, edited",
      "third queued",
    ]);
    // The queue is read again once the last queued turn started: the list goes.
    await page.locator("#queued").waitFor({ state: "hidden" });
    const turnId = await lastTurn(page).getAttribute("data-turn");
    const turn = await api(`/v1/conversations/${cid}/turns/${turnId}`, token);
    assert.equal(turn.status, "completed");
    await page.context().close();
  });
});

describe("the queued-message editor (issue 36)", () => {
  it("Enter saves and Shift+Enter adds a line; a message that starts while being edited says so and gives the edit back", async () => {
    const page = await openPage();
    await signIn(page, unique("queue-edit"));
    // The running turn waits for a permission: nothing queued starts until it is answered here.
    await send(page, "Run the tests [permission]");
    const card = page.locator(".interaction", { hasText: "Run the test suite?" });
    await card.waitFor();
    const input = page.getByLabel("Message", { exact: true });
    await input.fill("queued one");
    await input.press("Enter");
    const queue = page.getByRole("list", { name: "Queued messages" });
    const item = queue.getByRole("listitem").filter({ hasText: "queued one" });
    await item.waitFor();

    await item.getByRole("button", { name: "Edit" }).click();
    const box = page.getByLabel("Edit queued message");
    await box.press("End");
    await page.keyboard.type(", edited");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("second line");
    await page.keyboard.press("Enter");
    await box.waitFor({ state: "detached" });
    await queue.locator(".queued-text", { hasText: "second line" }).waitFor();
    assert.deepEqual(await queue.locator(".queued-text").allTextContents(), ["queued one, edited\nsecond line"]);

    // Editing again; before it is saved, the running turn ends (its permission answered) and the
    // queued message starts as it was.
    await item.getByRole("button", { name: "Edit" }).click();
    await box.fill("rewritten while it starts");
    await card.getByRole("button", { name: "Allow once" }).click();
    await page.locator(".bubble-user", { hasText: "second line" }).waitFor();
    await page.locator("#banner", { hasText: "started before your edit was saved" }).waitFor();
    assert.equal(await box.count(), 0, "the editor is gone with the message");
    assert.equal(await input.inputValue(), "rewritten while it starts", "the edit is back in the message box");
    await waitForBadge(page, "done");
    await page.context().close();
  });
});
