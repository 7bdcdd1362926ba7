// @ts-check
/** Building DOM. Text is always set as text: nothing here parses HTML. */

/**
 * @typedef {Record<string, string | number | boolean | null | undefined | ((event: any) => void)>} Props
 * `class` sets className, `text` the text content, `on<event>` a listener; false/null/undefined
 * leave an attribute out, true sets it empty.
 */

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props} [props]
 * @param {Array<Node | string | null | undefined | false>} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = String(value);
    else if (key === "text") node.textContent = String(value);
    else if (typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

/**
 * A `<time>` element: the time of day shown, the full date and time on hover.
 * @param {string | null} iso
 * @param {string} text
 */
export function timeElement(iso, text) {
  if (!iso || !text) return null;
  return el("time", { datetime: iso, title: new Date(iso).toLocaleString(), text });
}

/**
 * Keeps `parent`'s children in the order of `items`, creating, updating and removing by key.
 * `views` remembers each key's node and the item it was drawn from; an item that is the same
 * object as last time is not redrawn.
 * @template T
 * @template {{ node: Element, item: T }} V
 * @param {Element} parent
 * @param {Map<string, V>} views
 * @param {T[]} items
 * @param {(item: T) => string} keyOf
 * @param {(item: T) => V} create
 * @param {(view: V, item: T) => void} update
 */
export function reconcile(parent, views, items, keyOf, create, update) {
  const keep = new Set();
  /** @type {Element | null} */
  let previous = null;
  for (const item of items) {
    const key = keyOf(item);
    keep.add(key);
    let view = views.get(key);
    if (!view) {
      view = create(item);
      views.set(key, view);
    } else if (view.item !== item) {
      update(view, item);
      view.item = item;
    }
    /** @type {Element | null} */
    const expected = previous ? previous.nextElementSibling : parent.firstElementChild;
    if (expected !== view.node) {
      if (previous) previous.after(view.node);
      else parent.prepend(view.node);
    }
    previous = view.node;
  }
  for (const [key, view] of views) {
    if (!keep.has(key)) {
      view.node.remove();
      views.delete(key);
    }
  }
}
