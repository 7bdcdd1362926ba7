// @ts-check
/**
 * The agent's markdown as sanitized DOM. Nothing the agent sends runs:
 * - raw HTML in the markdown is shown as text (escaped), never parsed as HTML;
 * - marked's output then goes through DOMPurify with an allow-list of the tags and attributes
 *   markdown produces (no script, no event handler, no style, no javascript: URL);
 * - images are shown as links, not loaded: an image URL can carry data out of the page;
 * - links open in a new tab with no opener and no referrer.
 * Code blocks get a language label, a copy button and syntax highlighting (highlight.js, loaded
 * the first time a code block in a known language appears; its HTML is sanitized too).
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

const ALLOWED_TAGS = ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td", "input", "span"];
const ALLOWED_ATTR = ["href", "title", "class", "align", "start", "type", "checked", "disabled"];

/** @param {string} text */
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const markdown = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ href, text }) => `<a href="${escapeHtml(href)}" class="image-link">${escapeHtml(`Image: ${text || href}`)}</a>`,
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

/** @typedef {{ highlight(code: string, options: { language: string, ignoreIllegals?: boolean }): { value: string }, getLanguage(name: string): unknown }} Highlighter */
/** @type {Highlighter | null} */
let highlighter = null;
/** @type {Promise<void> | null} */
let loading = null;

function loadHighlighter() {
  loading ??= import("@highlightjs/cdn-assets/es/highlight.min.js").then(
    (module) => {
      highlighter = module.default;
      // Code drawn while it loaded.
      for (const code of document.querySelectorAll("code[data-lang]:not(.hljs)")) highlight(/** @type {HTMLElement} */ (code));
    },
    () => {
      // No highlighting: the code still shows, as text.
    },
  );
}

/** @param {HTMLElement} code */
function highlight(code) {
  const lang = code.dataset.lang ?? "";
  if (!highlighter || !highlighter.getLanguage(lang)) return;
  const html = highlighter.highlight(code.textContent ?? "", { language: lang, ignoreIllegals: true }).value;
  code.replaceChildren(DOMPurify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true }));
  code.classList.add("hljs");
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
  for (const node of [...fragment.childNodes]) if (node.nodeType === Node.TEXT_NODE && !node.textContent?.trim()) node.remove();
  // Only the disabled checkboxes of task lists: no other input survives.
  for (const input of fragment.querySelectorAll('input:not([type="checkbox"][disabled])')) input.remove();
  for (const pre of fragment.querySelectorAll("pre")) codeBlock(/** @type {HTMLElement} */ (pre));
  return fragment;
}
