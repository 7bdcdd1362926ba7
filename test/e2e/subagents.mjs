// See the subagents (issue 39): the emulator's `[subagents]` agent starts two child tasks, the
// second nested under the first; both run through its first step (`[hold]` holds them there),
// then the nested one fails and the first completes. The turn shows them nested under it, each
// with its state in words, its runner, model and usage (the failed one's usage unknown, never
// zero), in a disclosure the keyboard opens and closes; the same after a reload; axe-clean.
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
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Lets the run held by `[hold]` go on, once it is held (docs/emulator.md, the control routes). */
async function release(page) {
  const token = await tokenOf(page);
  const cid = await cidOf(page);
  let executionId;
  for (let i = 0; i < 400 && !executionId; i++) {
    const { messages = [] } = await api(`/v1/conversations/${cid}/messages`, token);
    executionId = messages.find((m) => m.role === "assistant")?.executionId;
    if (!executionId) await sleep(50);
  }
  assert.ok(executionId, "the turn's run");
  for (let i = 0; i < 400; i++) {
    const hold = await (await fetch(`${server.base}/_emulator/executions/${executionId}/hold`)).json();
    if (hold.held) break;
    await sleep(50);
  }
  const res = await fetch(`${server.base}/_emulator/executions/${executionId}/release`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(res.status, 200, await res.text());
}

describe("the subagents of a turn", () => {
  it("are shown nested under the turn, running then done and failed, with their usage; keyboard, reload and axe", async () => {
    const page = await openPage();
    await signIn(page, unique("subagents"));
    await send(page, "Look around [subagents] [hold]");
    const turn = lastTurn(page);
    const group = turn.locator("details.subagents");
    const summary = group.locator("> summary");
    // Each child task's item, by its id (the emulator's `<execution>:child-explore`, `…:child-tests`).
    const explore = group.locator('li.subagent[data-child$=":child-explore"]');
    const tests = group.locator('li.subagent[data-child$=":child-tests"]');

    // Held after the agent's first step: both run, the second nested under the first.
    await summary.filter({ hasText: "Subagents (2): 2 running" }).waitFor({ timeout: 20_000 });
    assert.equal(await group.getAttribute("open"), "", "open while they run");
    assert.equal(await explore.locator("> .subagent-line .subagent-status").textContent(), "running");
    assert.equal(
      await explore.locator("> .subagent-line .subagent-title").textContent(),
      "Explore the repository's layout",
    );
    assert.equal(await explore.locator("li.subagent").count(), 1, "the second is nested under the first");
    assert.equal(await explore.locator('li.subagent[data-child$=":child-tests"]').count(), 1);
    assert.equal(await tests.locator(".subagent-title").textContent(), "Run the test suite");
    assert.equal(await tests.locator(".subagent-status").textContent(), "running");
    await assertAccessible(page, "subagents running");

    await release(page);
    await waitForBadge(page, "done");
    await summary.filter({ hasText: "Subagents (2): 1 done, 1 failed" }).waitFor();
    assert.equal(await explore.locator("> .subagent-line .subagent-status").textContent(), "done");
    assert.equal(
      await explore.locator("> .subagent-facts").textContent(),
      "explore · zai/glm-5.2 · 2,400 in · 310 out · $0.0017 · 7 s · ended: stop",
    );
    assert.equal(await tests.locator(".subagent-status").textContent(), "failed");
    // No model and no usage reported: the usage is unknown, never zero.
    assert.equal(
      await tests.locator(".subagent-facts").textContent(),
      "general · usage unknown · 3 s · ended: tool_error",
    );
    await assertAccessible(page, "subagents ended");
    await shot(page, "subagents-ended");

    // Keyboard: the summary takes focus; Enter closes and opens it.
    await summary.focus();
    await page.keyboard.press("Enter");
    assert.equal(await group.getAttribute("open"), null);
    assert.equal(await explore.isVisible(), false);
    await page.keyboard.press("Enter");
    assert.equal(await group.getAttribute("open"), "");

    // A reload rebuilds the same from the transcript.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await lastTurn(page)
      .locator("details.subagents > summary", { hasText: "Subagents (2): 1 done, 1 failed" })
      .waitFor();
    assert.equal(
      await lastTurn(page).locator("li.subagent li.subagent .subagent-title").textContent(),
      "Run the test suite",
    );
    await page.context().close();
  });
});
