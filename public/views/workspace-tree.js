// @ts-check
/**
 * The workspace's file tree (controllers/workspace.js, a lazy chunk): the WAI-ARIA tree pattern
 * (https://www.w3.org/WAI/ARIA/apg/patterns/treeview/). One item takes the Tab stop (a roving
 * tabindex); the arrows walk the items shown, Right opens a folder and Left closes it (or goes to
 * its folder), Home and End go to the first and the last, Enter opens a file (or a folder). A
 * folder is listed when first opened (GET /v1/environment/files?path=), again at each refresh.
 * What each key does is lib/workspace.js's `treeKey`.
 */
import { sizeText, treeKey } from "../lib/workspace.js";

/** @typedef {import("../lib/wire").WorkspaceListing["entries"][number]} Entry */

/**
 * @param {{
 *   el: typeof import("./dom.js").el,
 *   list: (path: string) => Promise<import("../lib/wire").WorkspaceListing>,
 *   open: (entry: Entry) => void,
 *   failed: (err: unknown) => void,
 * }} deps  `open`: a file chosen (Enter or a click); `failed`: a listing refused (the panel says why)
 */
export function createTree({ el, list, open, failed }) {
  const root = el("ul", { role: "tree", class: "ws-tree", "aria-label": "Workspace files" });
  /** Each listed folder's entries, by its path ("." the root). @type {Map<string, Entry[]>} */
  const listed = new Map();
  /** @type {Set<string>} */
  const expanded = new Set();
  /** The item with the Tab stop. @type {string | null} */
  let current = null;
  /** The file shown in the viewer. @type {string | null} */
  let selected = null;
  let truncated = false;

  /** @param {string} path */
  async function load(path) {
    const answer = await list(path);
    listed.set(path, answer.entries);
    truncated ||= answer.truncated;
  }

  /**
   * An item and, for an open folder, its items after it: the tree is one flat list, each item's level,
   * set size and position stated (the pattern's flat form), so an item's content is its own name and size.
   * @param {Entry} entry @param {number} level @param {number} index @param {number} count @returns {HTMLLIElement[]}
   */
  function itemsOf(entry, level, index, count) {
    const dir = entry.kind === "dir";
    const open = dir && expanded.has(entry.path);
    const children = open ? (listed.get(entry.path) ?? []) : [];
    const li = el(
      "li",
      {
        role: "treeitem",
        class: `ws-item ws-${entry.kind}`,
        "aria-level": level,
        "aria-setsize": count,
        "aria-posinset": index + 1,
        "aria-expanded": dir ? String(open) : null,
        "aria-selected": dir ? null : String(entry.path === selected),
        tabindex: entry.path === current ? 0 : -1,
        "data-path": entry.path,
      },
      el(
        "span",
        { class: "ws-row" },
        el("span", { class: "ws-name", text: entry.name }),
        entry.kind === "file" ? " " : null,
        entry.kind === "file" ? el("span", { class: "ws-size", text: sizeText(entry.size) }) : null,
      ),
    );
    li.style.setProperty("--level", String(level - 1));
    return [li, ...children.flatMap((c, i) => itemsOf(c, level + 1, i, children.length))];
  }

  /** Draws the tree from what is listed, the Tab stop (and the focus, if the tree had it) kept on the same path, else the first. */
  function draw() {
    const hadFocus = root.contains(document.activeElement);
    const top = listed.get(".") ?? [];
    root.replaceChildren(...top.flatMap((e, i) => itemsOf(e, 1, i, top.length)));
    root.hidden = top.length === 0;
    const all = items();
    const target = all.find((li) => li.dataset.path === current) ?? all[0];
    if (!target) return;
    target.tabIndex = 0;
    current = target.dataset.path ?? null;
    if (hadFocus) target.focus();
  }

  /** @param {string} path */
  function findEntry(path) {
    for (const entries of listed.values()) for (const e of entries) if (e.path === path) return e;
    return null;
  }

  const items = () => /** @type {HTMLElement[]} */ ([...root.querySelectorAll('[role="treeitem"]')]);

  /** @param {string | null} path */
  function focusPath(path) {
    const target = items().find((li) => li.dataset.path === path) ?? items()[0];
    if (!target) return;
    for (const li of items()) li.tabIndex = li === target ? 0 : -1;
    current = target.dataset.path ?? null;
    target.focus();
  }

  /** Opens or closes a folder. @param {string} path */
  async function toggle(path) {
    if (expanded.has(path)) expanded.delete(path);
    else {
      try {
        if (!listed.has(path)) await load(path);
        expanded.add(path);
      } catch (err) {
        failed(err);
      }
    }
    draw();
  }

  /** @param {HTMLElement} li */
  function activate(li) {
    const entry = findEntry(li.dataset.path ?? "");
    if (!entry) return;
    if (entry.kind === "dir") toggle(entry.path);
    else open(entry);
  }

  root.addEventListener("keydown", (event) => {
    const all = items();
    const li = /** @type {HTMLElement | null} */ (
      /** @type {HTMLElement} */ (event.target).closest('[role="treeitem"]')
    );
    const index = li ? all.indexOf(li) : -1;
    if (!li || index < 0) return;
    const level = Number(li.getAttribute("aria-level"));
    let parent = index - 1;
    while (parent >= 0 && Number(all[parent]?.getAttribute("aria-level")) >= level) parent--;
    const action = treeKey(event.key, {
      index,
      count: all.length,
      parent,
      dir: li.hasAttribute("aria-expanded"),
      expanded: li.getAttribute("aria-expanded") === "true",
    });
    if (!action) return;
    event.preventDefault();
    current = li.dataset.path ?? null;
    if ("focus" in action) focusPath(all[action.focus]?.dataset.path ?? null);
    else if ("open" in action) activate(li);
    else toggle(current ?? "");
  });
  root.addEventListener("click", (event) => {
    const li = /** @type {HTMLElement | null} */ (
      /** @type {HTMLElement} */ (event.target).closest('[role="treeitem"]')
    );
    if (!li) return;
    event.stopPropagation();
    focusPath(li.dataset.path ?? null);
    activate(li);
  });

  return {
    node: root,
    /** Whether a listing had more entries than the gateway lists (1,000). */
    truncated: () => truncated,
    /** Lists the root and every open folder again (a folder gone is closed). Throws what the root's listing threw. */
    async refresh() {
      truncated = false;
      await load(".");
      await Promise.all(
        [...expanded].map((path) =>
          load(path).catch(() => {
            expanded.delete(path);
            listed.delete(path);
          }),
        ),
      );
      draw();
    },
    /** Marks the file shown in the viewer (null: none). @param {string | null} path */
    select(path) {
      selected = path;
      for (const li of items())
        if (li.hasAttribute("aria-selected")) li.setAttribute("aria-selected", String(li.dataset.path === path));
    },
    /** Whether the workspace's top folder is empty. */
    empty: () => (listed.get(".") ?? []).length === 0,
    /** Whether `path` is listed (in a folder the tree has read). @param {string} path */
    has: (path) => findEntry(path) !== null,
    focus: () => focusPath(current),
  };
}
