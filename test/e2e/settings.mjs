// The settings view (issue 39): the user's model keys, MCP servers and standing instructions, in a
// modal dialog opened from the sidebar. Driven with the keyboard; what the gateway stored is read
// back through its API, and no key or auth value is ever in the page's DOM or storage.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  assertAccessible,
  assertNoSidewaysScroll,
  openPage,
  server,
  shot,
  shownText,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const focusedId = (page) => page.evaluate(() => document.activeElement?.id ?? null);
const dialog = (page) => page.getByRole("dialog", { name: "Settings" });

/** Every place the page could keep text: the DOM as markup, every field's value, both storages. */
async function pageHolds(page, secret) {
  return page.evaluate((s) => {
    const values = [...document.querySelectorAll("input, textarea, select")].map((f) => f.value);
    const stored = [localStorage, sessionStorage].flatMap((store) =>
      Object.keys(store).map((k) => `${k}=${store.getItem(k)}`),
    );
    return [document.documentElement.outerHTML, ...values, ...stored].some((text) => text.includes(s));
  }, secret);
}

/** Opens the view from the sidebar's Settings button with the keyboard. */
async function openSettings(page) {
  await page.locator("#settings-button").focus();
  await page.keyboard.press("Enter");
  await dialog(page).waitFor();
  assert.equal(await focusedId(page), "settings-close", "the focus moves into the dialog");
}

/** Types into the field, then Tab on. @param {import("playwright-core").Page} page */
async function typeAndTab(page, text) {
  await page.keyboard.type(text);
  await page.keyboard.press("Tab");
}

describe("the settings view", () => {
  it("with the keyboard: a key added and replaced, an MCP server with auth added and disabled, instructions set; never a secret in the page", async () => {
    const page = await openPage();
    await signIn(page, unique("settings"));
    const token = await tokenOf(page);
    await openSettings(page);
    await page.locator("#keys-empty", { hasText: "No keys yet" }).waitFor();
    await assertAccessible(page, "settings open");

    // A key: from the close button, Tab to each field in turn; Enter in the last one saves.
    const firstKey = "sk-first-4f1c9a7e";
    await page.keyboard.press("Tab");
    assert.equal(await focusedId(page), "key-name");
    await typeAndTab(page, "mine");
    await typeAndTab(page, "anthropic");
    assert.equal(await focusedId(page), "key-secret");
    assert.equal(await page.locator("#key-secret").getAttribute("type"), "password");
    assert.equal(await page.locator("#key-secret").getAttribute("autocomplete"), "off");
    await typeAndTab(page, firstKey);
    await page.keyboard.type("https://llm.example.com/v1");
    await page.keyboard.press("Enter");
    await page.locator("#key-status", { hasText: "Saved “mine”." }).waitFor();
    const row = page.locator("#key-list li", { hasText: "mine" });
    await row.getByText("anthropic · https://llm.example.com/v1").waitFor();
    assert.equal(await page.locator("#key-secret").inputValue(), "", "the key field is emptied once saved");
    assert.equal(await pageHolds(page, firstKey), false, "the key is nowhere in the page");

    // Replaced: Replace key puts the focus in the key field, the rest filled in.
    await row.getByRole("button", { name: "Replace key of mine" }).focus();
    await page.keyboard.press("Enter");
    assert.equal(await focusedId(page), "key-secret");
    assert.equal(await page.locator("#key-provider").inputValue(), "anthropic");
    const secondKey = "sk-second-0b7d22c1";
    await page.keyboard.type(secondKey);
    await page.keyboard.press("Enter");
    await page.locator("#key-status", { hasText: "Saved: the key of “mine” was replaced." }).waitFor();
    assert.equal(await page.locator("#key-list li").count(), 1);
    for (const key of [firstKey, secondKey]) assert.equal(await pageHolds(page, key), false);
    const { credentials } = await api("/v1/credentials", token);
    assert.deepEqual(
      credentials.map((c) => [c.name, c.provider, c.baseUrl]),
      [["mine", "anthropic", "https://llm.example.com/v1"]],
    );

    // An MCP server with auth.
    const authValue = "Bearer mcp-secret-93e1";
    await page.locator("#server-name").focus();
    await typeAndTab(page, "tools");
    await typeAndTab(page, "https://mcp.example.com/sse");
    await typeAndTab(page, "Authorization");
    assert.equal(await focusedId(page), "server-auth-value");
    await page.keyboard.type(authValue);
    await page.keyboard.press("Enter");
    await page.locator("#server-status", { hasText: "Saved “tools”." }).waitFor();
    const tools = page.locator("#server-list li", { hasText: "tools" });
    await tools.getByText("Enabled · https://mcp.example.com/sse · auth: Authorization header").waitFor();
    assert.equal(await pageHolds(page, authValue), false);

    // Disabled at once: the body names no auth, and the gateway keeps the stored one.
    await tools.getByRole("button", { name: "Disable the MCP server tools" }).focus();
    await page.keyboard.press("Enter");
    await page.locator("#server-status", { hasText: "Disabled “tools”." }).waitFor();
    await tools.getByText("Disabled · https://mcp.example.com/sse · auth: Authorization header").waitFor();
    assert.equal(await pageHolds(page, authValue), false);

    // A server without auth turns on and off at once.
    await page.locator("#server-name").focus();
    await typeAndTab(page, "plain");
    await page.keyboard.type("https://plain.example.com/mcp");
    await page.keyboard.press("Enter");
    await page.locator("#server-status", { hasText: "Saved “plain”." }).waitFor();
    const plain = page.locator("#server-list li", { hasText: "plain" });
    await plain.getByRole("button", { name: "Disable the MCP server plain" }).focus();
    await page.keyboard.press("Enter");
    await page.locator("#server-status", { hasText: "Disabled “plain”." }).waitFor();
    await plain.getByText("Disabled · https://plain.example.com/mcp · no auth").waitFor();
    await page.waitForFunction(
      () => document.activeElement?.getAttribute("aria-label") === "Enable the MCP server plain",
    );
    assert.deepEqual(
      (await api("/v1/mcp-servers", token)).mcpServers.map((s) => [s.name, s.authHeader, s.enabled]),
      [
        ["plain", null, false],
        ["tools", "Authorization", false],
      ],
    );

    // Standing instructions, with the count as they are typed.
    await page.locator("#instructions-text").focus();
    await page.keyboard.type("Answer in French.");
    await page.locator("#instructions-count", { hasText: "17 characters of 16,384" }).waitFor();
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.locator("#instructions-status", { hasText: "Saved." }).waitFor();
    assert.equal((await api("/v1/instructions", token)).text, "Answer in French.");
    await assertAccessible(page, "settings filled in");
    await shot(page, "settings-filled");

    // Delete asks first, in the row; Yes deletes.
    await plain.getByRole("button", { name: "Delete the MCP server plain" }).focus();
    await page.keyboard.press("Enter");
    await plain.getByText("Delete “plain”?").waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Yes, delete");
    await page.keyboard.press("Enter");
    await page.locator("#server-status", { hasText: "Deleted “plain”." }).waitFor();
    assert.deepEqual(
      (await api("/v1/mcp-servers", token)).mcpServers.map((s) => s.name),
      ["tools"],
    );

    // Enabled again the same way: its auth was kept through both (the [whoami] below says it came).
    await tools.getByRole("button", { name: "Enable the MCP server tools" }).focus();
    await page.keyboard.press("Enter");
    await page.locator("#server-status", { hasText: "Enabled “tools”." }).waitFor();
    await tools.getByText("Enabled · https://mcp.example.com/sse · auth: Authorization header").waitFor();

    // Escape closes it and gives the focus back to the Settings button; nothing secret stayed.
    await page.keyboard.press("Escape");
    await dialog(page).waitFor({ state: "hidden" });
    assert.equal(await focusedId(page), "settings-button");
    for (const secret of [firstKey, secondKey, authValue]) assert.equal(await pageHolds(page, secret), false);

    // The new conversation's first turn names the key and the server from the picker's row (read
    // again as the view closed); the instructions go with every turn. The emulator's [whoami] says
    // what the run was given: the credential's provider and endpoint and that a key came, the
    // server and that it came with auth.
    const keySelect = page.getByRole("combobox", { name: "Key", exact: true });
    await keySelect.waitFor();
    await keySelect.focus();
    await page.keyboard.press("ArrowDown");
    assert.equal(await keySelect.inputValue(), "mine");
    await page.keyboard.press("Tab");
    const toolBox = page.getByRole("group", { name: "Tools" }).getByRole("checkbox", { name: "tools" });
    assert.equal(await toolBox.evaluate((e) => e === document.activeElement), true);
    await page.keyboard.press("Space");
    assert.equal(await toolBox.isChecked(), true);
    await assertAccessible(page, "the picker with a key and tools");
    const posted = [];
    page.on("request", (r) => r.method() === "POST" && r.url().endsWith("/turns") && posted.push(r.postDataJSON()));
    await page.keyboard.press("Tab");
    assert.equal(await focusedId(page), "composer-input");
    await page.keyboard.type("Who are you? [whoami]");
    await page.keyboard.press("Enter");
    await waitForBadge(page, "done");
    const said = await shownText(page);
    assert.match(said, /credential anthropic at https:\/\/llm\.example\.com\/v1 \(key set\)/);
    assert.match(said, /attachments tools \(auth\)/);
    assert.match(said, /appended: Answer in French\./);
    assert.deepEqual(
      posted.map(({ credential, mcpServers }) => ({ credential, mcpServers })),
      [{ credential: "mine", mcpServers: ["tools"] }],
    );
    // The conversation's from now on: the row no longer offers them.
    await page.locator("#agent-key-field").waitFor({ state: "hidden" });
    assert.equal(await page.locator("#agent-tools").isHidden(), true);
    for (const secret of [firstKey, secondKey, authValue]) assert.equal(await pageHolds(page, secret), false);

    // Opened again, it shows what the gateway keeps.
    await openSettings(page);
    await page.locator("#key-list li", { hasText: "mine" }).waitFor();
    await page.locator("#server-list li", { hasText: "tools" }).waitFor();
    assert.equal(await page.locator("#instructions-text").inputValue(), "Answer in French.");
    await page.context().close();
  });

  it("refusals are shown beside their form, the input kept: a bad endpoint, a private MCP URL, a full list", async () => {
    const page = await openPage();
    await signIn(page, unique("settings-refused"));
    const token = await tokenOf(page);
    await openSettings(page);

    // 400 naming the endpoint: the message beside the form, the field marked, everything kept.
    await page.locator("#key-name").fill("mine");
    await page.locator("#key-provider").fill("openai");
    await page.locator("#key-secret").fill("sk-kept-for-a-retry");
    await page.locator("#key-endpoint").fill("https://llm.example.com/v1?x=1");
    await page.locator("#key-endpoint").press("Enter");
    await page.locator("#key-status.error", { hasText: "baseUrl: must not have a query or a fragment" }).waitFor();
    assert.equal(await page.locator("#key-endpoint").getAttribute("aria-invalid"), "true");
    assert.equal(await page.locator("#key-provider").getAttribute("aria-invalid"), null);
    assert.equal(await page.locator("#key-status").getAttribute("aria-live"), "polite");
    assert.equal(await page.locator("#key-name").inputValue(), "mine");
    assert.equal(await page.locator("#key-endpoint").inputValue(), "https://llm.example.com/v1?x=1");
    assert.equal(await page.locator("#key-secret").inputValue(), "sk-kept-for-a-retry", "kept to send again");
    assert.deepEqual((await api("/v1/credentials", token)).credentials, []);

    // 422 mcp_server_url_refused: a private address.
    await page.locator("#server-name").fill("inside");
    await page.locator("#server-url").fill("https://10.0.0.1/x");
    await page.locator("#server-url").press("Enter");
    await page.locator("#server-status.error", { hasText: "url must not be" }).waitFor();
    assert.equal(await page.locator("#server-url").getAttribute("aria-invalid"), "true");
    assert.equal(await page.locator("#server-url").inputValue(), "https://10.0.0.1/x");
    assert.deepEqual((await api("/v1/mcp-servers", token)).mcpServers, []);
    await assertAccessible(page, "settings with refusals");
    await shot(page, "settings-refused");

    // 409 settings_full: twenty keys already.
    for (let i = 0; i < 20; i++)
      await fetch(`${server.base}/v1/credentials/k${i}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ provider: "openai", key: `sk-${i}` }),
      });
    await page.locator("#key-endpoint").fill("");
    await page.locator("#key-endpoint").press("Enter");
    await page.locator("#key-status.error", { hasText: "at most 20" }).waitFor();
    assert.equal(
      await page.locator("#key-endpoint").getAttribute("aria-invalid"),
      null,
      "a new refusal, its own fields",
    );
    assert.equal(await page.locator("#key-name").inputValue(), "mine");
    assert.equal((await api("/v1/credentials", token)).credentials.length, 20);
    await page.context().close();
  });

  it("a full-screen sheet on a phone, axe-clean", async () => {
    const page = await openPage({ width: 390, height: 844, phone: true });
    await signIn(page, unique("settings-phone"));
    await page.locator("#toggle-sidebar").click();
    await page.locator("#settings-button").click();
    await dialog(page).waitFor();
    const box = await page.evaluate(() => {
      const r = document.getElementById("settings").getBoundingClientRect();
      return { left: r.left, top: r.top, width: r.width, height: r.height, vw: innerWidth, vh: innerHeight };
    });
    assert.deepEqual([box.left, box.top, box.width, box.height], [0, 0, box.vw, box.vh], JSON.stringify(box));
    await page.locator("#keys-empty", { hasText: "No keys yet" }).waitFor();
    await assertNoSidewaysScroll(page, "settings on a phone");
    const fits = await page.evaluate(() =>
      [...document.querySelectorAll("#settings input, #settings textarea, #settings button")].every((e) => {
        const r = e.getBoundingClientRect();
        return r.left >= 0 && r.right <= innerWidth;
      }),
    );
    assert.equal(fits, true, "every field and button within the screen's width");
    await assertAccessible(page, "settings on a phone");
    await shot(page, "settings-phone-390");
    await page.getByRole("button", { name: "Close the settings" }).click();
    await dialog(page).waitFor({ state: "hidden" });
    await page.context().close();
  });
});
