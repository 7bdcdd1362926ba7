// A lost connection said where the user looks (issue 23, item 3), and phones (item 7): the
// composer's placeholder fits beside Stop and Send, the open sidebar has a scrim that closes it,
// a very long message collapses with Show more / Show less.
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
  shownText,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const HELD = "Still here after the outage";

describe("connection lost, said where the user looks", () => {
  // The second run checks the same states in the other theme and width; the answer's end is checked once.
  for (const [colorScheme, size, width, height, whole] of [
    ["light", "wide", 1200, 860, true],
    ["dark", "narrow", 390, 844, false],
  ]) {
    it(`${colorScheme}, ${size}: with the network down mid-answer the turn and the message box say so; both clear on reconnect${whole ? " and the answer finishes whole" : ""}`, async () => {
      const page = await openPage({ width, height, colorScheme });
      const name = (state) => `connection-${state}-${colorScheme}-${size}`;
      await signIn(page, unique("offline-mid"));
      await send(page, "Explain it all [long] [slow]");
      const turn = lastTurn(page);
      await turn.locator(".agent .text").nth(1).waitFor();
      assert.equal(
        await turn.getByRole("button", { name: "Show more" }).count(),
        0,
        "a short message is not collapsed",
      );

      // The network goes away: the browser reaches nothing (offline), and the open event stream is
      // severed (the server closes it: an established connection outlives Chromium's offline mode).
      await page.context().setOffline(true);
      const dropped = await api(`/v1/conversations/${await cidOf(page)}/dev/drop-streams`, await tokenOf(page), {
        method: "POST",
      });
      assert.equal(dropped.dropped, 1);
      await page.locator("#connection[data-state=reconnecting]").waitFor({ timeout: 10_000 });
      const notice = turn.getByText("Connection to the server lost.", { exact: false });
      // A blip is only the badge's business: the turn says nothing the moment the stream drops.
      assert.equal(await notice.count(), 0, "no notice before the threshold");
      await notice.waitFor({ timeout: 10_000 });
      assert.match(
        await notice.textContent(),
        /The agent keeps working; this answer catches up when the page reconnects\./,
      );
      assert.ok(await page.getByRole("button", { name: "Stop" }).isDisabled(), "Stop cannot reach the server");
      const status = page.getByRole("status").filter({ hasText: "Not connected to the server" });
      await status.waitFor();
      assert.equal(await status.getAttribute("id"), "composer-status");

      // Enter and Send do not drop the message: it stays in the box, and the box says why.
      const input = page.getByRole("textbox", { name: "Message" });
      await input.fill(HELD);
      await input.press("Enter");
      const held = page.getByRole("status").filter({ hasText: "Not sent: the page is not connected to the server." });
      await held.waitFor();
      assert.equal(await input.inputValue(), HELD);
      // Send reads as unavailable (aria-disabled) but can still be pressed, to say why it does not send.
      await page.getByRole("button", { name: "Send" }).click({ force: true });
      await held.waitFor();
      assert.equal(await input.inputValue(), HELD);
      assert.equal(await page.locator("li.turn").count(), 1, "nothing was sent");
      assert.ok(await page.locator("#queued").isHidden(), "nothing was queued");
      assert.equal(await page.getByRole("button", { name: "Send" }).getAttribute("aria-disabled"), "true");
      await assertAccessible(page, name("lost"));
      await shot(page, name("lost"));

      await page.context().setOffline(false);
      await page.locator("#connection[data-state=live]").waitFor({ timeout: 20_000 });
      await notice.waitFor({ state: "hidden", timeout: 5000 });
      assert.equal(await page.locator("#composer-status").textContent(), "", "the box's status clears");
      assert.equal(await page.getByRole("button", { name: "Send" }).getAttribute("aria-disabled"), "false");
      if (!whole) {
        assert.ok(await page.getByRole("button", { name: "Stop" }).isEnabled(), "Stop works again");
        await assertAccessible(page, name("back"));
        await shot(page, name("back"));
        return page.context().close();
      }
      assert.ok(await page.getByRole("button", { name: "Stop" }).isEnabled(), "Stop works again");
      await waitForBadge(page, "done", 60_000);
      const result = await api(
        `/v1/conversations/${await cidOf(page)}/turns/${await turn.getAttribute("data-turn")}`,
        await tokenOf(page),
      );
      assert.equal(result.status, "completed");
      assert.equal(await shownText(page), result.result.text, "the answer caught up with nothing lost or repeated");
      await assertAccessible(page, name("back"));
      await shot(page, name("back"));

      // The message kept in the box sends once connected.
      await input.press("Enter");
      await lastTurn(page).locator(".bubble-user", { hasText: HELD }).waitFor();
      assert.equal(await page.locator("li.turn").count(), 2);
      await page.context().close();
    });
  }
});

describe("phones: the composer, the sidebar and long messages at 390×844", () => {
  for (const colorScheme of ["light", "dark"]) {
    it(`${colorScheme}: the placeholder fits while a turn runs; a scrim closes the sidebar; a long message collapses with Show more`, async () => {
      const page = await openPage({ width: 390, height: 844, colorScheme });
      const name = (state) => `phone-${state}-${colorScheme}`;
      await signIn(page, unique("phone-parts"));
      const long =
        Array.from({ length: 30 }, (_, i) => `Line ${i + 1} of a very long message about the parser`).join("\n") +
        " [slow]";
      await send(page, long);
      await page.getByRole("button", { name: "Stop" }).waitFor();

      // The placeholder, set as the box's text, fits in the box as it is while Stop and Send show.
      const fit = await page.locator("#composer-input").evaluate((box) => {
        const placeholder = box.placeholder;
        box.value = placeholder;
        const sizes = {
          placeholder,
          scrollHeight: box.scrollHeight,
          clientHeight: box.clientHeight,
          scrollWidth: box.scrollWidth,
          clientWidth: box.clientWidth,
        };
        box.value = "";
        return sizes;
      });
      assert.ok(fit.placeholder.length > 0);
      assert.ok(
        fit.scrollHeight <= fit.clientHeight && fit.scrollWidth <= fit.clientWidth,
        `the placeholder fits: ${JSON.stringify(fit)}`,
      );
      await shot(page, name("running"));

      const turn = lastTurn(page);
      const bubble = turn.locator(".bubble-user");
      const collapsed = () => bubble.evaluate((b) => b.scrollHeight > b.clientHeight + 1);
      const more = turn.getByRole("button", { name: "Show more" });
      await more.waitFor();
      assert.equal(await more.getAttribute("aria-expanded"), "false");
      assert.equal(await more.getAttribute("aria-controls"), await bubble.getAttribute("id"));
      assert.ok(await collapsed(), "a long message starts collapsed");
      assert.equal(await bubble.textContent(), long, "collapsed, the whole message is still there");
      await assertAccessible(page, name("collapsed"));
      await more.click();
      const less = turn.getByRole("button", { name: "Show less" });
      assert.equal(await less.getAttribute("aria-expanded"), "true");
      assert.ok(!(await collapsed()), "Show more shows all of it");
      await assertAccessible(page, name("expanded"));
      await shot(page, name("expanded"));
      await less.click();
      assert.ok(await collapsed(), "Show less collapses it again");
      await waitForBadge(page, "done");

      // Loaded from the transcript, it is collapsed the same way.
      await page.reload();
      await page.locator("#connection[data-state=live]").waitFor();
      const again = lastTurn(page).getByRole("button", { name: "Show more" });
      await again.waitFor();
      assert.equal(await again.getAttribute("aria-expanded"), "false");
      assert.ok(
        await lastTurn(page)
          .locator(".bubble-user")
          .evaluate((b) => b.scrollHeight > b.clientHeight + 1),
      );
      await shot(page, name("collapsed"));

      // The open sidebar has a scrim behind it; a tap on the scrim closes it, focus back on the menu button.
      const menu = page.getByRole("button", { name: "Conversations" });
      await menu.click();
      await page.locator("#sidebar.open").waitFor();
      const scrim = page.locator("#scrim");
      await scrim.waitFor();
      await page.waitForTimeout(200); // the slide-in
      await assertAccessible(page, name("sidebar"));
      await shot(page, name("sidebar"));
      await scrim.click({ position: { x: 370, y: 400 } });
      // Closed: its class goes (it then slides out and is hidden; "attached" holds either way).
      await page.locator("#sidebar:not(.open)").waitFor({ state: "attached" });
      assert.ok(await scrim.isHidden(), "the scrim goes with the sidebar");
      assert.equal(await menu.getAttribute("aria-expanded"), "false");
      assert.ok(await menu.evaluate((b) => b === document.activeElement), "focus goes back to the menu button");
      // Escape closes it too.
      await menu.click();
      await page.locator("#sidebar.open").waitFor();
      await page.keyboard.press("Escape");
      // Closed: its class goes (it then slides out and is hidden; "attached" holds either way).
      await page.locator("#sidebar:not(.open)").waitFor({ state: "attached" });
      assert.ok(await scrim.isHidden());
      assert.ok(await menu.evaluate((b) => b === document.activeElement));
      await page.context().close();
    });
  }
});
