// Where the focus goes after a button that goes away (issue 36): an example prompt, Regenerate and
// the ‹ › version picker leave it on the message box or the picker, never on the page's <body>.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lastTurn, openPage, signIn, unique, waitForBadge } from "./harness.mjs";

/** The focused element, as a test reads it: its id, its accessible label, and whether it is in a version picker. */
const focused = (page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    return { tag: el?.tagName.toLowerCase(), id: el?.id || null, label: el?.getAttribute("aria-label") ?? null, inPicker: !!el?.closest(".branch-picker") };
  });

describe("focus stays where the user is", () => {
  it("an example prompt and Regenerate leave the focus in the message box; the ‹ › picker keeps it on the picker", async () => {
    const page = await openPage();
    await signIn(page, unique("focus-kept"));
    await page.getByRole("button", { name: /Explain the README/ }).click();
    await waitForBadge(page, "done");
    await page.locator("#empty").waitFor({ state: "hidden" });
    assert.deepEqual(await focused(page), { tag: "textarea", id: "composer-input", label: null, inPicker: false }, "after an example prompt");

    const picker = () => lastTurn(page).getByRole("group", { name: "Versions of this message" });
    await lastTurn(page).getByRole("button", { name: /^Regenerate/ }).click();
    await picker().getByText("2/2").waitFor();
    await waitForBadge(page, "done");
    assert.deepEqual(await focused(page), { tag: "textarea", id: "composer-input", label: null, inPicker: false }, "after Regenerate");

    // By mouse: the version shown is the first, whose ‹ is disabled: the focus moves to its ›.
    await picker().getByRole("button", { name: "Previous version" }).click();
    await picker().getByText("1/2").waitFor();
    assert.deepEqual(await focused(page), { tag: "button", id: null, label: "Next version", inPicker: true }, "after ‹");
    // By keyboard, from there: Enter shows the second version; the focus moves to its ‹.
    await page.keyboard.press("Enter");
    await picker().getByText("2/2").waitFor();
    assert.deepEqual(await focused(page), { tag: "button", id: null, label: "Previous version", inPicker: true }, "after ›");
    await page.context().close();
  });
});
