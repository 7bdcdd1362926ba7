// The sidebar of a chat product (issue 23, item 8): a conversation renamed in one browser shows
// renamed in another (another device: another browser context signed in as the same user) and in
// another tab; the search filters by title; the list is under date headings; the theme (system,
// light, dark) is kept per browser and applied before the stylesheet; the keyboard shortcuts and
// their sheet; every message's buttons named after it. Each state axe-clean, light and dark.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  assertAccessible,
  assertNoSidewaysScroll,
  cidOf,
  lastTurn,
  openPage,
  send,
  server,
  shot,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const DAY_MS = 24 * 60 * 60 * 1000;
const TITLES = ["Fix the failing test", "Release notes draft", "Plan the database migration"];

/**
 * Starts conversations through the API, oldest first, each after the one before it ended: the list
 * is ordered by last activity, and a turn's end is activity, so turns ending out of order would
 * reorder it.
 */
async function startConversations(token, titles) {
  const started = [];
  for (const title of titles) {
    const cid = unique("c-side");
    const turnId = unique("t");
    await api(`/v1/conversations/${cid}/turns`, token, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ turnId, message: title }),
    });
    started.push({ cid, turnId });
    for (
      let i = 0;
      i < 200 &&
      !["completed", "failed"].includes((await api(`/v1/conversations/${cid}/turns/${turnId}`, token)).status);
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
  }
  return started;
}

const listed = (page) => page.locator("#conversation-list .title").allTextContents();
const background = (page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

describe("the sidebar of a chat product", () => {
  it("renames a conversation on every device and tab; searches titles; lists under date headings", async () => {
    const user = unique("side");
    const a = await openPage();
    await signIn(a, user);
    await startConversations(await tokenOf(a), TITLES);
    await a.reload();
    await a.locator("#connection[data-state=live]").waitFor();
    await a.getByRole("link", { name: /Plan the database migration/ }).waitFor();
    assert.deepEqual(await listed(a), [...TITLES].reverse());
    // Under today's heading, as a heading of the sidebar.
    const sidebar = a.getByRole("navigation", { name: "Conversations" });
    assert.deepEqual(await sidebar.getByRole("heading").allTextContents(), ["Today"]);

    // Another device (its own browser profile) and another tab of this browser.
    const b = await openPage();
    await signIn(b, user);
    await b.getByRole("link", { name: /Release notes draft/ }).waitFor();
    const tab = await a.context().newPage();
    await tab.goto(server.base);
    await tab.getByRole("link", { name: /Release notes draft/ }).waitFor();

    // Rename: the field holds the title; Escape leaves it as it was.
    await a.getByRole("button", { name: "Rename conversation Release notes draft" }).click();
    const field = a.getByRole("textbox", { name: "New title for Release notes draft" });
    assert.equal(await field.inputValue(), "Release notes draft");
    await assertAccessible(a, "renaming");
    await shot(a, "sidebar-renaming-light-wide");
    await field.press("Escape");
    assert.equal(await field.count(), 0);
    assert.deepEqual(await listed(a), [...TITLES].reverse());
    await a.getByRole("button", { name: "Rename conversation Release notes draft" }).click();
    await field.fill("Changelog for 2.0");
    await field.press("Enter");
    await a.getByRole("link", { name: /Changelog for 2\.0/ }).waitFor();
    assert.equal(
      await a.getByRole("link", { name: /Changelog for 2\.0/ }).evaluate((link) => link === document.activeElement),
      true,
      "the focus is back on the renamed conversation",
    );
    // Stored on the server, not only drawn here.
    const { conversations } = await api("/v1/conversations", await tokenOf(a));
    assert.deepEqual(
      conversations.map((c) => c.title),
      ["Plan the database migration", "Changelog for 2.0", "Fix the failing test"],
    );
    // The other tab of this browser follows at once.
    await tab.getByRole("link", { name: /Changelog for 2\.0/ }).waitFor({ timeout: 5000 });
    // The other device when it comes back into view (the event a browser fires when the tab is brought forward)...
    await b.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
    await b.getByRole("link", { name: /Changelog for 2\.0/ }).waitFor({ timeout: 5000 });
    // ...and after a reload, opened, with the heading named after it.
    await b.getByRole("link", { name: /Changelog for 2\.0/ }).click();
    await b.getByRole("heading", { name: "Changelog for 2.0", level: 2 }).waitFor();
    await b.reload();
    await b.getByRole("heading", { name: "Changelog for 2.0", level: 2 }).waitFor();
    assert.match(await b.title(), /Changelog for 2\.0/);
    await tab.close();

    // A new turn keeps the new title.
    await send(b, "One more thing");
    await waitForBadge(b, "done");
    const token = await tokenOf(b);
    let entry;
    for (let i = 0; i < 50 && (entry = (await api("/v1/conversations", token)).conversations[0]).state !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual([entry.state, entry.title], ["idle", "Changelog for 2.0"]);
    await b.context().close();

    // Search: as you type, by every word, with a count a screen reader hears.
    const search = a.getByRole("searchbox", { name: "Search conversations" });
    await search.fill("the");
    assert.deepEqual(await listed(a), ["Plan the database migration", "Fix the failing test"]);
    assert.equal(await a.locator("#search-status").textContent(), "2 of 3 conversations.");
    await search.fill("TEST fix");
    assert.deepEqual(await listed(a), ["Fix the failing test"]);
    await assertAccessible(a, "search");
    await shot(a, "sidebar-search-light-wide");
    await search.fill("nothing like it");
    assert.deepEqual(await listed(a), []);
    assert.equal(await a.locator("#search-status").textContent(), "No conversation title matches “nothing like it”.");
    await search.press("Escape");
    assert.equal(await search.inputValue(), "");
    assert.equal(await listed(a).then((l) => l.length), 3);

    // Date headings: seen from two days on (the browser's clock), today's conversations are in the last week's.
    await a.clock.setFixedTime(new Date(Date.now() + 2 * DAY_MS));
    await a.reload();
    await a.getByRole("link", { name: /Changelog for 2\.0/ }).waitFor();
    assert.deepEqual(await sidebar.getByRole("heading").allTextContents(), ["Previous 7 days"]);
    await a.clock.setFixedTime(new Date(Date.now() + 45 * DAY_MS));
    await a.reload();
    await a.getByRole("link", { name: /Changelog for 2\.0/ }).waitFor();
    const month = new Date().toLocaleString("en-US", { month: "long", year: "numeric" });
    assert.deepEqual(await sidebar.getByRole("heading").allTextContents(), [month]);
    await a.context().close();
  });

  it("the theme is System, Light or Dark, kept in this browser and applied before the stylesheet", async () => {
    const page = await openPage({ colorScheme: "dark" });
    await signIn(page, unique("theme"));
    const theme = page.getByRole("group", { name: "Theme" });
    assert.equal(await theme.getByRole("radio", { name: "System" }).isChecked(), true);
    assert.equal(
      await page.locator("html").getAttribute("data-theme"),
      "dark",
      "System follows the browser's dark scheme",
    );
    const dark = await background(page);
    await send(page, "Fix the failing test");
    await waitForBadge(page, "done");
    await theme.getByRole("radio", { name: "Light" }).check();
    assert.equal(await page.locator("html").getAttribute("data-theme"), "light");
    const light = await background(page);
    assert.notEqual(light, dark);
    assert.equal(light, "rgb(246, 247, 249)");
    await assertAccessible(page, "light chosen on a dark system");
    await shot(page, "theme-light-on-dark-system");
    // Kept across a reload, whatever the system says.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    assert.equal(await page.locator("html").getAttribute("data-theme"), "light");
    assert.equal(await theme.getByRole("radio", { name: "Light" }).isChecked(), true);
    assert.equal(await background(page), light);
    // theme.js (built into boot.js) runs before the first paint: a blocking classic script in <head>,
    // after only the inline colours (which it picks between) and before any stylesheet file.
    const order = await page.evaluate(() =>
      [...document.querySelectorAll("script, link[rel=stylesheet], style")].map((n) =>
        n instanceof HTMLScriptElement
          ? `${n.type || "classic"}${n.defer || n.async ? " deferred" : ""}:${n.getAttribute("src") ?? "inline"}`
          : n instanceof HTMLStyleElement
            ? `${n.parentElement?.tagName === "HEAD" ? "head" : "body"} inline css`
            : "css",
      ),
    );
    assert.deepEqual(
      order.map((o) => o.replace(/-[A-Z2-7]{8}\./, ".")),
      ["head inline css", "classic:/assets/boot.js", "module:/assets/app.js", "css"],
    );
    // Dark on a light system; another tab of the browser follows.
    await page.emulateMedia({ colorScheme: "light" });
    const other = await page.context().newPage();
    await other.goto(page.url());
    await theme.getByRole("radio", { name: "Dark" }).check();
    assert.equal(await background(page), dark);
    await other.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    assert.equal(
      await other.getByRole("group", { name: "Theme" }).getByRole("radio", { name: "Dark" }).isChecked(),
      true,
    );
    await other.close();
    await assertAccessible(page, "dark chosen on a light system");
    await shot(page, "theme-dark-on-light-system");
    // System again: the browser's scheme, and its changes.
    await theme.getByRole("radio", { name: "System" }).check();
    assert.equal(await page.locator("html").getAttribute("data-theme"), "light");
    await page.emulateMedia({ colorScheme: "dark" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    // Signing out keeps the theme: it is the browser's, not the account's.
    await theme.getByRole("radio", { name: "Light" }).check();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Your name").waitFor();
    assert.equal(await page.locator("html").getAttribute("data-theme"), "light");
    await page.context().close();
  });

  it("keyboard shortcuts: new chat, focus the message box, search, the sheet listing them; buttons named after their message", async () => {
    const page = await openPage();
    /** axe in the light scheme and the dark one (the theme follows the system), with a screenshot of each. */
    const bothSchemes = async (state) => {
      for (const colorScheme of ["light", "dark"]) {
        await page.emulateMedia({ colorScheme });
        await page.waitForFunction((scheme) => document.documentElement.dataset.theme === scheme, colorScheme);
        await assertAccessible(page, `${state}, ${colorScheme}`);
        await shot(page, `${state}-${colorScheme}-wide`);
      }
      await page.emulateMedia({ colorScheme: "light" });
    };
    await signIn(page, unique("keys"));
    const long = "Explain what this repository does and how its tests run";
    await send(page, long);
    await waitForBadge(page, "done");
    const turn = lastTurn(page);
    for (const name of [
      "Copy answer to “Explain what this repository does and h…”",
      "Regenerate answer to “Explain what this repository does and h…”",
      "Edit message “Explain what this repository does and h…”",
    ]) {
      assert.equal(await turn.getByRole("button", { name, exact: true }).count(), 1, name);
    }
    await send(page, "This one fails [fail]");
    await waitForBadge(page, "failed");
    assert.equal(
      await lastTurn(page).getByRole("button", { name: "Retry “This one fails [fail]”", exact: true }).count(),
      1,
    );
    await bothSchemes("named-buttons");

    // The sheet: Ctrl+/ (⌘ on a Mac), a modal dialog named after its heading, listing every shortcut.
    await page.locator("#composer-input").focus();
    await page.keyboard.press("Control+/");
    const sheet = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await sheet.waitFor();
    const listedShortcuts = await sheet.locator("dd").allTextContents();
    for (const does of ["New conversation", "Search conversations", "Focus the message box", "Show these shortcuts"])
      assert.ok(listedShortcuts.includes(does), does);
    assert.match(await sheet.textContent(), /Ctrl \+ Shift \+ O/);
    assert.match(await sheet.textContent(), /Shift \+ Esc/);
    await bothSchemes("shortcuts");
    // The focus stays in it.
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press("Tab");
      assert.equal(
        await page.evaluate(
          () =>
            document.getElementById("shortcuts").contains(document.activeElement) ||
            document.activeElement === document.body,
        ),
        true,
      );
    }
    // Escape closes it, and stops nothing; the focus goes back.
    await page.keyboard.press("Escape");
    await sheet.waitFor({ state: "hidden" });
    assert.equal(await page.evaluate(() => document.activeElement?.id), "composer-input");
    // Its button opens it too, and Close closes it.
    await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
    await sheet.getByRole("button", { name: "Close the keyboard shortcuts" }).click();
    await sheet.waitFor({ state: "hidden" });

    // Ctrl+K: the search; Shift+Escape: back to the message box.
    await page.keyboard.press("Control+k");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "conversation-search");
    await page.keyboard.press("Shift+Escape");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "composer-input");
    // Ctrl+Shift+O: a new conversation, the message box focused.
    const before = await cidOf(page);
    await page.keyboard.press("Control+Shift+O");
    await page.waitForFunction((cid) => new URL(location.href).searchParams.get("c") !== cid, before);
    await page.locator("#empty").waitFor();
    assert.equal(await page.locator("#conversation-title").textContent(), "New conversation");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "composer-input");
    await page.context().close();
  });

  it("on a phone, light and dark: the sidebar's search, headings, rename and the shortcut sheet fit and are axe-clean", async () => {
    const page = await openPage({ width: 390, height: 844 });
    const bothSchemes = async (state) => {
      for (const colorScheme of ["light", "dark"]) {
        await page.emulateMedia({ colorScheme });
        await page.waitForFunction((scheme) => document.documentElement.dataset.theme === scheme, colorScheme);
        await assertAccessible(page, `${state}, ${colorScheme}`);
        await assertNoSidewaysScroll(page, `${state}, ${colorScheme}`);
        await shot(page, `${state}-${colorScheme}-narrow`);
      }
      await page.emulateMedia({ colorScheme: "light" });
    };
    await signIn(page, unique("phone"));
    await startConversations(await tokenOf(page), TITLES);
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await page.locator("#toggle-sidebar").click();
    await page.locator("#sidebar.open").waitFor();
    await page.getByRole("link", { name: /Plan the database migration/ }).waitFor();
    await page.waitForTimeout(200);
    await bothSchemes("sidebar");
    await page.getByRole("button", { name: "Rename conversation Fix the failing test" }).click();
    await page
      .getByRole("textbox", { name: "New title for Fix the failing test" })
      .fill("A much longer title that will not fit on a phone's sidebar at all");
    await page.keyboard.press("Enter");
    await page.getByRole("link", { name: /A much longer title/ }).waitFor();
    await page.getByRole("searchbox", { name: "Search conversations" }).fill("longer");
    assert.deepEqual(await listed(page), ["A much longer title that will not fit on a phone's sidebar at all"]);
    await bothSchemes("sidebar-search");
    // Ctrl+/ on a phone with a keyboard: the sheet fits.
    await page.keyboard.press("Control+/");
    await page.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
    await bothSchemes("shortcuts");
    await page.context().close();
  });
});
