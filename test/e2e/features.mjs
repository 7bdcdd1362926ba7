// What users of other chat UIs expect (issue 12, "Missing"): markdown (sanitized), copy, retry,
// regenerate, edit, dark mode, timestamps, the tab title, the empty state, a favicon, no 404s, and
// one sign-in per browser.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  assertAccessible,
  cidOf,
  lastTurn,
  openPage,
  send,
  server,
  shot,
  shownText,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const MARKDOWN = [
  "## Findings",
  "",
  "The parser lives in `src/parse.ts`. See [the docs](https://example.com/docs) and:",
  "",
  "- first item",
  "- second item with **bold**",
  "",
  "| file | lines |",
  "| --- | --- |",
  "| parse.ts | 120 |",
  "",
  "```ts",
  "export function parse(input: string): number {",
  '  return Number.parseInt(input, 10); // "quoted"',
  "}",
  "```",
].join("\n");

const HOSTILE = [
  "[click me](javascript:window.__pwned=3)",
  "",
  '<img src=x onerror="window.__pwned=4"> and <iframe src="javascript:window.__pwned=5"></iframe>',
  "",
  "![tracker](https://example.com/pixel.png?data=secret)",
  "",
  '<a href="javascript:window.__pwned=6">raw link</a> <b onmouseover="window.__pwned=7">hover</b>',
].join("\n");

/**
 * A conversation with one finished turn whose transcript says `text`: the transcript the page
 * loads is replaced by one carrying agent markdown (the emulator's agent writes none).
 */
async function conversationSaying(page, text) {
  await signIn(page, unique("md"));
  await send(page, "Write some markdown");
  await waitForBadge(page, "done");
  const cid = await cidOf(page);
  const turnId = await lastTurn(page).getAttribute("data-turn");
  // The page reads the transcript with the rest of the conversation: the first event of its stream opened with
  // its snapshot (…/events?snapshot=1, started by boot.js). Answered here with that event alone (the same content
  // as …/bootstrap), the transcript replaced; the stream then ends and the page follows on after it.
  const snapshotOf = (/** @type {URL} */ url) =>
    url.pathname === `/v1/conversations/${cid}/events` && url.searchParams.get("snapshot") === "1";
  await page.route(snapshotOf, async (route) => {
    const real = await (
      await route.fetch({ url: `${server.base}/v1/conversations/${cid}/bootstrap`, headers: route.request().headers() })
    ).json();
    const assistant = real.messages.messages.find((m) => m.role === "assistant");
    assistant.parts = [{ id: `${turnId}:md`, type: "text", text }];
    assistant.text = text;
    const { streamToken: _, ...snapshot } = real;
    const data = JSON.stringify({ type: "conversation.snapshot", data: snapshot });
    await route.fulfill({
      contentType: "text/event-stream",
      body: `retry: 2000\n\nid: ${real.messages.lastEventId}\nevent: conversation.snapshot\ndata: ${data}\n\n`,
    });
  });
  await page.reload();
  await page.locator("#connection[data-state=live]").waitFor();
  return lastTurn(page).locator(".agent .text");
}

describe("markdown in answers", () => {
  it("renders headings, lists, links, tables, inline code and a highlighted code block with a copy button", async () => {
    const page = await openPage();
    const text = await conversationSaying(page, MARKDOWN);
    await text.locator("h2", { hasText: "Findings" }).waitFor();
    assert.equal(await text.locator("li").count(), 2);
    assert.equal(await text.locator("li strong").textContent(), "bold");
    assert.equal(await text.locator("p code").first().textContent(), "src/parse.ts");
    const link = text.locator("a", { hasText: "the docs" });
    assert.equal(await link.getAttribute("href"), "https://example.com/docs");
    assert.equal(await link.getAttribute("target"), "_blank");
    assert.match(await link.getAttribute("rel"), /noopener/);
    assert.equal(await text.locator("table td").first().textContent(), "parse.ts");
    const block = text.locator(".code-block");
    assert.equal(await block.locator(".code-lang").textContent(), "ts");
    await block.locator("code.hljs .hljs-keyword").first().waitFor();
    await block.getByRole("button", { name: "Copy code" }).click();
    await block.getByRole("button", { name: "Copied" }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(
      copied,
      'export function parse(input: string): number {\n  return Number.parseInt(input, 10); // "quoted"\n}\n',
    );
    await shot(page, "markdown-light");
    await assertAccessible(page, "markdown");
    await page.emulateMedia({ colorScheme: "dark" });
    await shot(page, "markdown-dark");
    await assertAccessible(page, "markdown, dark");
    await page.context().close();
  });

  it("nothing in the agent's markdown runs: javascript: links, raw HTML, image onerror, trackers", async () => {
    const page = await openPage();
    const text = await conversationSaying(page, HOSTILE);
    await text.getByText("click me").waitFor();
    assert.equal(
      await text.locator("a", { hasText: "click me" }).count(),
      0,
      "a javascript: link is its text, no link",
    );
    assert.equal(
      await page
        .locator("li.turn img, li.turn iframe, li.turn script, li.turn [onerror], li.turn [onmouseover]")
        .count(),
      0,
    );
    const shown = await text.textContent();
    assert.ok(shown.includes('<img src=x onerror="window.__pwned=4">'), "raw HTML is shown as text");
    assert.ok(shown.includes('<a href="javascript:window.__pwned=6">raw link</a>'));
    const image = text.locator("a.image-link");
    assert.equal(await image.textContent(), "Image: tracker", "an image is a link, never loaded");
    await text.getByText("click me").click();
    await text.locator("b, a", { hasText: "hover" }).count();
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await page.context().close();
  });

  it("streams inline markdown live, and the user's own message stays plain text", async () => {
    const page = await openPage();
    await signIn(page, unique("inline"));
    // (Square brackets around one lowercase word are the emulator's directives: these have two words.)
    await send(
      page,
      "Use `npm test` and **bold** [go there](javascript:window.__pwned=8) ![a pic](https://example.com/pic.png)",
    );
    await waitForBadge(page, "done");
    const intro = lastTurn(page).locator(".agent .text").first();
    assert.equal(await intro.locator("code").textContent(), "npm test");
    assert.equal(await intro.locator("strong").textContent(), "bold");
    assert.equal(await intro.locator("a", { hasText: "go there" }).count(), 0, "a javascript: link is its text");
    assert.match(await intro.textContent(), /bold go there Image: a pic/);
    assert.equal(await intro.locator("a.image-link").textContent(), "Image: a pic");
    assert.equal(await lastTurn(page).locator(".bubble-user code, .bubble-user strong").count(), 0);
    assert.match(await lastTurn(page).locator(".bubble-user").textContent(), /\*\*bold\*\*/);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await page.context().close();
  });
});

describe("actions on messages", () => {
  it("copies an answer and a tool's output; regenerates the last answer on a branch beside it", async () => {
    const page = await openPage();
    await signIn(page, unique("copy"));
    await send(page, "What does the README say?");
    await waitForBadge(page, "done");
    const answer = await shownText(page);
    await lastTurn(page).getByRole("button", { name: "Copy answer" }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), answer);
    const tool = lastTurn(page).locator("details.tool");
    await tool.locator("summary").click();
    await tool.getByRole("button", { name: "Copy output" }).click();
    assert.equal(
      await page.evaluate(() => navigator.clipboard.readText()),
      "# Demo project\n\nA small service with a test suite.\n",
    );

    const before = await lastTurn(page).getAttribute("data-turn");
    await lastTurn(page).getByRole("button", { name: "Regenerate" }).click();
    await page.waitForFunction(
      (id) => document.querySelector("li.turn:last-child")?.getAttribute("data-turn") !== id,
      before,
    );
    await waitForBadge(page, "done");
    const messages = await page.locator(".bubble-user").allTextContents();
    assert.deepEqual(messages, ["What does the README say?"], "the new answer replaces the old one on the page");
    await lastTurn(page).getByRole("group", { name: "Versions of this message" }).getByText("2/2").waitFor();
    await page.context().close();
  });

  it("a failed turn has Retry (a new turn with the same message); the last message can be edited and sent again, on a branch", async () => {
    const page = await openPage();
    await signIn(page, unique("retry"));
    await send(page, "Break please [fail]");
    await waitForBadge(page, "failed");
    await lastTurn(page).locator(".turn-error", { hasText: "The turn failed" }).waitFor();
    await lastTurn(page).getByRole("button", { name: "Retry" }).click();
    await page.locator("li.turn").nth(1).waitFor();
    await waitForBadge(page, "failed");
    const ids = await page.locator("li.turn").evaluateAll((nodes) => nodes.map((n) => n.dataset.turn));
    assert.equal(new Set(ids).size, 2, "the retry is a new turn");

    await lastTurn(page).getByRole("button", { name: "Edit" }).click();
    const editor = lastTurn(page).getByLabel("Edit your message");
    assert.equal(await editor.inputValue(), "Break please [fail]");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), "Edit your message");
    await editor.fill("Now work please");
    await page.keyboard.press("Enter");
    await lastTurn(page).locator(".bubble-user", { hasText: "Now work please" }).waitFor();
    await waitForBadge(page, "done");
    assert.equal(await page.locator("li.turn").count(), 2);
    // The edited version stays a click away.
    const picker = lastTurn(page).getByRole("group", { name: "Versions of this message" });
    await picker.getByText("2/2").waitFor();
    await picker.getByRole("button", { name: "Previous version" }).click();
    await lastTurn(page).locator(".bubble-user", { hasText: "Break please [fail]" }).waitFor();
    await page.context().close();
  });
});

describe("what the page shows around the chat", () => {
  it("dark mode follows the system; messages have times; the tab title names the conversation and says when the agent works or waits", async () => {
    const page = await openPage({ colorScheme: "dark" });
    await signIn(page, unique("dark"));
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const [r, g, b] = background.match(/\d+/g).map(Number);
    assert.ok(r + g + b < 120, `a dark background: ${background}`);
    assert.equal(await page.title(), "New conversation — Agent chat");
    await send(page, "Run the tests [permission]");
    await page.waitForFunction(() => document.title.startsWith("Working… · "));
    await page.locator(".interaction").waitFor();
    await page.waitForFunction(() => document.title === "Waiting for you · Run the tests [permission] — Agent chat");
    await shot(page, "permission-dark");
    await page.getByRole("button", { name: "Allow once" }).click();
    await waitForBadge(page, "done");
    await page.waitForFunction(() => document.title === "Run the tests [permission] — Agent chat");
    const sent = await lastTurn(page).locator(".message-meta time").getAttribute("datetime");
    assert.ok(Math.abs(Date.parse(sent) - Date.now()) < 60_000, sent);
    assert.match(await lastTurn(page).locator(".message-meta time").textContent(), /\d{1,2}:\d{2}/);
    await lastTurn(page).locator(".turn-footer time").waitFor();
    await page.context().close();
  });

  it("an empty conversation offers example prompts; one click sends it", async () => {
    const page = await openPage();
    await signIn(page, unique("examples"));
    const examples = page.locator("#examples button");
    assert.ok((await examples.count()) >= 4);
    await shot(page, "empty-light");
    await page.getByRole("button", { name: /Ask before running a command/ }).click();
    await page.locator(".interaction", { hasText: "Run the test suite?" }).waitFor();
    assert.equal(await page.locator("#empty").isHidden(), true);
    await page.context().close();
  });

  it("a new conversation asks nothing the server lacks: no 404, no console error; the favicon is served", async () => {
    const page = await openPage();
    const problems = [];
    page.on("console", (message) => message.type() === "error" && problems.push(`console: ${message.text()}`));
    page.on(
      "response",
      (response) => response.status() >= 400 && problems.push(`${response.status()} ${response.url()}`),
    );
    await signIn(page, unique("quiet"));
    await page.locator("#new-conversation").click();
    await page.locator("#empty").waitFor();
    await send(page, "Hello there");
    await waitForBadge(page, "done");
    assert.deepEqual(problems, []);
    // The icon as built: named by its content's hash (scripts/build-page.mjs).
    const href = await page.locator('link[rel="icon"]').getAttribute("href");
    assert.match(href ?? "", /^\/assets\/favicon-[A-Z2-7]{8}\.svg$/);
    const icon = await fetch(`${server.base}${href}`);
    assert.equal(icon.status, 200);
    assert.match(icon.headers.get("content-type") ?? "", /^image\/svg\+xml/);
    await icon.arrayBuffer();
    await page.context().close();
  });

  it("signing in once serves every tab of the browser; signing out in one signs out all", async () => {
    const page = await openPage();
    await signIn(page, unique("once"));
    const second = await page.context().newPage();
    await second.goto(server.base);
    await second.locator("#connection[data-state=live]").waitFor();
    assert.equal(await second.locator("#signin").isHidden(), true);
    await second.getByRole("button", { name: "Sign out" }).click();
    await second.locator("#dev-user").waitFor();
    await page.locator("#signin-error", { hasText: "You signed out in another tab." }).waitFor();
    assert.equal(await page.locator("#app").isHidden(), true);
    assert.equal(await page.evaluate(() => localStorage.getItem("gw:token")), null);
    await page.context().close();
  });
});

describe("the transcript the page rebuilds from", () => {
  it("answers from the server with the asks, as the page shows them", async () => {
    const page = await openPage();
    await signIn(page, unique("api"));
    await send(page, "Run the tests [permission]");
    await page.getByRole("button", { name: "Deny" }).click();
    await waitForBadge(page, "done");
    const transcript = await api(`/v1/conversations/${await cidOf(page)}/messages`, await tokenOf(page));
    const ask = transcript.messages[1].parts.find((p) => p.type === "interaction");
    assert.equal(ask.status, "answered");
    assert.equal(ask.request.title, "Run the test suite?");
    assert.doesNotMatch(
      JSON.stringify(transcript),
      /"grant"\s*:\s*"deny"/,
      "what was answered is not in the transcript",
    );
    await page.context().close();
  });
});
