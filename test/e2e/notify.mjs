// "Notify me when the agent needs me" (issue 22): the browser's Notification API, when the tab is
// in the background. Headless Chromium has no background tab and no notification centre to look
// at, so the test sets the tab's visibility itself and records each notification the page makes
// (the real Notification is still constructed, with the permission granted to the origin).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lastTurn, openPage, send, server, signIn, unique, waitForBadge } from "./harness.mjs";

async function openWithNotifications() {
  const page = await openPage();
  await page.context().grantPermissions(["notifications"], { origin: server.base });
  await page.addInitScript(() => {
    let hidden = false;
    window.__setHidden = (value) => {
      hidden = value;
    };
    Object.defineProperty(Document.prototype, "visibilityState", {
      configurable: true,
      get: () => (hidden ? "hidden" : "visible"),
    });
    const Real = window.Notification;
    window.__notifications = [];
    window.Notification = class extends Real {
      constructor(title, options) {
        super(title, options);
        window.__notifications.push({ title, body: options?.body, tag: options?.tag, permission: Real.permission });
      }
    };
  });
  return page;
}

const notifications = (page) => page.evaluate(() => window.__notifications);

describe("notify me when the agent needs me", () => {
  it("on, with the permission granted: an ask while the tab is in the background shows one notification; in the foreground none", async () => {
    const page = await openWithNotifications();
    await signIn(page, unique("notify"));
    const toggle = page.getByLabel("Notify me when the agent needs me");
    assert.equal(await toggle.isChecked(), false);
    await toggle.check();
    await page.locator("#notify-status", { hasText: "On while this tab is open and in the background." }).waitFor();

    // In the foreground the card is enough.
    await send(page, "Run the tests please [permission]");
    await page.locator(".interaction", { hasText: "Run the test suite?" }).waitFor();
    assert.deepEqual(await notifications(page), []);
    await page.locator("#stop").click();
    await waitForBadge(page, "cancelled");

    // In the background, a new ask notifies once, naming it.
    await page.evaluate(() => window.__setHidden(true));
    await send(page, "And now run them again [permission]");
    await page.waitForFunction(() => window.__notifications.length > 0);
    const shown = await notifications(page);
    assert.equal(shown.length, 1);
    assert.equal(shown[0].title, "The agent needs you");
    assert.match(shown[0].body, /Run the test suite\?$/);
    assert.match(shown[0].tag, /^ask:/);
    assert.equal(shown[0].permission, "granted");
    await lastTurn(page).locator(".interaction", { hasText: "Run the test suite?" }).waitFor();

    // The setting is this browser's: kept across a reload, and off means off.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    assert.equal(await page.getByLabel("Notify me when the agent needs me").isChecked(), true);
    await page.getByLabel("Notify me when the agent needs me").uncheck();
    assert.equal(await page.evaluate(() => localStorage.getItem("gw:notify")), null);
    await page.context().close();
  });
});
