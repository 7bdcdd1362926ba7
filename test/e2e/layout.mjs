// The page's frame holds still (issue 36): the document itself never scrolls — only the
// transcript, the sidebar and the empty state scroll inside it — and on a phone the empty state can
// be scrolled to its heading. Driven by real gestures: the mouse wheel, a touch drag.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lastTurn, openPage, send, shot, signIn, swipe, unique, waitForBadge } from "./harness.mjs";

/** How far the document has scrolled, and whether the app's frame (its top bar, the message box) is on screen. */
const frame = (page) =>
  page.evaluate(() => {
    const top = document.querySelector(".topbar").getBoundingClientRect();
    const composer = document.getElementById("composer").getBoundingClientRect();
    return {
      scrollTop: document.scrollingElement.scrollTop,
      scrollHeight: document.scrollingElement.scrollHeight,
      viewport: innerHeight,
      topbarOnScreen: top.top >= 0 && top.bottom <= innerHeight,
      composerOnScreen: composer.top >= 0 && composer.bottom <= innerHeight,
    };
  });

describe("the document never scrolls", () => {
  it("wheeling over a transcript with a markdown answer and changed files scrolls the transcript, never the document", async () => {
    const page = await openPage({ width: 1200, height: 760 });
    await signIn(page, unique("wheel"));
    await send(page, "Look into the duplicated tool card [markdown]");
    await waitForBadge(page, "done");
    await send(page, "Add a greeting to the server [edits]");
    await waitForBadge(page, "done");
    await lastTurn(page).locator("details.changes").waitFor();
    const box = await page.locator("#transcript").boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    // Up to the top of the transcript, then down past its end: every wheel notch, the document stays put.
    const seen = [];
    for (const dy of [-3000, -3000, 800, 800, 800, 800, 3000, 3000, 3000]) {
      await page.mouse.wheel(0, dy);
      // The wheel's scroll is applied on the next frames: wait for two before reading.
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      seen.push(await frame(page));
    }
    const transcriptTop = await page.evaluate(() => document.getElementById("transcript").scrollTop);
    assert.ok(transcriptTop > 0, "the transcript itself scrolled");
    assert.deepEqual(
      seen.filter((f) => f.scrollTop !== 0 || !f.topbarOnScreen || !f.composerOnScreen),
      [],
      "the document stayed at 0 with the app on screen",
    );
    const last = seen.at(-1);
    assert.ok(
      last.scrollHeight <= last.viewport,
      `nothing makes the document taller than the window: ${JSON.stringify(last)}`,
    );
    await shot(page, "wheel-after");
    await page.context().close();
  });
});

describe("phones: the empty state", () => {
  for (const [width, height] of [
    [390, 844],
    [320, 568],
  ]) {
    it(`at ${width}×${height}: a swipe reaches the heading of the example prompts, and another their last one`, async () => {
      const page = await openPage({ width, height, phone: true });
      await signIn(page, unique("empty-phone"));
      const empty = page.locator("#empty");
      await page.locator("#examples li").last().waitFor();
      const box = await empty.boundingBox();
      const x = box.x + box.width / 2;
      const y = box.y + box.height / 2;
      /** Whether `selector` is wholly inside the empty state's visible box. */
      const shown = (selector) =>
        page.evaluate((selector) => {
          const area = document.getElementById("empty").getBoundingClientRect();
          const it = document.querySelector(selector).getBoundingClientRect();
          return it.top >= area.top - 0.5 && it.bottom <= area.bottom + 0.5;
        }, selector);
      // A finger drags down twice: the empty state shows its top, heading first.
      await swipe(page, x, y, 200);
      await swipe(page, x, y, 200);
      assert.equal(await shown("#empty h3"), true, "the heading is on screen");
      await shot(page, `empty-phone-${width}-top`);
      // Up: the last example comes into view.
      await swipe(page, x, y, -400);
      await swipe(page, x, y, -400);
      assert.equal(await shown("#examples li:last-child"), true, "the last example is on screen");
      assert.equal(await page.evaluate(() => document.scrollingElement.scrollTop), 0, "the document did not scroll");
      await page.context().close();
    });
  }
});
