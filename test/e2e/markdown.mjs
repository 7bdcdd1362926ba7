// Agent markdown as coding agents write it (issue 23: items 1, 2, 4, 5), through the normal path:
// the emulator's `[markdown]` answer streamed in token-sized deltas, then the same conversation
// opened from its transcript in dark mode and on a phone. Checked by role, label and text:
// headings, a table, a task list whose checkboxes are named, code blocks that take keyboard focus
// and scroll sideways, highlighting (a diff too), dead links shown as text, and the open/closed
// marker of reasoning and tool cards; axe-clean in every state.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  assertAccessible,
  assertNoSidewaysScroll,
  cidOf,
  lastTurn,
  openPage,
  send,
  shot,
  signIn,
  unique,
  waitForBadge,
} from "./harness.mjs";

const TASKS = [
  ["Reproduce the duplicated tool card", true],
  ["Write a failing test for the replay", true],
  ["Fix the dedupe key in ingest.ts", false],
  ["Update the protocol notes", false],
  ["the replay section", false],
];
const CODE_LABELS = ["ts code", "python code", "bash code", "json code", "diff code"];

/** The summary's marker (its ::before) as drawn: what it shows and how it is turned. */
const marker = (summary) =>
  summary.evaluate((node) => {
    const style = getComputedStyle(node, "::before");
    return {
      content: style.content,
      transform: style.transform,
      transition: style.transitionDuration,
      color: style.borderRightColor,
    };
  });

/** What every view of the answer must show, wherever it came from (the stream or the transcript). */
async function assertRendered(page, state) {
  const answer = lastTurn(page).locator(".agent .text").last();
  for (const name of ["What I found", "Plan", "The modules involved", "Code", "The change", "Links"]) {
    await answer.getByRole("heading", { level: 2, name }).waitFor();
  }
  const table = answer.getByRole("table");
  assert.deepEqual(
    await table.getByRole("columnheader").allTextContents(),
    ["Module", "What it does", "Lines", "Tested"],
    state,
  );
  await table.getByRole("cell", { name: "upstream-reader.ts" }).waitFor();
  // The table scrolls inside a named box that takes focus (narrow screens scroll it).
  assert.equal(await answer.getByRole("group", { name: "table" }).getAttribute("tabindex"), "0", state);
  // Every task checkbox is named by its item's own text (not its sub-items') and shows its state.
  const boxes = answer.getByRole("checkbox");
  assert.equal(await boxes.count(), TASKS.length, state);
  for (const [name, done] of TASKS) {
    const box = answer.getByRole("checkbox", { name, exact: true });
    assert.equal(await box.isChecked(), done, `${state}: ${name}`);
    assert.equal(await box.isDisabled(), true, `${state}: ${name} is not editable`);
  }
  // Code blocks are named by their language.
  assert.deepEqual(
    await answer.locator(".code-block pre").evaluateAll((pres) => pres.map((p) => p.getAttribute("aria-label"))),
    CODE_LABELS,
    state,
  );
  // Dead links are their text, not links; the live ones stay links.
  for (const text of ["click me", "an embedded page"]) {
    assert.equal(await answer.getByRole("link", { name: text }).count(), 0, `${state}: ${text} is no link`);
    assert.equal(await answer.locator("a", { hasText: text }).count(), 0, `${state}: ${text} has no <a>`);
  }
  assert.match(
    await answer.locator("p", { hasText: "Two links that lead nowhere" }).textContent(),
    /: click me and an embedded page\.$/,
    state,
  );
  assert.equal(
    await answer.getByRole("link", { name: "the SSE notes" }).getAttribute("href"),
    "https://example.com/docs/sse-protocol",
  );
  assert.equal(await answer.getByRole("link", { name: "https://example.com/gateway" }).count(), 1);
  assert.equal(
    await answer.getByRole("link", { name: "team@example.com" }).getAttribute("href"),
    "mailto:team@example.com",
  );
  // Highlighted, the diff too.
  await answer.getByRole("group", { name: "ts code" }).locator(".hljs-keyword").first().waitFor();
  const diff = answer.getByRole("group", { name: "diff code" });
  await diff.locator(".hljs-addition").first().waitFor();
  await diff.locator(".hljs-deletion").first().waitFor();
  await assertNoSidewaysScroll(page, state);
  return answer;
}

/**
 * Opens the reasoning and tool cards, checks their markers turned, and checks axe with them open
 * (and, with `closedToo`, closed first: an open card shows all a closed one does, and more).
 */
async function assertCards(page, state, { closedToo = false } = {}) {
  if (closedToo) await assertAccessible(page, `${state}, cards closed`);
  for (const card of ["details.reasoning", "details.tool"]) {
    const summary = lastTurn(page).locator(`${card} > summary`);
    const closed = await marker(summary);
    assert.notEqual(closed.content, "none", `${state}: ${card} has a marker`);
    await summary.click();
    assert.equal(await lastTurn(page).locator(card).getAttribute("open"), "", `${state}: ${card} opened`);
    // (It turns in a short transition: wait for it to move, 2 s at most.)
    await summary.evaluate(
      (node, before) =>
        new Promise((resolve) => {
          const until = performance.now() + 2000;
          const check = () =>
            getComputedStyle(node, "::before").transform !== before || performance.now() > until
              ? resolve(undefined)
              : requestAnimationFrame(check);
          check();
        }),
      closed.transform,
    );
    assert.notEqual(
      (await marker(summary)).transform,
      closed.transform,
      `${state}: ${card}'s marker turns when it opens`,
    );
  }
  await assertAccessible(page, `${state}, cards open`);
}

describe("agent markdown", () => {
  const user = unique("markdown");
  let cid = "";

  it("streams the emulator's markdown answer: headings, table, named task checkboxes, focusable scrolling code, highlighting, dead links as text, card markers; axe-clean", async () => {
    const page = await openPage();
    await signIn(page, user);
    await send(page, "Look into the duplicated tool card [markdown]");
    await waitForBadge(page, "done", 60_000);
    cid = await cidOf(page);
    const answer = await assertRendered(page, "streamed");

    // A keyboard user reaches the code and reads the end of its long line.
    const code = answer.getByRole("group", { name: "ts code" });
    const copy = answer
      .locator(".code-block", { has: page.getByRole("group", { name: "ts code" }) })
      .getByRole("button", { name: "Copy code" });
    await copy.focus();
    await page.keyboard.press("Tab");
    assert.equal(
      await code.evaluate((node) => node === document.activeElement),
      true,
      "Tab from Copy code reaches the code",
    );
    const sizes = await code.evaluate((node) => ({ scroll: node.scrollWidth, client: node.clientWidth }));
    assert.ok(sizes.scroll > sizes.client, `the long line overflows: ${JSON.stringify(sizes)}`);
    for (let i = 0; i < 5; i++) await page.keyboard.press("ArrowRight");
    await page.waitForFunction((node) => node.scrollLeft > 0, await code.elementHandle());
    await shot(page, "markdown-code-focused-light-wide");

    await lastTurn(page).locator("details.reasoning").scrollIntoViewIfNeeded();
    await shot(page, "markdown-cards-closed-light-wide");
    await assertCards(page, "light, wide", { closedToo: true });
    // The marker turns without motion for those who ask for none.
    const summary = lastTurn(page).locator("details.tool > summary");
    assert.notEqual((await marker(summary)).transition, "0s", "it turns smoothly by default");
    await page.emulateMedia({ reducedMotion: "reduce" });
    assert.equal((await marker(summary)).transition, "0s", "no motion when reduced motion is asked for");
    await answer.getByRole("heading", { name: "Plan" }).scrollIntoViewIfNeeded();
    await shot(page, "markdown-light-wide");
    await page.context().close();
  });

  for (const [colorScheme, size, width, height] of [
    ["dark", "wide", 1280, 800],
    ["light", "narrow", 390, 844],
    ["dark", "narrow", 390, 844],
  ]) {
    it(`the same answer from the transcript, ${colorScheme}, ${size}: axe-clean, no sideways scrolling, cards marked`, async () => {
      assert.ok(cid, "the streamed conversation exists");
      const page = await openPage({ width, height, colorScheme });
      await signIn(page, user, cid);
      const answer = await assertRendered(page, `${colorScheme}, ${size}`);
      const code = answer.getByRole("group", { name: "bash code" });
      assert.ok(
        await code.evaluate((node) => node.scrollWidth > node.clientWidth),
        "the long command scrolls inside its block",
      );
      await assertCards(page, `${colorScheme}, ${size}`);
      const closed = await marker(lastTurn(page).locator("details.reasoning > summary"));
      assert.notEqual(closed.color, "rgba(0, 0, 0, 0)", "the marker is drawn in a visible colour");
      await answer.getByRole("heading", { name: "Plan" }).scrollIntoViewIfNeeded();
      await shot(page, `markdown-tasks-${colorScheme}-${size}`);
      await code.scrollIntoViewIfNeeded();
      await shot(page, `markdown-code-${colorScheme}-${size}`);
      await lastTurn(page).locator("details.reasoning").scrollIntoViewIfNeeded();
      await shot(page, `markdown-cards-${colorScheme}-${size}`);
      await page.context().close();
    });
  }
});
