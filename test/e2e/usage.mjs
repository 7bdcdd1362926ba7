// The usage line and the budget (issue 36): the budget shows from a new conversation's first turn
// and follows the stream after every turn, also after a reload read it with the conversation
// (its stream's snapshot); usage nobody reported reads "unknown", never nothing (and the budget then says "at least").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BUDGET, lastTurn, openPage, send, signIn, unique, waitForBadge } from "./harness.mjs";

const total = (page) => page.locator("#usage-total").textContent();
const budgetOf = (used) => `Budget ${used.toLocaleString("en-US")} of ${BUDGET.toLocaleString("en-US")} tokens`;

describe("the usage line", () => {
  it("a new conversation shows its budget from the first turn; after a reload it follows every turn", async () => {
    const page = await openPage();
    await signIn(page, unique("budget"));
    assert.equal(await total(page), "", "nothing before the first turn");
    // A plain scripted turn spends 1,980 in and 80 out: 2,060 of the budget.
    await send(page, "What does the README say?");
    await waitForBadge(page, "done");
    assert.equal(await total(page), `Total: in 1,980 · out 80 · $0.0021 (cost unverified) · ${budgetOf(2060)}`);

    // A reload reads the budget with the conversation (its stream's snapshot); the next turn moves it on, with the total.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await page.locator("#usage-total", { hasText: budgetOf(2060) }).waitFor();
    await send(page, "And the tests?");
    await page.locator("li.turn").nth(1).locator('.badge:text-is("done")').waitFor({ timeout: 20_000 });
    assert.equal(await total(page), `Total: in 3,960 · out 160 · $0.0042 (cost unverified) · ${budgetOf(4120)}`);
    await page.context().close();
  });

  it("usage nobody reported reads unknown, on the turn and in the total", async () => {
    const page = await openPage();
    await signIn(page, unique("unknown-usage"));
    // No step usage and no receipt: the turn's usage is unknown.
    await send(page, "Say hello [no-usage] [receipt-none]");
    await waitForBadge(page, "done");
    assert.equal(await lastTurn(page).locator(".turn-footer .usage").textContent(), "usage unknown");
    // No report brought the budget: it is read once the turn has ended, a floor over unknown usage.
    const expected = `Total: unknown · Budget at least 0 of ${BUDGET.toLocaleString("en-US")} tokens`;
    await page.locator("#usage-total", { hasText: "Budget" }).waitFor();
    assert.equal(await total(page), expected);
    // Read back after a reload: the same.
    await page.reload();
    await waitForBadge(page, "done");
    await page.locator("#usage-total", { hasText: "Budget" }).waitFor();
    assert.equal(await lastTurn(page).locator(".turn-footer .usage").textContent(), "usage unknown");
    assert.equal(await total(page), expected);
    await page.context().close();
  });
});
