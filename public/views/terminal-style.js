// @ts-check
/**
 * The Terminal tab's style (public/terminal.css) and xterm's own, which the terminal's chunk
 * (controllers/terminal.js) imports as text (scripts/build-page.mjs, cssAsText) and adopts as
 * constructed stylesheets at its first showing: none of it is on the way to "live".
 */
import xtermCss from "@xterm/xterm/css/xterm.css";
import css from "../terminal.css";

/**
 * xterm draws with `<style>` elements of its own, which the page's policy refuses (no inline style):
 * each one it asks for is an empty `<template>` (never drawn) whose text goes to a constructed
 * stylesheet instead (the policy allows those, as for the workspace's style). The page itself makes
 * no `<style>` element. (A cell in 24-bit colour is drawn by xterm with a style attribute, which the
 * policy refuses: such text shows in the terminal's own colour, and the browser reports it.)
 */
let adopted = false;

export function adoptStyles() {
  if (adopted) return;
  adopted = true;
  const sheets = [xtermCss, css].map((text) => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(text);
    return sheet;
  });
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, ...sheets];
  const make = document.createElement.bind(document);
  /** @type {any} */ (document).createElement = (/** @type {string} */ tag, /** @type {any} */ options) => {
    if (String(tag).toLowerCase() !== "style") return make(tag, options);
    // A <template> in its place: never drawn, and no inline style for the policy to refuse.
    const node = make("template");
    const sheet = new CSSStyleSheet();
    let text = "";
    Object.defineProperty(node, "textContent", {
      get: () => text,
      set: (value) => {
        text = String(value ?? "");
        sheet.replaceSync(text);
      },
    });
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    return node;
  };
}
