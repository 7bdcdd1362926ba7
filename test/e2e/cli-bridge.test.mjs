// The chat page against a CLI Bridge (the stand-in, test/cli-bridge/standin.mjs): the same page,
// unchanged, over PROVIDER=cli-bridge — streaming, the answer, Stop, and a permission ask; no Terminal tab.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { chromium } from "playwright-core";
import { startDevServer } from "../../scripts/devserver.mjs";
import { startStandIn } from "../cli-bridge/standin.mjs";
import { watchCsp } from "./csp.mjs";

const SHOTS = "test-results/screenshots";
mkdirSync(SHOTS, { recursive: true });

let bridge;
let server;
let browser;

before(async () => {
  bridge = await startStandIn({ port: 0, token: "e2e-bridge-token" });
  server = await startDevServer({
    vars: {
      PROVIDER: "cli-bridge",
      CLI_BRIDGE_URL: bridge.url,
      CLI_BRIDGE_TOKEN: "e2e-bridge-token",
      CLI_BRIDGE_MODEL: "codex/default",
    },
  });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  server?.stop();
  await bridge?.close();
});

async function signedIn() {
  const context = await browser.newContext({ viewport: { width: 1200, height: 860 } });
  // Under the page's CSP; a violation fails the test (csp.mjs).
  await watchCsp(context);
  const page = await context.newPage();
  page.on("pageerror", (err) => console.error("page error:", err.message));
  await page.goto(server.base);
  await page.getByLabel("Your name").fill(`bridge-user-${Date.now().toString(36)}`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#empty").waitFor();
  return page;
}

const lastTurn = (page) => page.locator("li.turn").last();

async function send(page, message) {
  await page.locator("#composer-input").fill(message);
  await page.keyboard.press("Enter");
}

describe("the chat page over a CLI Bridge", () => {
  it("streams a Codex answer to done, and a second turn continues the conversation", async () => {
    const page = await signedIn();
    const turn = (n) => page.locator("li.turn").nth(n);
    await send(page, "hello from the page");
    await turn(0).locator('.badge:text-is("done")').waitFor({ timeout: 20_000 });
    assert.equal((await turn(0).locator(".agent .text").allTextContents()).join("\n\n"), "echo: hello from the page");
    await send(page, "and a second one");
    // The second turn's own badge (the first one's "done" must not satisfy the wait).
    await turn(1).locator('.badge:text-is("done")').waitFor({ timeout: 20_000 });
    assert.equal((await turn(1).locator(".agent .text").allTextContents()).join("\n\n"), "echo: and a second one");
    await page.screenshot({ path: `${SHOTS}/cli-bridge-answer.png` });
  });

  it("the usage line says an estimate is one, and the served model is the one the bridge reported", async () => {
    const page = await signedIn();
    await send(page, "[estimated] [served:gpt-5.4-2026-03-05] count this");
    await lastTurn(page).locator('.badge:text-is("done")').waitFor({ timeout: 20_000 });
    const usage = await lastTurn(page).locator(".turn-footer .usage").textContent();
    assert.match(usage, /^in ≈\d+ · out ≈\d+ · unknown \(tokens estimated\)$/);
    assert.equal(await lastTurn(page).locator(".turn-footer .model").textContent(), "served by gpt-5.4-2026-03-05");
    assert.match(await page.locator("#usage-total").textContent(), /^Total: in ≈\d+ · out ≈\d+ .*\(tokens estimated\)/);
    // As recorded (no provenance, no served model): unverified, and no model claimed.
    await send(page, "plain count");
    await page.locator("li.turn").nth(1).locator('.badge:text-is("done")').waitFor({ timeout: 20_000 });
    assert.match(await lastTurn(page).locator(".turn-footer .usage").textContent(), /\(tokens unverified\)$/);
    assert.equal(await lastTurn(page).locator(".turn-footer .model").count(), 0);
    await page.screenshot({ path: `${SHOTS}/cli-bridge-usage-provenance.png` });
    await page.context().close();
  });

  it("the agent picker offers the bridge's model routes under their harness, no backend; the pick is the conversation's", async () => {
    const page = await signedIn();
    const model = page.getByRole("combobox", { name: "Model", exact: true });
    await model.waitFor();
    assert.equal(await page.getByRole("combobox", { name: "Agent", exact: true }).isVisible(), false);
    assert.deepEqual(await model.locator("optgroup").evaluateAll((groups) => groups.map((g) => g.label)), [
      "codex",
      "pi",
    ]);
    assert.equal(await model.locator("option:checked").textContent(), "Default (codex/default)");
    // By keyboard: Default, codex/default, codex/gpt-5-codex, codex/gpt-5.4.
    await model.focus();
    for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowDown");
    assert.equal(await model.inputValue(), "codex/gpt-5.4");
    await send(page, "which model?");
    await lastTurn(page).locator('.badge:text-is("done")').waitFor({ timeout: 20_000 });
    const token = await page.evaluate(() => localStorage.getItem("gw:token"));
    const cid = await page.evaluate(() => new URL(location.href).searchParams.get("c"));
    const summary = await (
      await fetch(`${server.base}/v1/conversations/${cid}`, { headers: { authorization: `Bearer ${token}` } })
    ).json();
    assert.deepEqual(summary.agent, {
      backend: "codex",
      model: "codex/gpt-5.4",
      chosen: "first-turn",
      credential: null,
      mcpServers: [],
    });
    assert.equal(await model.inputValue(), "codex/gpt-5.4");
    await page.screenshot({ path: `${SHOTS}/cli-bridge-agent-picker.png` });
    await page.context().close();
  });

  it("Stop ends a hanging run as cancelled", async () => {
    const page = await signedIn();
    await send(page, "[hang] wait for me");
    await lastTurn(page).locator(".agent .text").first().waitFor({ timeout: 20_000 });
    await page.getByRole("button", { name: "Stop" }).click();
    await lastTurn(page).locator('.badge:text-is("cancelled")').waitFor({ timeout: 20_000 });
  });

  it("the workspace panel offers no Terminal tab: the bridge has no terminals (501 capability_denied)", async () => {
    const page = await signedIn();
    const asked = page.waitForResponse(
      (r) => r.url().endsWith("/v1/environment/terminals") && r.request().method() === "GET",
    );
    await page.locator("#workspace-button").click();
    assert.equal((await asked).status(), 501);
    await page.locator("#ws-tab-terminal").waitFor({ state: "hidden" });
    assert.equal(await page.locator("#ws-tab-files").getAttribute("aria-selected"), "true");
    assert.equal(await page.getByRole("tab", { name: "Terminal" }).count(), 0);
    await page.context().close();
  });
});
