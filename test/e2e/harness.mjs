// What every browser test shares: one `wrangler dev` (with the Sandbox emulator) and one Chromium
// for the whole run, and the helpers that drive the page. Screenshots go to test-results/screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { after, before } from "node:test";
import axe from "axe-core";
import { chromium } from "playwright-core";
import { startDevServer } from "../../scripts/devserver.mjs";
import { watchCsp } from "./csp.mjs";

const SHOTS = "test-results/screenshots";
mkdirSync(SHOTS, { recursive: true });

/** Every conversation's token budget on the test server. */
export const BUDGET = 1_000_000;

/** @type {{ base: string, stop: () => void }} */
export const server = { base: "", stop: () => {} };
let browser;

before(async () => {
  // Faster frames than `npm start` (40 ms), still slow enough to reload or stop mid-answer. A
  // conversation budget no test comes near, so the page shows one (usage.mjs).
  Object.assign(
    server,
    await startDevServer({ vars: { EMULATOR_FRAME_DELAY_MS: "12", TOKEN_BUDGET_PER_CONVERSATION: String(BUDGET) } }),
  );
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
  server.stop();
});

let n = 0;
export const unique = (prefix) => `${prefix}-${Date.now().toString(36)}-${++n}`;

/** A new browser profile (its own storage), with a page in it, under the page's CSP (csp.mjs). */
export async function openPage({ width = 1200, height = 860, colorScheme = "light", phone = false } = {}) {
  // `phone`: a touch screen with a mobile browser's viewport (touch gestures: swipe() below).
  const context = await browser.newContext({
    viewport: { width, height },
    colorScheme,
    ...(phone ? { hasTouch: true, isMobile: true } : {}),
  });
  await watchCsp(context);
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
  const page = await context.newPage();
  page.on("pageerror", (err) => console.error("page error:", err.message));
  const log = [];
  page.on("console", (m) => log.push(`console ${m.type()}: ${m.text()}`));
  page.on("response", (r) =>
    log.push(
      `${r.status()} ${r.request().method()} ${r
        .url()
        .replace(/access_token=[^&]+/, "access_token=…")
        .slice(0, 140)}`,
    ),
  );
  page.diagnose = async (name) => {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(`${SHOTS}/${name}.log`, log.join("\n"));
    writeFileSync(`${SHOTS}/${name}.html`, await page.content());
    await page.screenshot({ path: `${SHOTS}/${name}-failure.png` });
  };
  page.on("dialog", (dialog) => dialog.accept());
  return page;
}

/** Signs in with dev login; with `cid`, on that conversation. Waits until the page follows its stream. */
export async function signIn(page, user, cid) {
  await page.goto(`${server.base}/${cid ? `?c=${cid}` : ""}`);
  await page.getByLabel("Your name").fill(user);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#connection[data-state=live]").waitFor();
}

/** Types a message and sends it; returns once the page shows it (or says why it was refused). */
export async function send(page, message) {
  const before = await page.locator("li.turn").count();
  await page.locator("#composer-input").fill(message);
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (n) => document.querySelectorAll("li.turn").length > n || !document.getElementById("banner").hidden,
    before,
  );
}

export const lastTurn = (page) => page.locator("li.turn").last();

export async function waitForBadge(page, text, timeout = 20_000) {
  await lastTurn(page).locator(`.badge:text-is("${text}")`).waitFor({ timeout });
}

/** The assistant's text as shown: the text parts of the last turn, joined as the result joins them. */
export async function shownText(page) {
  return (await lastTurn(page).locator(".agent .text").allTextContents()).join("\n\n");
}

export async function api(path, token, init = {}) {
  const res = await fetch(`${server.base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  });
  return res.json();
}

export const tokenOf = (page) => page.evaluate(() => localStorage.getItem("gw:token"));
export const cidOf = (page) => page.evaluate(() => new URL(location.href).searchParams.get("c"));

/**
 * A finger drags `dy` pixels down (negative: up) from (x, y) and stops before it lifts (no fling),
 * as touch events through the browser's input pipeline: the page scrolls the other way. Needs
 * openPage({ phone: true }). Returns once the scroll is drawn.
 */
export async function swipe(page, x, y, dy) {
  const cdp = await page.context().newCDPSession(page);
  const at = (/** @type {number} */ py) => ({ touchPoints: [{ x, y: py }] });
  await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", ...at(y) });
  for (let i = 1; i <= 10; i++)
    await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", ...at(y + (dy * i) / 10) });
  for (let i = 0; i < 3; i++) await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", ...at(y + dy) });
  await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
  await cdp.detach();
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
}

/** Saves a screenshot of the page as it is now. */
export async function shot(page, name, options = {}) {
  await page.screenshot({ path: `${SHOTS}/${name}.png`, ...options });
}

/** axe-core on the page as it is: no serious or critical violation. */
export async function assertAccessible(page, state) {
  // Evaluated through the debugging protocol, which the page's CSP does not govern (a <script> tag
  // of it would be an inline script the policy refuses).
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axe.source);
  const result = await page.evaluate(async () => {
    const { violations } = await window.axe.run(document, { resultTypes: ["violations"] });
    return violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => `${n.target.join(" ")}: ${n.failureSummary}`),
    }));
  });
  const serious = result.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(serious, [], `${state}: ${JSON.stringify(serious, null, 2)}`);
}

/** Neither the document nor the body is wider than the window (no sideways scrolling). */
export async function assertNoSidewaysScroll(page, state) {
  const sizes = await page.evaluate(() => ({
    doc: document.documentElement.scrollWidth,
    body: document.body.scrollWidth,
    view: window.innerWidth,
  }));
  assert.ok(sizes.doc <= sizes.view && sizes.body <= sizes.view, `${state}: ${JSON.stringify(sizes)}`);
}

/** Posts to one of the emulator's control routes (`/_emulator/<what>`); refused unless 200. */
async function emulatorControl(what, body) {
  const res = await fetch(`${server.base}/_emulator/${what}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.text());
}

/** Sets the emulator's faults (`{}` clears them). */
export const faults = (body) => emulatorControl("faults", body);

/** Switches the emulator's wire variants (`{}` restores the defaults). */
export const variants = (body) => emulatorControl("variants", body);
