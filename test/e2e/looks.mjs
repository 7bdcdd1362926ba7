// Screenshots of the main states, light and dark, wide and narrow (test-results/screenshots/), each
// state also checked with axe-core.
import { describe, it } from "node:test";
import {
  assertAccessible,
  assertNoSidewaysScroll,
  lastTurn,
  openPage,
  send,
  server,
  shot,
  unique,
  waitForBadge,
} from "./harness.mjs";

describe("the main states, light and dark, wide and narrow", () => {
  for (const colorScheme of ["light", "dark"]) {
    for (const [size, width, height] of [
      ["wide", 1280, 800],
      ["narrow", 390, 844],
    ]) {
      it(`${colorScheme}, ${size}`, async () => {
        const page = await openPage({ width, height, colorScheme });
        const name = (state) => `${state}-${colorScheme}-${size}`;
        await page.goto(server.base);
        await page.locator("#dev-user").waitFor();
        await shot(page, name("1-sign-in"));
        await page.getByLabel("Your name").fill(unique("looks"));
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.locator("#empty").waitFor();
        await shot(page, name("2-empty"));
        await send(page, "Run the tests, then tell me what the README says [permission]");
        await page
          .locator(".interaction")
          .waitFor()
          .catch(async (err) => {
            await page.diagnose(name("diag"));
            throw err;
          });
        await assertAccessible(page, name("ask"));
        await shot(page, name("3-permission"));
        await page.getByRole("button", { name: "Allow for this session" }).click();
        await waitForBadge(page, "done");
        await lastTurn(page).locator("details.tool summary").first().click();
        await assertAccessible(page, name("answer"));
        await assertNoSidewaysScroll(page, name("answer"));
        await shot(page, name("4-answer"));
        if (size === "narrow") {
          await page.locator("#toggle-sidebar").click();
          await page.locator("#sidebar.open").waitFor();
          await page.waitForTimeout(200);
          await assertAccessible(page, name("sidebar"));
          await shot(page, name("5-sidebar"));
        }
        await page.context().close();
      });
    }
  }
});
