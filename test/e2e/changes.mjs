// What the agent changed (issue 23): the emulator's `[edits]` agent writes a new file, edits
// another, fails an edit and writes over a third file with OpenCode's `write` and `edit` tools.
// Its turn lists the changed files, collapsed; opened, each file's diff with its additions and
// removals highlighted; the failed edit is not listed; the file written over unknown content says
// it is not counted and shows no diff. Axe-clean closed and open, light and dark, wide and narrow.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  assertAccessible,
  assertNoSidewaysScroll,
  lastTurn,
  openPage,
  send,
  server,
  shot,
  signIn,
  unique,
  waitForBadge,
} from "./harness.mjs";

/** Sends an `[edits]` message on a fresh page and waits for its turn to end. */
async function editedTurn(options) {
  const page = await openPage(options);
  await signIn(page, unique("changes"));
  await send(page, "Add a greeting to the server [edits]");
  await waitForBadge(page, "done");
  return page;
}

describe("what the agent changed", () => {
  it("lists the changed files collapsed; opened, each file with its counts and its highlighted diff (light, wide)", async () => {
    const page = await editedTurn();
    const turn = lastTurn(page);
    const summary = turn.locator("details.changes > summary");
    await summary.waitFor();
    // Three files: the failed edit changed nothing.
    assert.match(await summary.innerText(), /^Changed 3 files/);
    // What the tool calls say, labelled so (what the workspace says is the workspace panel's: workspace.mjs).
    assert.match(await summary.innerText(), /from the agent's tool calls/);
    assert.equal(await turn.locator("details.changes").getAttribute("open"), null, "collapsed by default");
    const paths = turn.locator(".change-path");
    assert.equal(await paths.first().isVisible(), false);
    // Counted where known, said where not: 4 lines added (the new file) + 2 added, 1 removed (the edit); README.md is not.
    assert.equal(await summary.locator(".added").innerText(), "+6");
    assert.equal(await summary.locator(".removed").innerText(), "−1");
    assert.equal(await summary.locator(".sr-only").textContent(), "6 lines added, 1 removed");
    assert.match(await summary.innerText(), /1 not counted/);
    await assertAccessible(page, "changes closed");

    // Keyboard: the summary takes focus and Enter opens it.
    await summary.focus();
    await page.keyboard.press("Enter");
    assert.equal(await turn.locator("details.changes").getAttribute("open"), "");
    assert.deepEqual(await paths.allInnerTexts(), ["src/greeting.ts", "src/server.ts", "README.md"]);
    assert.ok(!(await paths.allInnerTexts()).includes("src/missing.ts"), "a failed edit is not a change");

    const file = (path) => turn.locator(".changed-file", { has: page.locator(".change-path", { hasText: path }) });
    // The new file: all additions, highlighted.
    const created = file("src/greeting.ts");
    assert.match(await created.locator(".change-note").innerText(), /New file/);
    assert.equal(await created.locator(".sr-only").textContent(), "4 lines added, 0 removed");
    await created.locator("code.hljs .hljs-addition").first().waitFor();
    assert.equal(await created.locator("code .hljs-deletion").count(), 0);
    assert.equal(await created.locator("code .hljs-addition").count(), 4);
    // The edit: its old text against its new text, a removal and two additions.
    const edited = file("src/server.ts");
    assert.equal(await edited.locator(".sr-only").textContent(), "2 lines added, 1 removed");
    assert.equal(await edited.locator("code .hljs-deletion").count(), 1);
    assert.equal(await edited.locator("code .hljs-addition").count(), 2);
    assert.match(
      await edited.locator("code .hljs-deletion").innerText(),
      /^-serve\(\(request\) => new Response\("ok"\)\);$/,
    );
    // Written over a file whose earlier content was never reported: no diff claimed.
    const written = file("README.md");
    assert.equal(await written.locator(".change-count").innerText(), "not counted");
    assert.match(
      await written.locator(".change-note").innerText(),
      /earlier content is not reported, so there is no diff/,
    );
    assert.equal(await written.locator("code .hljs-addition, code .hljs-deletion").count(), 0);
    assert.match(await written.locator(".code-block code").innerText(), /A small service that greets/);

    await assertAccessible(page, "changes open");
    await shot(page, "changes-open-light-wide");
    await page.context().close();
  });

  it("is rebuilt the same from the transcript after a reload, and is axe-clean open in dark, wide and narrow", async () => {
    const dark = await editedTurn({ colorScheme: "dark" });
    await lastTurn(dark).locator("details.changes > summary").click();
    await lastTurn(dark).locator("details.changes code.hljs .hljs-addition").first().waitFor();
    await assertAccessible(dark, "changes open, dark");
    await shot(dark, "changes-open-dark-wide");
    // After a reload the list is rebuilt from the transcript (the stream's snapshot), the same files.
    await dark.reload();
    await dark.locator("#connection[data-state=live]").waitFor();
    const summary = lastTurn(dark).locator("details.changes > summary");
    await summary.waitFor();
    assert.match(await summary.innerText(), /^Changed 3 files/);
    await dark.context().close();

    for (const colorScheme of ["light", "dark"]) {
      const narrow = await editedTurn({ width: 390, height: 844, colorScheme });
      await lastTurn(narrow).locator("details.changes > summary").click();
      await lastTurn(narrow).locator("details.changes code.hljs .hljs-addition").first().waitFor();
      await lastTurn(narrow).locator(".changed-file", { hasText: "src/server.ts" }).scrollIntoViewIfNeeded();
      await assertAccessible(narrow, `changes open, ${colorScheme}, narrow`);
      await assertNoSidewaysScroll(narrow, `changes open, ${colorScheme}, narrow`);
      await shot(narrow, `changes-open-${colorScheme}-narrow`);
      await narrow.context().close();
    }
  });
});

// Issue 23, item 6 and issue 38, item 1 (fast on slow links), the parts a browser shows: the page paints
// a notice before any module runs; it loads as few files as the build made (the page, its icon, boot.js,
// app.js, style.css), none found only once another ran; and what it shows of a conversation comes in one
// request started from <head> by boot.js, while app.js is still on its way: the conversation's stream, opened
// with its snapshot (…/events?snapshot=1), which the page then follows on.
describe("the page before and while its modules load", () => {
  it("says it is loading with no script at all, and not once the app shows", async () => {
    const page = await openPage();
    const noScript = await page.context().browser().newContext({ javaScriptEnabled: false });
    const bare = await noScript.newPage();
    await bare.goto(`${server.base}/`);
    assert.equal(await bare.getByRole("status").filter({ hasText: "Loading the chat…" }).isVisible(), true);
    await noScript.close();
    await signIn(page, unique("boot"));
    assert.equal(await page.getByText("Loading the chat…").isVisible(), false);
    await page.context().close();
  });

  it("opens a conversation with at most six files, all built, and its data in one request started by boot.js", async () => {
    const page = await openPage();
    const cid = unique("c-boot");
    await signIn(page, unique("requests"), cid);
    await send(page, "Say something [words:5]");
    await waitForBadge(page, "done");
    // Opened again with an empty cache: every request of the load, and which script started each.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.clearBrowserCache");
    /** @type {Array<{ path: string, by: string }>} */
    const requests = [];
    cdp.on("Network.requestWillBeSent", (e) => {
      const url = new URL(e.request.url);
      const frame = e.initiator.stack?.callFrames[0] ?? e.initiator.stack?.parent?.callFrames[0];
      requests.push({ path: `${url.pathname}${url.search}`, by: frame ? new URL(frame.url).pathname : "" });
    });
    await page.goto("about:blank");
    await page.goto(`${server.base}/?c=${cid}`);
    await page.locator("#connection[data-state=live]").waitFor();
    await waitForBadge(page, "done");
    const files = requests.filter((r) => !r.path.startsWith("/v1/") && r.path !== "/healthz");
    assert.ok(files.length <= 6, `${files.length} static requests: ${files.map((r) => r.path).join(", ")}`);
    for (const file of files) assert.match(file.path, /^\/(\?c=.*)?$|^\/assets\/[\w.-]+-[A-Z2-7]{8}\.(js|css|svg)$/);
    // The conversation: one request, its stream opened with its snapshot, asked by boot.js and followed on (no
    // token minted, no second stream); nothing of it read piece by piece.
    const ofConversation = requests.filter((r) => r.path.startsWith(`/v1/conversations/${cid}`));
    assert.deepEqual(
      ofConversation.map((r) => r.path),
      [`/v1/conversations/${cid}/events?snapshot=1`],
    );
    assert.match(ofConversation[0]?.by ?? "", /^\/assets\/boot-[A-Z2-7]{8}\.js$/);
    await page.context().close();
  });
});
