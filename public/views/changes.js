// @ts-check
/**
 * A turn's changed files as its tool calls say them (lib/changes.js): "Changed 3 files from the agent's tool
 * calls +12 −4" (what the workspace says is the workspace panel's: controllers/workspace.js), collapsed (a details element,
 * reached and opened by keyboard like the tool cards); open, each file's path, its lines added and
 * removed, and its diff, highlighted as highlight.js's `diff` through the page's one code-block
 * renderer (lib/markdown.js: sanitized, with Copy). What is not known is said, never counted: a
 * file written whole over unknown content shows what was written and "not counted".
 */
import { diffText } from "../lib/changes.js";
import { renderMarkdown } from "../lib/markdown.js";
import { el } from "./dom.js";

/** @typedef {import("../lib/changes.js").ChangedFile} ChangedFile */
/** @typedef {import("../lib/changes.js").FileChange} FileChange */

/**
 * Text as one fenced code block: the fence longer than any run of backticks in it.
 * @param {string} text
 * @param {string} lang
 */
export function fenced(text, lang) {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return renderMarkdown(`${fence}${lang}\n${text}\n${fence}`);
}

/**
 * "+12 −4" as shown, with the same in words for a screen reader; "not counted" when unknown.
 * @param {number | null} added
 * @param {number | null} removed
 */
function counts(added, removed) {
  if (added === null || removed === null) return el("span", { class: "change-count unknown", text: "not counted" });
  return el(
    "span",
    { class: "change-count" },
    el("span", { class: "sr-only", text: `${added} ${added === 1 ? "line" : "lines"} added, ${removed} removed` }),
    el("span", { class: "added", "aria-hidden": "true", text: `+${added}` }),
    el("span", { class: "removed", "aria-hidden": "true", text: `−${removed}` }),
  );
}

const ACTION = { created: "New file", edited: "Edited", written: "Written whole", deleted: "Deleted" };

/** @param {FileChange} change */
function changeView(change) {
  return el(
    "div",
    { class: "change" },
    el("p", { class: "change-note", text: change.note ?? ACTION[change.action] }),
    change.diff && change.diff.length > 0 ? fenced(diffText(change.diff), "diff") : null,
    !change.diff && change.content !== null ? fenced(change.content, "") : null,
  );
}

/** @param {ChangedFile} file */
function fileView(file) {
  return el(
    "li",
    { class: "changed-file" },
    el(
      "div",
      { class: "changed-file-head" },
      el("code", { class: "change-path", text: file.path }),
      counts(file.added, file.removed),
    ),
    ...file.changes.map(changeView),
  );
}

export function createChangesView() {
  const summary = el("summary", {});
  const list = el("ul", { class: "changed-files" });
  const node = el("details", { class: "changes", hidden: true }, summary, list);
  /** @type {ChangedFile[]} */
  let shown = [];
  return {
    node,
    /** @param {ChangedFile[]} files */
    update(files) {
      if (files === shown) return;
      shown = files;
      node.hidden = files.length === 0;
      const known = files.filter((f) => f.added !== null && f.removed !== null);
      const added = known.reduce((sum, f) => sum + /** @type {number} */ (f.added), 0);
      const removed = known.reduce((sum, f) => sum + /** @type {number} */ (f.removed), 0);
      const uncounted = files.length - known.length;
      summary.replaceChildren(
        ...[
          el("span", {
            class: "changes-title",
            text: `Changed ${files.length} ${files.length === 1 ? "file" : "files"}`,
          }),
          el("span", { class: "change-count unknown", text: "from the agent's tool calls" }),
          known.length > 0 ? counts(added, removed) : null,
          uncounted > 0 ? el("span", { class: "change-count unknown", text: `${uncounted} not counted` }) : null,
        ].filter((n) => n !== null),
      );
      // The open/closed state is the details element's own: redrawing the list keeps it.
      list.replaceChildren(...files.map(fileView));
    },
  };
}
