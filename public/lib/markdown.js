// @ts-check
/**
 * The agent's markdown as sanitized DOM. Nothing the agent sends runs:
 * - raw HTML in the markdown is shown as text (escaped), never parsed as HTML;
 * - marked's output then goes through DOMPurify with an allow-list of the tags and attributes
 *   markdown produces (no script, no event handler, no style, no javascript: URL);
 * - images are shown as links, not loaded: an image URL can carry data out of the page;
 * - links open in a new tab with no opener and no referrer; a link that is not an absolute http:,
 *   https: or mailto: URL (javascript:, data:, a relative path that would open the gateway's own
 *   origin) leads nowhere and is shown as its text.
 * What it draws is accessible: a task list's checkboxes are disabled and named by their item's
 * text; code blocks and tables, which scroll sideways, take keyboard focus and are named ("ts
 * code", "table"), so a keyboard user can scroll to the end of a long line.
 * Code blocks get a language label, a copy button and syntax highlighting (highlight.js, loaded
 * the first time a code block in a known language appears; its HTML is sanitized too).
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

const ALLOWED_TAGS = [
  "p",
  "br",
  "hr",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "ul",
  "ol",
  "li",
  "blockquote",
  "pre",
  "code",
  "em",
  "strong",
  "del",
  "a",
  "table",
  "thead",
  "tbody",
  "tr",
  "th",
  "td",
  "input",
  "span",
];
const ALLOWED_ATTR = ["href", "title", "class", "align", "start", "type", "checked", "disabled"];

/** @param {string} text */
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const markdown = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ href, text }) =>
      `<a href="${escapeHtml(href)}" class="image-link">${escapeHtml(`Image: ${text || href}`)}</a>`,
  },
});

/** @typedef {{ highlight(code: string, options: { language: string, ignoreIllegals?: boolean }): { value: string }, getLanguage(name: string): unknown }} Highlighter */
/** @type {Highlighter | null} */
let highlighter = null;
/** @type {Promise<void> | null} */
// biome-ignore lint/correctness/noUnusedVariables: read by `??=`: the library is imported once
let loading = null;

function loadHighlighter() {
  loading ??= import("@highlightjs/cdn-assets/es/highlight.min.js").then(
    (module) => {
      highlighter = module.default;
      // Code drawn while it loaded.
      for (const code of document.querySelectorAll("code[data-lang]:not(.hljs)"))
        highlight(/** @type {HTMLElement} */ (code));
    },
    () => {
      // No highlighting: the code still shows, as text.
    },
  );
}

/** @param {HTMLElement} code */
function highlight(code) {
  const lang = code.dataset.lang ?? "";
  if (!highlighter?.getLanguage(lang)) return;
  const html = highlighter.highlight(code.textContent ?? "", { language: lang, ignoreIllegals: true }).value;
  code.replaceChildren(
    DOMPurify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true }),
  );
  code.classList.add("hljs");
}

const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/**
 * Whether a link's target leads somewhere a chat answer may send the reader: an absolute http:,
 * https: or mailto: URL. `href` is the attribute's value as the browser reads it (entities
 * decoded); the URL parser drops the tabs and newlines a `java\nscript:` hides behind.
 * (Exported for its tests in test/page, which import it by a path tools do not follow.)
 * @public
 * @param {string | null} href
 */
export function isLinkable(href) {
  if (!href) return false;
  try {
    return LINK_PROTOCOLS.has(new URL(href).protocol);
  } catch {
    return false;
  }
}

/**
 * A task item's own words, for its checkbox's name: its text without its sub-list.
 * @param {Element} item
 */
function taskName(item) {
  const own = /** @type {Element} */ (item.cloneNode(true));
  for (const nested of own.querySelectorAll("ul, ol, input")) nested.remove();
  return (own.textContent ?? "").replace(/\s+/g, " ").trim();
}

/**
 * A region that may scroll sideways: focusable, so the keyboard can scroll it, and named.
 * @param {HTMLElement} node
 * @param {string} name
 */
function scrollable(node, name) {
  node.tabIndex = 0;
  node.setAttribute("role", "group");
  node.setAttribute("aria-label", name);
}

/** @param {HTMLElement} pre */
function codeBlock(pre) {
  const code = pre.querySelector("code");
  const lang = /language-([\w+#.-]+)/.exec(code?.className ?? "")?.[1] ?? "";
  const wrapper = document.createElement("div");
  wrapper.className = "code-block";
  const header = document.createElement("div");
  header.className = "code-header";
  const label = document.createElement("span");
  label.className = "code-lang";
  label.textContent = lang || "text";
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "copy-button";
  copy.dataset.action = "copy-code";
  copy.textContent = "Copy code";
  header.append(label, copy);
  pre.replaceWith(wrapper);
  wrapper.append(header, pre);
  scrollable(pre, lang ? `${lang} code` : "code");
  if (code && lang) {
    code.dataset.lang = lang;
    if (highlighter) highlight(code);
    else loadHighlighter();
  }
}

/**
 * Markdown as a fragment of safe DOM.
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function renderMarkdown(text) {
  const html = /** @type {string} */ (markdown.parse(text, { async: false }));
  const fragment = DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, RETURN_DOM_FRAGMENT: true });
  // Whitespace between blocks is not content (the text shown equals the text written).
  for (const node of [...fragment.childNodes])
    if (node.nodeType === Node.TEXT_NODE && !node.textContent?.trim()) node.remove();
  // Only the disabled checkboxes of task lists: no other input survives.
  for (const input of fragment.querySelectorAll('input:not([type="checkbox"][disabled])')) input.remove();
  for (const input of fragment.querySelectorAll("input")) {
    const item = input.closest("li");
    input.setAttribute("aria-label", (item && taskName(item)) || "task");
  }
  for (const link of fragment.querySelectorAll("a")) {
    // A link to nowhere is its text; the others open in a new tab, with no opener and no referrer.
    if (!isLinkable(link.getAttribute("href"))) link.replaceWith(...link.childNodes);
    else {
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer nofollow");
    }
  }
  for (const pre of fragment.querySelectorAll("pre")) codeBlock(/** @type {HTMLElement} */ (pre));
  for (const table of fragment.querySelectorAll("table")) {
    const wrapper = document.createElement("div");
    wrapper.className = "table-scroll";
    table.replaceWith(wrapper);
    wrapper.append(table);
    scrollable(wrapper, "table");
  }
  return fragment;
}
