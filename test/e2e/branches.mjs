// Branches on the chat page (docs/api.md#branches): Edit on any message and Regenerate on any answer
// make a branch; the "< n/m >" picker on the message where branches split switches between them;
// a reload keeps the active branch; a second tab follows a switch.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cidOf, faults, openPage, send, server, shot, signIn, unique, waitForBadge } from "./harness.mjs";

const messages = (page) => page.locator(".bubble-user").allTextContents();

/** Waits until the page shows exactly these user messages. */
async function shows(page, expected, timeout = 20_000) {
  await page.waitForFunction(
    (want) =>
      JSON.stringify([...document.querySelectorAll(".bubble-user")].map((n) => n.textContent)) === JSON.stringify(want),
    expected,
    { timeout },
  );
}

describe("branches on the chat page", () => {
  it("Edit on an earlier message and Regenerate on an earlier answer branch; the picker switches; a reload keeps the branch; a second tab follows", async () => {
    const page = await openPage();
    await signIn(page, unique("branch"));
    await send(page, "first");
    await waitForBadge(page, "done");
    await send(page, "second");
    await waitForBadge(page, "done");

    // Edit the first message: a branch from the start.
    const first = page.locator("li.turn").first();
    await first.getByRole("button", { name: "Edit" }).click();
    await first.getByLabel("Edit your message").fill("first, edited");
    await page.keyboard.press("Enter");
    await shows(page, ["first, edited"]);
    await waitForBadge(page, "done");
    const picker = () => page.locator("li.turn").first().getByRole("group", { name: "Versions of this message" });
    await picker().getByText("2/2").waitFor();
    await shot(page, "branch-picker");

    // A second tab of the same browser, on the same conversation: it shows the active branch.
    const cid = await cidOf(page);
    const other = await page.context().newPage();
    await other.goto(`${server.base}/?c=${cid}`);
    await other.locator("#connection[data-state=live]").waitFor();
    await shows(other, ["first, edited"]);

    // Back to the first version: the whole first line again, here and in the other tab.
    await picker().getByRole("button", { name: "Previous version" }).click();
    await shows(page, ["first", "second"]);
    await picker().getByText("1/2").waitFor();
    assert.equal(await picker().getByRole("button", { name: "Previous version" }).isDisabled(), true);
    await shows(other, ["first", "second"]);

    // A reload keeps the active branch.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await shows(page, ["first", "second"]);
    await picker().getByText("1/2").waitFor();

    // Regenerate the first answer (not the last one): a third version of the first message.
    await page.locator("li.turn").first().getByRole("button", { name: "Regenerate" }).click();
    await shows(page, ["first"]);
    await waitForBadge(page, "done");
    await picker().getByText("3/3").waitFor();
    await shows(other, ["first"]);
    assert.deepEqual(await messages(page), ["first"]);
    await page.context().close();
  });

  it("an edit the server could not take keeps the editor open with the edited text; sent again, it branches", async () => {
    const page = await openPage();
    await signIn(page, unique("branch-fail"));
    await send(page, "first");
    await waitForBadge(page, "done");
    await send(page, "second");
    await waitForBadge(page, "done");

    // The agent service fails the fork (an edit of the second message forks the first's session): 502.
    await faults({ failNext: { status: 500, count: 5, route: "runtime.session.fork" } });
    const second = page.locator("li.turn").nth(1);
    await second.getByRole("button", { name: "Edit" }).click();
    const editor = second.getByLabel("Edit your message");
    await editor.fill("second, edited");
    await page.keyboard.press("Enter");
    await page.locator("#banner:not([hidden])").waitFor();
    assert.match(await page.locator("#banner").textContent(), /agent service answered 500/);
    assert.equal(await editor.inputValue(), "second, edited");
    // Nothing else changed: the same two turns, no branch.
    assert.equal(await page.locator("li.turn").count(), 2);
    assert.equal(await page.locator(".branch-picker").count(), 0);

    await faults({});
    await editor.press("Enter");
    await shows(page, ["first", "second, edited"]);
    await waitForBadge(page, "done");
    await page.context().close();
  });
});
