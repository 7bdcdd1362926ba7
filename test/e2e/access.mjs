// The page for keyboard and screen reader users (issue 36): where the focus goes after a button
// that goes away (an example prompt, Regenerate and the ‹ › version picker leave it on the message
// box or the picker, never on the page's <body>), and the headings and groups a conversation reads by.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assertAccessible, lastTurn, openPage, send, signIn, unique, waitForBadge } from "./harness.mjs";

/** The focused element, as a test reads it: its id, its accessible label, and whether it is in a version picker. */
const focused = (page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    return {
      tag: el?.tagName.toLowerCase(),
      id: el?.id || null,
      label: el?.getAttribute("aria-label") ?? null,
      inPicker: !!el?.closest(".branch-picker"),
    };
  });

describe("focus stays where the user is", () => {
  it("an example prompt and Regenerate leave the focus in the message box; the ‹ › picker keeps it on the picker", async () => {
    const page = await openPage();
    await signIn(page, unique("focus-kept"));
    await page.getByRole("button", { name: /Explain the README/ }).click();
    await waitForBadge(page, "done");
    await page.locator("#empty").waitFor({ state: "hidden" });
    assert.deepEqual(
      await focused(page),
      { tag: "textarea", id: "composer-input", label: null, inPicker: false },
      "after an example prompt",
    );

    const picker = () => lastTurn(page).getByRole("group", { name: "Versions of this message" });
    await lastTurn(page)
      .getByRole("button", { name: /^Regenerate/ })
      .click();
    await picker().getByText("2/2").waitFor();
    await waitForBadge(page, "done");
    assert.deepEqual(
      await focused(page),
      { tag: "textarea", id: "composer-input", label: null, inPicker: false },
      "after Regenerate",
    );

    // By mouse: the version shown is the first, whose ‹ is disabled: the focus moves to its ›.
    await picker().getByRole("button", { name: "Previous version" }).click();
    await picker().getByText("1/2").waitFor();
    assert.deepEqual(
      await focused(page),
      { tag: "button", id: null, label: "Next version", inPicker: true },
      "after ‹",
    );
    // By keyboard, from there: Enter shows the second version; the focus moves to its ‹.
    await page.keyboard.press("Enter");
    await picker().getByText("2/2").waitFor();
    assert.deepEqual(
      await focused(page),
      { tag: "button", id: null, label: "Previous version", inPicker: true },
      "after ›",
    );
    await page.context().close();
  });
});

describe("the conversation's structure for a screen reader", () => {
  it("each message has a hidden heading, You said / The agent said; an ask is a group under it, not a landmark", async () => {
    const page = await openPage();
    await signIn(page, unique("headings"));
    await send(page, "What does the README say?");
    await waitForBadge(page, "done");
    await send(page, "Run the tests [permission]");
    const card = page.locator(".interaction", { hasText: "Run the test suite?" });
    await card.waitFor();
    const transcript = page.getByRole("list", { name: "Conversation" });
    assert.deepEqual(await transcript.getByRole("heading", { level: 3 }).allTextContents(), [
      "You said",
      "The agent said",
      "You said",
      "The agent said",
    ]);
    // The headings are for a screen reader only: one pixel, clipped.
    const box = await transcript.getByRole("heading", { name: "You said" }).first().boundingBox();
    assert.ok(box && box.width <= 1 && box.height <= 1, JSON.stringify(box));
    // The ask: a group named by its title, a heading under the answer's; no landmark in the transcript.
    await transcript.getByRole("group", { name: "Run the test suite?" }).waitFor();
    assert.deepEqual(await transcript.getByRole("heading", { level: 4 }).allTextContents(), ["Run the test suite?"]);
    assert.equal(await transcript.getByRole("region").count(), 0, "no landmark among the messages");
    await assertAccessible(page, "headings and an ask");
    await card.getByRole("button", { name: "Allow once" }).click();
    await waitForBadge(page, "done");
    await page.context().close();
  });
});
