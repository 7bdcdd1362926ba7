// Queued messages on the page (issue 21, "A queue"): Enter during a turn queues the message, shown
// under the running turn with Edit and Remove; the queue runs in order once the turn ends, and a
// second tab shows the same queue.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { api, assertAccessible, cidOf, lastTurn, openPage, send, shot, signIn, tokenOf, unique, waitForBadge } from "./harness.mjs";

describe("queued messages", () => {
  it("Enter during a turn queues the message under the running turn; queued messages can be edited and removed, and run in order after it", async () => {
    const user = unique("queue");
    const page = await openPage();
    await signIn(page, user);
    await send(page, "Explain everything [words:600] [slow]");
    await page.getByRole("button", { name: "Stop" }).waitFor();
    const input = page.getByLabel("Message", { exact: true });
    for (const message of ["first queued", "second queued", "third queued"]) {
      await input.fill(message);
      await input.press("Enter");
    }
    const queue = page.getByRole("list", { name: "Queued messages" });
    const item = (text) => queue.getByRole("listitem").filter({ hasText: text });
    await item("third queued").waitFor();
    assert.deepEqual(await queue.locator(".queued-text").allTextContents(), ["first queued", "second queued", "third queued"]);
    // Not in the transcript: only the running turn is.
    assert.equal(await page.locator("li.turn").count(), 1);
    await assertAccessible(page, "queued messages");
    await shot(page, "queued-messages");

    // A second tab shows the same queue.
    const other = await openPage();
    await signIn(other, user, await cidOf(page));
    await other.getByRole("list", { name: "Queued messages" }).getByText("third queued").waitFor();
    await page.bringToFront();

    await item("first queued").getByRole("button", { name: "Remove" }).click();
    await item("first queued").waitFor({ state: "detached" });
    await item("second queued").getByRole("button", { name: "Edit" }).click();
    const box = page.getByLabel("Edit queued message");
    await box.fill("second, edited");
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
    assert.deepEqual(await page.locator(".bubble-user").allTextContents(), ["Explain everything [words:600] [slow]", "second, edited", "third queued"]);
    assert.equal(await page.locator("#queued").isHidden(), true);
    const turnId = await lastTurn(page).getAttribute("data-turn");
    const turn = await api(`/v1/conversations/${await cidOf(page)}/turns/${turnId}`, await tokenOf(page));
    assert.equal(turn.status, "completed");
    await page.context().close();
  });
});
