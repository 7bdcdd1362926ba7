// The workspace panel's Terminal tab (issue 41): a shell in the user's sandbox through the gateway,
// typed into with the real keyboard and read from xterm's rows; the same terminal after a reload
// (its output once, then on); the key that leaves it; light and dark; on a phone the key bar.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assertAccessible, faults, openPage, send, signIn, unique, waitForBadge } from "./harness.mjs";

const panel = (page) => page.locator("#workspace");
const termTab = (page) => panel(page).getByRole("tab", { name: "Terminal" });

/** The terminal's screen as xterm draws it: one string per row, trailing blanks trimmed. */
const rows = (page) =>
  page.evaluate(() =>
    [...document.querySelectorAll("#ws-term-panel .xterm-rows > div")].map((r) =>
      (r.textContent ?? "").replace(/\u00a0/g, " ").trimEnd(),
    ),
  );

/** Waits until a row of the screen reads exactly `text`; failing, says what the screen shows. */
async function rowShown(page, text, timeout = 15_000) {
  try {
    await page.waitForFunction(
      (want) =>
        [...document.querySelectorAll("#ws-term-panel .xterm-rows > div")].some(
          (r) => (r.textContent ?? "").replace(/\u00a0/g, " ").trimEnd() === want,
        ),
      text,
      { timeout },
    );
  } catch (err) {
    const screen = (await rows(page)).filter(Boolean).join("\n");
    throw new Error(`no row reads ${JSON.stringify(text)}; the screen:\n${screen}`, { cause: err });
  }
}

/** Opens the panel and its Terminal tab with the keyboard, and waits for the shell's socket. */
async function openTerminal(page) {
  const button = page.locator("#workspace-button");
  if ((await button.getAttribute("aria-expanded")) !== "true") {
    await button.focus();
    await page.keyboard.press("Enter");
  }
  await termTab(page).click();
  await panel(page)
    .locator(".term-status", { hasText: /^Connected\.$/ })
    .waitFor({ timeout: 20_000 });
  await rowShown(page, "$");
}

const inTerminal = (page) => page.evaluate(() => !!document.activeElement?.classList.contains("xterm-helper-textarea"));

/**
 * Tabs from the Terminal tab into the terminal (past the head's buttons: the agent's UI, once the
 * conversation has a turn): the focus is in xterm's input.
 */
async function focusTerminal(page) {
  await termTab(page).focus();
  for (let i = 0; i < 3 && !(await inTerminal(page)); i++) await page.keyboard.press("Tab");
  assert.ok(await inTerminal(page), "Tab from the Terminal tab reaches the terminal");
}

/** Types a line and Enter with the real keyboard. */
async function typeLine(page, line) {
  await page.keyboard.type(line);
  await page.keyboard.press("Enter");
}

/**
 * The input the page sends up its terminal sockets, as the browser sent it; `until(n)` resolves once
 * there are at least n.
 */
function sentInput(page) {
  /** @type {string[]} */
  const inputs = [];
  /** @type {Array<{ n: number, resolve: () => void }>} */
  let waiting = [];
  page.on("websocket", (ws) => {
    if (!/\/terminals\/[^/]+\/ws/.test(ws.url())) return;
    ws.on("framesent", ({ payload }) => {
      const frame = JSON.parse(String(payload));
      if (frame.type !== "input") return;
      inputs.push(frame.data);
      for (const w of waiting) if (inputs.length >= w.n) w.resolve();
      waiting = waiting.filter((w) => inputs.length < w.n);
    });
  });
  const until = (/** @type {number} */ n) =>
    inputs.length >= n ? Promise.resolve() : new Promise((resolve) => waiting.push({ n, resolve }));
  return { inputs, until };
}

/** The screen's rows that read exactly `text`. */
const count = async (page, text) => (await rows(page)).filter((r) => r === text).length;

/**
 * A signed-in page whose terminal sockets go through a proxy that can drop the page's side (the
 * gateway's side goes with it), its terminal open and `echo <word>` drawn.
 */
async function proxiedTerminal(user, word) {
  const page = await openPage();
  await signIn(page, unique(user));
  const sockets = [];
  await page.routeWebSocket(/\/terminals\/[^/]+\/ws/, (ws) => {
    ws.connectToServer();
    sockets.push(ws);
  });
  await openTerminal(page);
  await focusTerminal(page);
  await typeLine(page, `echo ${word}`);
  await rowShown(page, word);
  return { page, sockets };
}

describe("the Terminal tab", () => {
  it("runs a typed command and shows its output; ls shows the agent's file; Escape goes to the shell; Alt+Shift+↑ leaves; axe-clean", async () => {
    const page = await openPage();
    await signIn(page, unique("term"));
    // The agent writes a file: the shell sees the same workspace.
    await send(page, "Take a note [write:notes.txt:hello from the agent\\n]");
    await waitForBadge(page, "done");
    const sent = sentInput(page);
    // xterm is a chunk of its own: fetched when the Terminal tab opens, not with the page or the panel.
    const fetched = [];
    page.on("request", (r) => fetched.push(new URL(r.url()).pathname));
    const chunk = () => fetched.filter((p) => /^\/assets\/terminal-[A-Z0-9]+\.js$/.test(p));
    await page.locator("#workspace-button").click();
    await termTab(page).waitFor();
    assert.deepEqual(chunk(), []);
    await openTerminal(page);
    assert.equal(chunk().length, 1);
    assert.equal(await termTab(page).getAttribute("aria-selected"), "true");
    await focusTerminal(page);

    await typeLine(page, "echo hello");
    await rowShown(page, "hello");
    assert.ok((await rows(page)).includes("$ echo hello"));
    await typeLine(page, "ls");
    await rowShown(page, "notes.txt");
    await typeLine(page, "cat notes.txt");
    await rowShown(page, "hello from the agent");

    // Escape is the shell's: sent to it, the panel stays open and the focus in the terminal.
    let n = sent.inputs.length;
    await page.keyboard.press("Escape");
    await sent.until(n + 1);
    assert.equal(sent.inputs.at(-1), "\x1b");
    assert.ok(await panel(page).isVisible());
    assert.ok(await inTerminal(page));
    // Tab too: it stays in the terminal.
    await page.keyboard.press("Tab");
    assert.ok(await inTerminal(page));
    n = sent.inputs.length;
    await page.keyboard.press("Control+c");
    await sent.until(n + 1);
    assert.deepEqual(sent.inputs.slice(-2), ["\t", "\x03"]);

    // The hint names the key that leaves; it puts the focus on the Terminal tab.
    assert.match(await panel(page).locator(".term-hint").innerText(), /Alt\+Shift\+↑ leaves the terminal/);
    await page.keyboard.press("Alt+Shift+ArrowUp");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "ws-tab-terminal");
    await assertAccessible(page, "the Terminal tab");
    // The tabs as the tabs pattern has them: ← → move and select; the terminal stays as it was.
    await page.keyboard.press("ArrowLeft");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "ws-tab-files");
    assert.equal(await panel(page).locator("#ws-tab-files").getAttribute("aria-selected"), "true");
    assert.ok(await panel(page).locator("#ws-files-panel").isVisible());
    assert.equal(await panel(page).locator("#ws-term-panel").isVisible(), false);
    await page.keyboard.press("ArrowRight");
    assert.equal(await termTab(page).getAttribute("aria-selected"), "true");
    assert.ok(
      await panel(page)
        .locator(".term-status", { hasText: /^Connected\.$/ })
        .isVisible(),
    );
    assert.equal(await count(page, "hello from the agent"), 1);
    await page.context().close();
  });

  it("after a reload shows the same terminal, its output once, and goes on", async () => {
    const page = await openPage();
    await signIn(page, unique("term-reload"));
    await openTerminal(page);
    await focusTerminal(page);
    const mark = unique("first");
    await typeLine(page, `echo ${mark}`);
    await rowShown(page, mark);
    const id = await page.evaluate(() => JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}").terminalId);
    assert.ok(id);

    await page.reload();
    // The panel opens again once live, on its Terminal tab, and the terminal reattaches.
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    await rowShown(page, mark);
    const screen = await rows(page);
    assert.equal(screen.filter((r) => r === mark).length, 1, screen.join("\n"));
    assert.equal(screen.filter((r) => r === `$ echo ${mark}`).length, 1, screen.join("\n"));
    assert.equal(await page.evaluate(() => JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}").terminalId), id);
    await focusTerminal(page);
    await typeLine(page, "echo second");
    await rowShown(page, "second");
    const after = await rows(page);
    assert.equal(after.filter((r) => r === mark).length, 1, after.join("\n"));
    await page.context().close();
  });

  it("after a dropped connection reconnects from its cursor: the output once, nothing missed, and goes on", async () => {
    const { page, sockets } = await proxiedTerminal("term-drop", "one");
    assert.equal(sockets.length, 1);
    assert.equal(new URL(sockets[0].url()).searchParams.get("since"), null);

    await sockets[0].close({ code: 4000, reason: "dropped" });
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    assert.equal(sockets.length, 2);
    // Asked for what follows the last output drawn.
    assert.match(new URL(sockets[1].url()).searchParams.get("since") ?? "", /^[1-9]\d*$/);
    await typeLine(page, "echo two");
    await rowShown(page, "two");
    assert.equal(await count(page, "$ echo one"), 1);
    assert.equal(await count(page, "one"), 1);
    assert.equal(await count(page, "$ echo two"), 1);
    await page.context().close();
  });

  it("a cursor the gateway no longer keeps: starts again from the current screen, and says so", async () => {
    const { page, sockets } = await proxiedTerminal("term-evicted", "before");

    // The page's reconnect (its POST) is held while another viewer of the same terminal makes more
    // output than the gateway keeps (over 1 MiB: two runs of seq 100000).
    /** @type {() => void} */
    let release = () => {};
    const gate = new Promise((resolve) => (release = () => resolve(undefined)));
    await page.route("**/v1/environment/terminals", async (route) => {
      if (route.request().method() === "POST" && !route.request().headers()["x-test-viewer"]) await gate;
      await route.continue();
    });
    await sockets[0].close({ code: 4000, reason: "dropped" });
    await panel(page)
      .locator(".term-status", { hasText: /reconnecting…$/i })
      .waitFor();
    await page.evaluate(async () => {
      const token = localStorage.getItem("gw:token");
      const { terminalId } = JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}");
      const res = await fetch("/v1/environment/terminals", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-test-viewer": "1" },
        body: JSON.stringify({ terminalId }),
      });
      const { url } = await res.json();
      const ws = new WebSocket(new URL(url, location.href.replace(/^http/, "ws")));
      await new Promise((resolve) => {
        let text = "";
        let runs = 0;
        ws.onopen = () => ws.send(JSON.stringify({ type: "input", data: "seq 100000\r" }));
        ws.onmessage = (event) => {
          const frame = JSON.parse(event.data);
          if (frame.type !== "output") return;
          text = (text + frame.data).slice(-64);
          if (!text.endsWith("100000\r\n$ ")) return;
          text = "";
          if (++runs === 2) return resolve(undefined);
          ws.send(JSON.stringify({ type: "input", data: "seq 100000\r" }));
        };
      });
      ws.close();
    });
    release();
    await panel(page)
      .locator(".term-status", { hasText: "Started from the current screen: the output before it is no longer kept." })
      .waitFor({ timeout: 30_000 });
    await rowShown(page, "100000");
    await typeLine(page, "echo after");
    await rowShown(page, "after");
    assert.equal(await count(page, "$ echo after"), 1);
    await page.context().close();
  });

  it("when the gateway reattaches the sandbox's terminal (restored), draws its kept screen afresh: nothing twice", async () => {
    const page = await openPage();
    await signIn(page, unique("term-restored"));
    /** @type {(frame: unknown) => void} */
    let sawRestored = () => {};
    const restored = new Promise((resolve) => (sawRestored = resolve));
    page.on("websocket", (ws) =>
      ws.on("framereceived", ({ payload }) => {
        const frame = JSON.parse(String(payload));
        if (frame.type === "ready" && frame.restored) sawRestored(frame);
      }),
    );
    // The sandbox drops the gateway's socket after its third output (the prompt, then two typed
    // characters echoed); the gateway reattaches it and replays the sandbox's kept screen.
    await faults({ terminalDrop: 3 });
    try {
      await openTerminal(page);
      await focusTerminal(page);
      await page.keyboard.type("ec");
      // The gateway said so in the stream: the screen is drawn afresh from there, once.
      await restored;
      await rowShown(page, "$ ec");
      await typeLine(page, "ho after");
      await rowShown(page, "after");
      assert.equal(await count(page, "$ echo after"), 1, (await rows(page)).join("\n"));
    } finally {
      await faults({});
    }
    await page.context().close();
  });

  it("an exit says its code and offers a new terminal, which starts a new shell (the ended one forgotten)", async () => {
    const page = await openPage();
    await signIn(page, unique("term-exit"));
    await openTerminal(page);
    await focusTerminal(page);
    const first = await page.evaluate(() => JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}").terminalId);
    await typeLine(page, "exit 3");
    await panel(page)
      .locator(".term-status", { hasText: /^exited \(code 3\)$/ })
      .waitFor({ timeout: 20_000 });
    const again = panel(page).getByRole("button", { name: "Start a new terminal" });
    await again.click();
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    await rowShown(page, "$");
    const second = await page.evaluate(() => JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}").terminalId);
    assert.ok(second && second !== first);
    assert.equal(await count(page, "$ exit 3"), 0);
    await focusTerminal(page);
    await typeLine(page, "echo again");
    await rowShown(page, "again");
    // The gateway lists the new terminal only: the ended one was deleted.
    const listed = await page.evaluate(async () => {
      const res = await fetch("/v1/environment/terminals", {
        headers: { authorization: `Bearer ${localStorage.getItem("gw:token")}` },
      });
      return (await res.json()).terminals.map((/** @type {{ terminalId: string }} */ t) => t.terminalId);
    });
    assert.deepEqual(listed, [second]);
    await page.context().close();
  });

  it("a sign-out lets go of the user's terminal: whoever signs in next in the tab sees none of it", async () => {
    const page = await openPage();
    await signIn(page, unique("term-first"));
    await openTerminal(page);
    await focusTerminal(page);
    const secret = unique("secret");
    await typeLine(page, `echo ${secret}`);
    await rowShown(page, secret);
    const first = await page.evaluate(() => JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}").terminalId);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Your name").fill(unique("term-second"));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#connection[data-state=live]").waitFor();
    // The panel is still on its Terminal tab: a terminal of the new user's, the screen without the other's.
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    await rowShown(page, "$");
    assert.equal((await rows(page)).filter((r) => r.includes(secret)).length, 0);
    const second = await page.evaluate(() => JSON.parse(sessionStorage.getItem("gw:terminal") ?? "{}").terminalId);
    assert.ok(second && second !== first);
    await page.context().close();
  });

  it("takes the page's colours, light and dark, and follows a change of theme", async () => {
    const page = await openPage({ colorScheme: "dark" });
    await signIn(page, unique("term-theme"));
    await openTerminal(page);
    /** The colour of the terminal's text and of the page's, as the browser computes them. */
    const colours = () =>
      page.evaluate(() => ({
        text: getComputedStyle(/** @type {Element} */ (document.querySelector("#ws-term-panel .xterm-rows"))).color,
        ink: getComputedStyle(document.body).color,
      }));
    const dark = await colours();
    assert.equal(dark.text, dark.ink);
    await assertAccessible(page, "the Terminal tab, dark");
    // The sidebar's Theme: Light.
    await page.locator('#theme-choice input[value="light"]').check();
    await page.waitForFunction(
      (before) =>
        getComputedStyle(/** @type {Element} */ (document.querySelector("#ws-term-panel .xterm-rows"))).color !==
        before,
      dark.text,
    );
    const light = await colours();
    assert.equal(light.text, light.ink);
    assert.notEqual(light.text, dark.text);
    await assertAccessible(page, "the Terminal tab, light");
    await page.context().close();
  });

  it("on a phone: a key bar sends Ctrl (held for the next key), Tab, Esc and the arrows; the screen fits; axe-clean", async () => {
    const page = await openPage({ width: 390, height: 844, phone: true });
    await signIn(page, unique("term-phone"));
    const sent = sentInput(page);
    await page.locator("#workspace-button").tap();
    await termTab(page).tap();
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    await rowShown(page, "$");
    const bar = panel(page).getByRole("group", { name: "Terminal keys" });
    assert.ok(await bar.isVisible());

    // The screen fits the drawer: the shell knows its rows (stty size), as many as xterm draws.
    await panel(page).locator(".xterm").tap();
    await typeLine(page, "stty size");
    const drawn = (await rows(page)).length;
    await page.waitForFunction(
      (n) =>
        [...document.querySelectorAll("#ws-term-panel .xterm-rows > div")].some((r) =>
          new RegExp(`^${n} \\d+$`).test((r.textContent ?? "").trim()),
        ),
      drawn,
    );

    const ctrl = bar.getByRole("button", { name: "Ctrl" });
    await ctrl.tap();
    assert.equal(await ctrl.getAttribute("aria-pressed"), "true");
    await page.keyboard.type("c");
    await rowShown(page, "$ ^C");
    assert.equal(await ctrl.getAttribute("aria-pressed"), "false");
    const n = sent.inputs.length;
    for (const name of ["Tab", "Esc", "Up arrow", "Down arrow", "Left arrow", "Right arrow"])
      await bar.getByRole("button", { name, exact: true }).tap();
    await sent.until(n + 6);
    assert.deepEqual(sent.inputs.slice(-7), ["\x03", "\t", "\x1b", "\x1b[A", "\x1b[B", "\x1b[D", "\x1b[C"]);
    // A tap on the bar leaves the focus in the terminal (the phone's keyboard stays up).
    assert.ok(await inTerminal(page));
    await assertAccessible(page, "the Terminal tab on a phone");
    await page.context().close();
  });

  it("opens the conversation's agent UI (interactive mode): the chat says so and refuses a message until it is given back", async () => {
    const page = await openPage();
    await signIn(page, unique("term-agent"));
    await openTerminal(page);
    const agentButton = panel(page).getByRole("button", { name: "Open the agent's UI" });
    // A new conversation has no agent session yet: nothing to open.
    assert.equal(await agentButton.isVisible(), false);
    await send(page, "Say hello");
    await waitForBadge(page, "done");
    await agentButton.click();
    await panel(page).locator(".term-what", { hasText: "The agent's UI for this conversation" }).waitFor();
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    // The agent's own screen, and the chat's banner from interactive.started.
    await rowShown(page, ">");
    const note = page.locator("#interactive-note");
    await note.waitFor();
    assert.match(await note.innerText(), /The agent's terminal UI has this conversation/);
    await assertAccessible(page, "interactive mode");

    // A message meanwhile is refused (409 session_interactive) and goes back to the box.
    await page.locator("#composer-input").fill("Another thing");
    await page.keyboard.press("Enter");
    await page.locator("#banner", { hasText: "terminal UI" }).waitFor();
    assert.equal(await page.locator("#composer-input").inputValue(), "Another thing");

    // Given back: the banner goes (interactive.released), the tab shows the shell, a message is sent.
    await page.locator("#interactive-release").click();
    await note.waitFor({ state: "hidden" });
    await panel(page)
      .locator(".term-what", { hasText: /^Shell$/ })
      .waitFor();
    await send(page, "Another thing");
    await waitForBadge(page, "done");
    await page.context().close();
  });

  it("after a reload in interactive mode, the chat's Open in terminal shows the agent's UI again", async () => {
    const page = await openPage();
    await signIn(page, unique("term-agent-reload"));
    await send(page, "Say hello");
    await waitForBadge(page, "done");
    await openTerminal(page);
    await panel(page).getByRole("button", { name: "Open the agent's UI" }).click();
    await page.locator("#interactive-note").waitFor();
    // The panel closed, then a reload: the summary says the agent's UI has the conversation.
    await panel(page).getByRole("button", { name: "Close the workspace panel" }).click();
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await page.locator("#interactive-note").waitFor();
    await page.getByRole("button", { name: "Open in terminal" }).click();
    assert.equal(await termTab(page).getAttribute("aria-selected"), "true");
    await panel(page).locator(".term-what", { hasText: "The agent's UI for this conversation" }).waitFor();
    await panel(page)
      .locator(".term-status", { hasText: /^Connected\.$/ })
      .waitFor({ timeout: 20_000 });
    await rowShown(page, ">");
    await page.context().close();
  });
});
