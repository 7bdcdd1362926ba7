// @ts-check
/**
 * The workspace panel's and the attachments' style (public/workspace.css), which their chunks
 * (controllers/workspace.js, controllers/attachments.js) import as text (scripts/build-page.mjs,
 * cssAsText) and adopt, once, as a constructed stylesheet at their first use: none of it is in
 * style.css, on the way to "live".
 */
import css from "../workspace.css";

let adopted = false;

export function adoptStyle() {
  if (adopted) return;
  adopted = true;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(css);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}
