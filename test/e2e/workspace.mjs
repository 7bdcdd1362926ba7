// The workspace in the user's hands (issue 40): the panel beside the chat (a file tree walked with the
// keyboard, a file shown highlighted, Download, a turn's real diff, Undo and Redo), on a phone a drawer
// that keeps the focus, and the composer's attachments (the file input, a paste, a drop), each sent
// with the turn. The emulator's file directives change its files: `[write:p:text]` and the like.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  assertAccessible,
  faults,
  lastTurn,
  openPage,
  send,
  shot,
  signIn,
  unique,
  variants,
  waitForBadge,
} from "./harness.mjs";

/** A signed-in page whose conversation ran `message` to its end. */
async function ranTurn(message, options) {
  const page = await openPage(options);
  await signIn(page, unique("ws"));
  await send(page, message);
  await waitForBadge(page, "done");
  return page;
}

const panel = (page) => page.locator("#workspace");
/** The tree's item of a path. */
const item = (page, path) => panel(page).locator(`[role="treeitem"][data-path="${path}"]`);
/** The path of the tree's item that has the focus. */
const focused = (page) =>
  page.evaluate(() => /** @type {HTMLElement} */ (document.activeElement)?.dataset.path ?? null);

describe("the workspace panel", () => {
  it("opens from the keyboard; the tree is walked with the arrows; Enter shows a file, highlighted; axe-clean", async () => {
    const page = await ranTurn("Take a note [write:notes.txt:hello]");
    const button = page.locator("#workspace-button");
    await button.focus();
    await page.keyboard.press("Enter");
    await panel(page).locator('[role="tree"]').waitFor();
    assert.equal(await button.getAttribute("aria-expanded"), "true");
    // The focus goes to the tree's first item (folders first): the one Tab stop of the tree.
    await page.waitForFunction(() => document.activeElement?.getAttribute("role") === "treeitem");
    assert.equal(await focused(page), "assets");
    assert.equal(await panel(page).locator('[role="treeitem"][tabindex="0"]').count(), 1);

    await page.keyboard.press("ArrowDown");
    assert.equal(await focused(page), "src");
    assert.equal(await item(page, "src").getAttribute("aria-expanded"), "false");
    await page.keyboard.press("ArrowRight");
    await item(page, "src").and(page.locator('[aria-expanded="true"]')).waitFor();
    await page.keyboard.press("ArrowRight");
    assert.equal(await focused(page), "src/http.ts");
    assert.equal(await item(page, "src/http.ts").getAttribute("aria-level"), "2");
    // Named by its name: getByRole finds it as a screen reader would.
    await panel(page)
      .getByRole("treeitem", { name: /^http\.ts \d+ B$/ })
      .waitFor();
    await page.keyboard.press("Enter");
    await panel(page).locator("#ws-file-title", { hasText: "src/http.ts" }).waitFor();
    await panel(page).locator(".ws-file-body code.hljs").waitFor();
    assert.match(await panel(page).locator(".ws-file-body code").innerText(), /\S/);
    assert.equal(await item(page, "src/http.ts").getAttribute("aria-selected"), "true");
    // Left goes to the folder, Left again closes it; End and Home go to the last and the first.
    await page.keyboard.press("ArrowLeft");
    assert.equal(await focused(page), "src");
    await page.keyboard.press("ArrowLeft");
    assert.equal(await item(page, "src").getAttribute("aria-expanded"), "false");
    assert.equal(await item(page, "src/http.ts").count(), 0);
    await page.keyboard.press("End");
    const names = await panel(page)
      .locator('[role="tree"] > [role="treeitem"]')
      .evaluateAll((n) => n.map((li) => li.getAttribute("data-path")));
    assert.equal(await focused(page), names.at(-1));
    assert.ok(names.includes("notes.txt"), names.join());
    await page.keyboard.press("Home");
    assert.equal(await focused(page), "assets");

    // The file the turn wrote, shown as its text.
    await item(page, "notes.txt").click();
    await panel(page).locator(".ws-file-body code", { hasText: "hello" }).waitFor();
    // A binary file says so, with its size.
    await item(page, "assets").click();
    await item(page, "assets/logo.png").click();
    await panel(page).locator(".ws-binary", { hasText: "binary, 300 B" }).waitFor();
    await assertAccessible(page, "the workspace panel open");
    await shot(page, "workspace-panel");

    // Left open, the page remembers it: a reload opens it again.
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    await panel(page).locator('[role="tree"]').waitFor();
    await page.context().close();
  });

  it("a branch from an earlier message shows its own files; switching versions switches the files", async () => {
    const page = await ranTurn("[write:notes.txt:one]");
    await send(page, "[write:notes.txt:two]");
    await waitForBadge(page, "done");
    await page.locator("#workspace-button").click();
    await item(page, "notes.txt").click();
    await panel(page).locator(".ws-file-body code", { hasText: "two" }).waitFor();

    // Edit the second message: a branch after the first turn, in a sandbox of its own, on the files as they were.
    const second = page.locator("li.turn").nth(1);
    await second.getByRole("button", { name: "Edit" }).click();
    await second.getByLabel("Edit your message").fill("[write:extra.txt:branch]");
    await page.keyboard.press("Enter");
    await waitForBadge(page, "done");
    await item(page, "extra.txt").waitFor();
    await item(page, "notes.txt").click();
    await panel(page).locator(".ws-file-body code", { hasText: "one" }).waitFor();

    // Back to the first version of that message: its files again, without the branch's.
    const picker = page.locator("li.turn").nth(1).getByRole("group", { name: "Versions of this message" });
    await picker.getByRole("button", { name: "Previous version" }).click();
    await item(page, "extra.txt").waitFor({ state: "detached" });
    await item(page, "notes.txt").click();
    await panel(page).locator(".ws-file-body code", { hasText: "two" }).waitFor();
    await page.context().close();
  });

  it("shows a turn's real diff; Undo takes the file away, Redo brings it back; both show in the conversation", async () => {
    const page = await ranTurn("Take a note [write:notes.txt:hello]");
    await page.locator("#workspace-button").click();
    const change = panel(page).locator(".ws-change", { hasText: "notes.txt" });
    await change.waitFor();
    assert.match(await panel(page).locator(".ws-source").innerText(), /From the workspace: 1 file changed/);
    assert.match(await change.locator(".ws-change-what").innerText(), /^Added$/);
    await change.locator("code.hljs .hljs-addition", { hasText: "+hello" }).waitFor();

    await item(page, "notes.txt").click();
    await panel(page).locator(".ws-file-body code", { hasText: "hello" }).waitFor();
    // Download: read with the user's token, saved from an object URL.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      panel(page).getByRole("button", { name: "Download", exact: true }).click(),
    ]);
    assert.equal(download.suggestedFilename(), "notes.txt");
    const chunks = [];
    for await (const chunk of await download.createReadStream()) chunks.push(chunk);
    assert.equal(Buffer.concat(chunks).toString(), "hello");
    await panel(page).locator(".ws-status", { hasText: "Downloaded notes.txt (5 B)." }).waitFor();
    // The whole workspace, a tarball.
    const [tarball] = await Promise.all([
      page.waitForEvent("download"),
      panel(page).getByRole("button", { name: "Download all" }).click(),
    ]);
    assert.equal(tarball.suggestedFilename(), "workspace.tar.gz");
    await panel(page).locator(".ws-status", { hasText: "Downloaded the workspace" }).waitFor();
    // A download the gateway refuses says so, and saves nothing.
    await page.route("**/v1/environment/files/download**", (route) =>
      route.fulfill({
        status: 502,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "upstream_error", message: "the Sandbox did not answer" } }),
      }),
    );
    let saved = 0;
    page.on("download", () => saved++);
    await panel(page).getByRole("button", { name: "Download all" }).click();
    await panel(page)
      .locator(".ws-status", { hasText: "The download of the workspace failed: the Sandbox did not answer" })
      .waitFor();
    assert.equal(saved, 0);
    await page.unroute("**/v1/environment/files/download**");

    const undo = panel(page).getByRole("button", { name: "Undo this turn's file changes" });
    const redo = panel(page).getByRole("button", { name: "Redo" });
    await page.waitForFunction(() => {
      const b = [...document.querySelectorAll("#workspace button")].find((n) => n.textContent?.startsWith("Undo"));
      return b && !b.hidden && !b.disabled;
    });
    assert.equal(await redo.isDisabled(), true, "nothing to redo before an undo");
    await undo.click();
    await panel(page).locator(".ws-result", { hasText: "Undone" }).waitFor();
    await item(page, "notes.txt").waitFor({ state: "detached" });
    await panel(page).locator(".ws-file-body", { hasText: "notes.txt is no longer in the workspace." }).waitFor();
    await lastTurn(page).locator(".file-line", { hasText: "Undone" }).waitFor();
    assert.equal(await undo.isDisabled(), true);

    await redo.click();
    await panel(page).locator(".ws-result", { hasText: "Redone" }).waitFor();
    await item(page, "notes.txt").waitFor();
    await panel(page).locator(".ws-file-body code", { hasText: "hello" }).waitFor();
    await lastTurn(page).locator(".file-line", { hasText: "Redone" }).waitFor();
    // A reload shows both in the conversation (the turn's `restore` parts).
    await page.reload();
    await page.locator("#connection[data-state=live]").waitFor();
    assert.equal(
      await lastTurn(page)
        .locator(".file-line", { hasText: /Undone|Redone/ })
        .count(),
      2,
    );
    await page.context().close();
  });

  it("a restore answered without an outcome offers Try again, with the same operation; a run holds Undo", async () => {
    const page = await ranTurn("Take a note [write:notes.txt:hello]");
    await page.locator("#workspace-button").click();
    const undo = panel(page).getByRole("button", { name: "Undo this turn's file changes" });
    await page.waitForFunction(() => {
      const b = [...document.querySelectorAll("#workspace button")].find((n) => n.textContent?.startsWith("Undo"));
      return b && !b.hidden && !b.disabled;
    });
    await variants({ restore: "no-outcome" });
    const sent = [];
    page.on("request", (r) => r.url().endsWith("/undo") && sent.push(JSON.parse(r.postData() ?? "{}").operationId));
    await undo.click();
    await panel(page).locator(".ws-result", { hasText: "Whether it was done is not known" }).waitFor();
    await variants({});
    await panel(page).getByRole("button", { name: "Try again" }).click();
    await panel(page).locator(".ws-result", { hasText: "Undone" }).waitFor();
    assert.equal(sent.length, 2);
    assert.equal(sent[0], sent[1], "the retry is the same operation");

    // While a turn runs, Undo and Redo wait.
    await send(page, "Hold on [hold]");
    await panel(page).locator(".ws-undo-note", { hasText: "wait until the running turn ends" }).waitFor();
    // Escape in the panel closes it, focus back on Files; it does not stop the running turn (the page's Escape).
    const cancels = [];
    page.on("request", (r) => r.url().endsWith("/cancel") && cancels.push(r.url()));
    await item(page, "README.md").focus();
    await page.keyboard.press("Escape");
    await panel(page).waitFor({ state: "hidden" });
    assert.equal(await page.evaluate(() => document.activeElement?.id), "workspace-button");
    // A request made after the key: the browser reports requests in order, so a Stop would be seen first.
    const after = page.waitForRequest((r) => r.url().endsWith("/healthz"));
    await page.evaluate(() => fetch("/healthz"));
    await after;
    assert.deepEqual(cancels, []);
    await page.context().close();
  });

  it("a turn without a checkpoint: its changes as its tool calls say, labelled so, and no Undo", async () => {
    await faults({ snapshotFails: 20 });
    try {
      const page = await ranTurn("Take a note [write:notes.txt:hello]");
      await page.locator("#workspace-button").click();
      await panel(page).locator(".ws-source", { hasText: "From the agent's tool calls" }).waitFor();
      // Today's view of the tool calls (lib/changes.js), as the transcript shows it.
      await panel(page).locator("details.changes .change-count", { hasText: "from the agent's tool calls" }).waitFor();
      await panel(page).locator(".ws-undo-note", { hasText: "This turn cannot be undone" }).waitFor();
      assert.equal(await panel(page).getByRole("button", { name: "Undo this turn's file changes" }).isVisible(), false);
      assert.equal(await panel(page).getByRole("button", { name: "Redo" }).isVisible(), false);
      await page.context().close();
    } finally {
      await faults({});
    }
  });

  it("says the environment has no workspace files when the files routes are missing", async () => {
    const page = await ranTurn("Hello");
    await variants({ workspace: "missing" });
    try {
      await page.locator("#workspace-button").click();
      await panel(page).locator(".ws-note", { hasText: "no workspace files" }).waitFor();
      assert.equal(await panel(page).locator('[role="tree"]').isVisible(), false);
      assert.equal(await panel(page).getByRole("button", { name: "Download all" }).isVisible(), false);
    } finally {
      await variants({});
    }
    await page.context().close();
  });

  it("on a phone, a drawer over the chat: it keeps the focus, Escape or its close button closes it; axe-clean", async () => {
    const page = await ranTurn("Take a note [write:notes.txt:hello]", { width: 390, height: 800, phone: true });
    const button = page.locator("#workspace-button");
    await button.click();
    await panel(page).locator('[role="tree"]').waitFor();
    assert.equal(await panel(page).getAttribute("role"), "dialog");
    assert.equal(await panel(page).getAttribute("aria-modal"), "true");
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute("aria-label")),
      "Close the workspace panel",
    );
    const box = await panel(page).boundingBox();
    assert.ok(box && box.width <= 390 && box.x >= 0, JSON.stringify(box));
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Tab");
      assert.ok(
        await page.evaluate(() => document.getElementById("workspace")?.contains(document.activeElement)),
        `Tab ${i}`,
      );
    }
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Shift+Tab");
      assert.ok(
        await page.evaluate(() => document.getElementById("workspace")?.contains(document.activeElement)),
        `Shift+Tab ${i}`,
      );
    }
    await assertAccessible(page, "the workspace drawer");
    await shot(page, "workspace-drawer");
    await page.keyboard.press("Escape");
    assert.equal(await panel(page).isHidden(), true, "Escape closes the drawer");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "workspace-button");
    await button.click();
    await panel(page).locator('[role="tree"]').waitFor();
    await panel(page).getByRole("button", { name: "Close the workspace panel" }).click();
    assert.equal(await panel(page).isHidden(), true);
    assert.equal(await button.getAttribute("aria-expanded"), "false");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "workspace-button");
    await page.context().close();
  });
});

describe("attachments in the composer", () => {
  it("on a new conversation, before its first message: by the file input, a paste and a drop, each a chip, sent with the turn", async () => {
    const page = await openPage();
    await signIn(page, unique("attach"));

    // The file input, as the file chooser fills it.
    const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.locator("#attach").click()]);
    await chooser.setFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
    const chip = (name) => page.locator(".attachments .chip", { hasText: name });
    await chip("notes.txt").waitFor();
    assert.match(await chip("notes.txt").innerText(), /5 B/);
    // A paste of an image, and a drop of a file, as a browser dispatches them (a DataTransfer of files).
    await page.evaluate(async () => {
      const canvas = document.createElement("canvas");
      canvas.width = canvas.height = 8;
      const png = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
      const pasted = new DataTransfer();
      pasted.items.add(new File([png], "shot.png", { type: "image/png" }));
      document
        .getElementById("composer-input")
        ?.dispatchEvent(new ClipboardEvent("paste", { clipboardData: pasted, bubbles: true, cancelable: true }));
    });
    await chip("shot.png").locator("canvas").waitFor();
    await page.evaluate(() => {
      const dropped = new DataTransfer();
      dropped.items.add(new File(["a,b\n1,2\n"], "table.csv", { type: "text/csv" }));
      const at = document.getElementById("composer-input");
      at?.dispatchEvent(new DragEvent("dragover", { dataTransfer: dropped, bubbles: true, cancelable: true }));
      at?.dispatchEvent(new DragEvent("drop", { dataTransfer: dropped, bubbles: true, cancelable: true }));
    });
    await chip("table.csv").waitFor();
    // Removed before sending: not sent.
    await page.getByRole("button", { name: "Remove table.csv" }).click();
    assert.equal(await chip("table.csv").count(), 0);
    await page.waitForFunction(() => [...document.querySelectorAll(".chip-state")].every((s) => !s.textContent));
    await assertAccessible(page, "attachments in the composer");
    await shot(page, "attachments");

    await send(page, "What did I attach?");
    await waitForBadge(page, "done");
    const answer = (await lastTurn(page).locator(".agent .text").allTextContents()).join("\n");
    assert.match(answer, /Attached: uploads\/\S+-notes\.txt, text\/plain/);
    assert.match(answer, /Attached: uploads\/\S+-shot\.png, image\/png/);
    assert.doesNotMatch(answer, /table\.csv/);
    assert.equal(await page.locator(".attachments .chip").count(), 0, "the sent files leave the composer");
    await page.context().close();
  });

  it("a refused file says why on its chip (too large)", async () => {
    const page = await ranTurn("Hello");
    const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.locator("#attach").click()]);
    await chooser.setFiles({
      name: "big.bin",
      mimeType: "application/octet-stream",
      buffer: Buffer.alloc(10 * 1024 * 1024 + 1),
    });
    const chip = page.locator(".attachments .chip.refused", { hasText: "big.bin" });
    await chip.waitFor({ timeout: 30_000 });
    assert.match(await chip.locator(".chip-state").innerText(), /^not attached: /);
    await page.context().close();
  });
});
