// What the agent changed (issue 23): the emulator's `[edits]` agent writes a new file, edits
// another, fails an edit and writes over a third file with OpenCode's `write` and `edit` tools.
// Its turn lists the changed files, collapsed; opened, each file's diff with its additions and
// removals highlighted; the failed edit is not listed; the file written over unknown content says
// it is not counted and shows no diff. Axe-clean closed and open, light and dark, wide and narrow.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { staticImports } from "../page/imports.mjs";
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
    // After a reload the list is rebuilt from the transcript (/messages), the same files.
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

// Issue 23, item 6 (fast on slow links), the parts a browser shows: the page paints a notice before
// any module runs, and every module of the start comes from index.html's modulepreload list, none
// found only when its importer ran (which is one round trip per level of imports).
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

  it("fetches every module of the start through the preload list", async () => {
    const page = await openPage();
    await signIn(page, unique("preload"));
    const scripts = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .filter((e) => /\.(m?js)$/.test(new URL(e.name).pathname))
        .map((e) => ({
          path: new URL(e.name).pathname,
          start: e.startTime,
          end: /** @type {PerformanceResourceTiming} */ (e).responseEnd,
        })),
    );
    const preloaded = await page.$$eval('link[rel="modulepreload"]', (links) =>
      links.map((l) => new URL(l.href).pathname),
    );
    assert.ok(preloaded.length > 20, `${preloaded.length} modules preloaded`);
    const app = scripts.find((s) => s.path === "/app.js");
    assert.ok(app, "app.js was fetched");
    // None waited for its importer to run: each was requested before a module that imports it had
    // arrived (a module found by walking the imports can be asked for only once its importer is in;
    // a busy browser may still start a preload a moment after app.js arrived, so app.js alone is no
    // bound for the modules it does not import itself).
    const importMap = JSON.parse(
      /<script type="importmap">([\s\S]*?)<\/script>/.exec(readFileSync("public/index.html", "utf8"))?.[1] ?? "{}",
    ).imports;
    const importers = new Map();
    for (const path of ["/app.js", ...preloaded.filter((p) => !p.startsWith("/vendor/"))]) {
      const { relative, bare } = staticImports(readFileSync(`public${path}`, "utf8"));
      for (const imported of [
        ...relative.map((spec) => new URL(spec, `http://page${path}`).pathname),
        ...bare.map((spec) => importMap[spec]),
      ]) {
        importers.set(imported, [...(importers.get(imported) ?? []), path]);
      }
    }
    for (const path of preloaded) {
      const entry = scripts.find((s) => s.path === path);
      assert.ok(entry, `${path} was fetched`);
      const by = importers.get(path) ?? [];
      assert.ok(by.length > 0, `${path} is imported by a module of the start`);
      const first = Math.min(...by.map((importer) => scripts.find((s) => s.path === importer)?.end ?? Infinity));
      assert.ok(
        entry.start < first,
        `${path} requested at ${entry.start} ms, after its importer arrived (${first} ms; importers ${by.join(", ")})`,
      );
    }
    // And no module of the start was fetched that the list does not name (highlight.js comes on
    // demand; a classic script of <head>, theme.js, is no module and runs before the stylesheet).
    const classic = await page.$$eval("script[src]:not([type=module])", (tags) =>
      tags.map((t) => new URL(/** @type {HTMLScriptElement} */ (t).src).pathname),
    );
    assert.deepEqual(
      scripts.filter(
        (s) =>
          s.path !== "/app.js" &&
          !preloaded.includes(s.path) &&
          !classic.includes(s.path) &&
          !s.path.includes("highlight"),
      ),
      [],
    );
    await page.context().close();
  });
});
