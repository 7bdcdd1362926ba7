// The agent and model picker (issue 39): beside the message box, what GET /v1/agents offers (the
// emulator's catalog: opencode, the default, claude-code, codex and pi). Driven with the keyboard
// only; the emulator's [whoami] answer says which backend and model the run was dispatched with.
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
  shot,
  shownText,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const backendSelect = (page) => page.getByRole("combobox", { name: "Agent", exact: true });
const modelSelect = (page) => page.getByRole("combobox", { name: "Model", exact: true });
const focusedId = (page) => page.evaluate(() => document.activeElement?.id ?? null);

describe("the agent picker", () => {
  it("picks a backend and a model with the keyboard; the run gets them, a reload shows them, a later model is for one message", async () => {
    const page = await openPage();
    await signIn(page, unique("picker"));
    await modelSelect(page).waitFor();
    assert.equal(await backendSelect(page).inputValue(), "opencode");
    assert.equal(
      await modelSelect(page).locator("option:checked").textContent(),
      "Default (anthropic/claude-sonnet-4-5)",
    );
    await assertAccessible(page, "agent picker, new conversation");

    // From the message box, back to the picker: the backend, then the model, each by arrow key.
    await page.locator("#composer-input").focus();
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Shift+Tab");
    assert.equal(await focusedId(page), "agent-backend");
    await page.keyboard.press("ArrowDown");
    assert.equal(await backendSelect(page).inputValue(), "claude-code");
    await page.keyboard.press("Tab");
    assert.equal(await focusedId(page), "agent-model");
    await page.keyboard.press("ArrowDown");
    assert.equal(await modelSelect(page).inputValue(), "anthropic/claude-opus-4-5");
    await page.keyboard.press("Tab");
    assert.equal(await focusedId(page), "composer-input");
    await page.keyboard.type("Who are you? [whoami]");
    await page.keyboard.press("Enter");
    await waitForBadge(page, "done");
    assert.match(await shownText(page), /backend claude-code; model anthropic\/claude-opus-4-5;/);
    // The conversation's agent now: shown, its backend fixed.
    assert.equal(await backendSelect(page).inputValue(), "claude-code");
    assert.equal(await backendSelect(page).isDisabled(), true);
    assert.equal(await modelSelect(page).inputValue(), "anthropic/claude-opus-4-5");
    const cid = await cidOf(page);
    const token = await tokenOf(page);
    // The list names the model it picked beside the time.
    await page
      .locator(".conversation-list li[aria-current=page] .meta", { hasText: "· anthropic/claude-opus-4-5" })
      .waitFor();
    assert.deepEqual((await api(`/v1/conversations/${cid}`, token)).agent, {
      backend: "claude-code",
      model: "anthropic/claude-opus-4-5",
      chosen: "first-turn",
      credential: null,
      mcpServers: [],
    });

    // A reload shows the conversation's agent, from its summary. The agents are read after the
    // conversation's one request has answered: never a round trip on the way to "live".
    const order = [];
    page.on("request", (r) => r.url().endsWith("/v1/agents") && order.push("agents asked"));
    page.on("response", (r) => r.url().includes("/events?snapshot=1") && order.push("snapshot answered"));
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await modelSelect(page).waitFor();
    assert.deepEqual(order, ["snapshot answered", "agents asked"]);
    assert.equal(await backendSelect(page).inputValue(), "claude-code");
    assert.equal(await modelSelect(page).inputValue(), "anthropic/claude-opus-4-5");
    await assertAccessible(page, "agent picker, a conversation's agent");

    // Another model for one message: said so, sent as that turn's model, then back to the conversation's.
    await modelSelect(page).focus();
    await page.keyboard.press("ArrowDown");
    assert.equal(await modelSelect(page).inputValue(), "anthropic/claude-sonnet-4-5");
    await page.locator("#agent-note", { hasText: "This message only." }).waitFor();
    await shot(page, "agent-picker-override");
    await send(page, "And now? [whoami]");
    await waitForBadge(page, "done");
    assert.match(await shownText(page), /backend claude-code; model anthropic\/claude-sonnet-4-5;/);
    assert.equal(await modelSelect(page).inputValue(), "anthropic/claude-opus-4-5");
    assert.equal(await page.locator("#agent-note").textContent(), "");
    assert.equal((await api(`/v1/conversations/${cid}`, token)).agent.model, "anthropic/claude-opus-4-5");
    await page.context().close();
  });

  it("a backend the gateway refuses: its message in the error area, the message and the pick kept", async () => {
    const page = await openPage();
    // A catalog that lists a backend the deployment does not run (as one read before a deploy might).
    await page.route("**/v1/agents", async (route) => {
      const res = await route.fetch();
      const catalog = await res.json();
      catalog.backends.push({ ...catalog.backends[0], type: "ghost" });
      await route.fulfill({ response: res, json: catalog });
    });
    await signIn(page, unique("picker-refused"));
    await modelSelect(page).waitFor();
    await backendSelect(page).selectOption("ghost");
    await send(page, "Hello [whoami]");
    await page.locator("#banner-text", { hasText: 'providerOptions.backend.type "ghost"' }).waitFor();
    assert.equal(await page.locator("#composer-input").inputValue(), "Hello [whoami]");
    assert.equal(await backendSelect(page).inputValue(), "ghost");
    assert.equal(await page.locator("li.turn").count(), 0);
    await page.context().close();
  });

  it("a message kept unsent keeps its pick: Retry, after a reload, runs on the agent it was sent with", async () => {
    const page = await openPage();
    await signIn(page, unique("picker-unsent"));
    await modelSelect(page).waitFor();
    await backendSelect(page).selectOption("claude-code");
    await modelSelect(page).selectOption("anthropic/claude-opus-4-5");
    await page.route("**/v1/conversations/*/turns", (route) => route.abort("internetdisconnected"));
    await send(page, "Kept for later [whoami]");
    const failed = lastTurn(page);
    await failed.locator(".send-error").waitFor();
    const turnId = await failed.getAttribute("data-turn");

    // A reload forgets the pick (a new conversation's picker starts at the default); the kept message does not.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await modelSelect(page).waitFor();
    assert.equal(await backendSelect(page).inputValue(), "opencode");
    await page.unroute("**/v1/conversations/*/turns");
    await page.locator(`li.turn[data-turn="${turnId}"]`).getByRole("button", { name: "Retry" }).click();
    await waitForBadge(page, "done");
    assert.match(await shownText(page), /backend claude-code; model anthropic\/claude-opus-4-5;/);
    // Its agent shows once the server says it (the list's entry).
    await page.locator("#agent-backend:disabled").waitFor();
    assert.equal(await backendSelect(page).inputValue(), "claude-code");
    await page.context().close();
  });

  it("a message queued behind a running turn carries its one-message model", async () => {
    const page = await openPage();
    await signIn(page, unique("picker-queue"));
    await modelSelect(page).waitFor();
    // The first turn waits for a permission: it runs until answered, so the next message is queued.
    await send(page, "Run the test suite [permission]");
    const allow = page.getByRole("button", { name: "Allow once" });
    await allow.waitFor();
    assert.equal(await modelSelect(page).inputValue(), "", "the conversation runs on the default model");
    await modelSelect(page).selectOption("openai/gpt-5");
    const posted = [];
    page.on("request", (r) => r.method() === "POST" && r.url().endsWith("/turns") && posted.push(r.postDataJSON()));
    await page.locator("#composer-input").fill("Next one [whoami]");
    await page.keyboard.press("Enter");
    await page.getByRole("list", { name: "Queued messages" }).getByText("Next one [whoami]").waitFor();
    assert.deepEqual(
      posted.map(({ whenBusy, model }) => ({ whenBusy, model })),
      [{ whenBusy: "queue", model: "openai/gpt-5" }],
    );
    assert.equal(await modelSelect(page).inputValue(), "", "back to the conversation's once accepted");
    await allow.click();
    await page.waitForFunction(() => document.querySelectorAll("li.turn").length === 2);
    await waitForBadge(page, "done");
    assert.match(await shownText(page), /backend opencode; model openai\/gpt-5;/);
    await page.context().close();
  });

  it("a backend whose models are unavailable offers its default only, saying so; fits a phone", async () => {
    for (const [width, height] of [
      [390, 844],
      [320, 568],
    ]) {
      const page = await openPage({ width, height, phone: true });
      await signIn(page, unique("picker-phone"));
      await modelSelect(page).waitFor();
      await backendSelect(page).selectOption("pi");
      assert.equal(await modelSelect(page).isDisabled(), true);
      assert.deepEqual(await modelSelect(page).locator("option").allTextContents(), ["Default"]);
      await page.locator("#agent-note", { hasText: "Model list unavailable" }).waitFor();
      await assertNoSidewaysScroll(page, `picker at ${width}`);
      const fits = await page.evaluate(() => {
        const r = document.getElementById("agent-picker").getBoundingClientRect();
        const send = document.getElementById("send").getBoundingClientRect();
        return r.right <= innerWidth && r.left >= 0 && send.bottom <= innerHeight;
      });
      assert.equal(fits, true, "the picker and Send are on screen");
      await assertAccessible(page, `agent picker on a phone at ${width}`);
      await shot(page, `agent-picker-phone-${width}`);
      await page.context().close();
    }
  });
});
