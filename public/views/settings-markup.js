// @ts-check
/**
 * The settings view's markup (controllers/settings.js): loaded with it at the view's first opening,
 * not with the page (its forms are nothing a page needs to go live: docs/chat-page.md "Fast on slow
 * links"). A key or an auth value is typed here, sent, and gone: no answer carries one. Static text
 * of this bundle only: nothing of a user's or the server's goes into it.
 */
const MARKUP = `
<div class="settings-head">
  <h2 id="settings-title">Settings</h2>
  <button id="settings-close" type="button" class="icon-button" aria-label="Close the settings">✕</button>
</div>
<p class="hint">What the agent runs with: your own model keys, your tools, your instructions. A key or an auth value is stored sealed and never shown again, here or anywhere.</p>

<section class="settings-section" aria-labelledby="keys-title">
  <h3 id="keys-title" tabindex="-1">Model keys</h3>
  <p id="keys-empty" class="hint"></p>
  <ul id="key-list" class="settings-list" aria-labelledby="keys-title"></ul>
  <form id="key-form" class="settings-form" aria-labelledby="key-form-title">
    <h4 id="key-form-title">Add a key, or replace one</h4>
    <label for="key-name">Name</label>
    <input id="key-name" required maxlength="64" autocomplete="off" spellcheck="false" aria-describedby="key-status">
    <label for="key-provider">Provider</label>
    <input id="key-provider" required maxlength="64" autocomplete="off" spellcheck="false" placeholder="anthropic, openai, zai…" aria-describedby="key-status">
    <label for="key-secret">Key</label>
    <input id="key-secret" type="password" required maxlength="4096" autocomplete="off" spellcheck="false" aria-describedby="key-status">
    <label for="key-endpoint">Endpoint (optional)</label>
    <input id="key-endpoint" inputmode="url" maxlength="2048" autocomplete="off" spellcheck="false" placeholder="https://…" aria-describedby="key-status">
    <div class="settings-submit">
      <button type="submit" class="primary">Save key</button>
      <p id="key-status" class="form-status" aria-live="polite"></p>
    </div>
  </form>
</section>

<section class="settings-section" aria-labelledby="servers-title">
  <h3 id="servers-title" tabindex="-1">MCP servers</h3>
  <p id="servers-empty" class="hint"></p>
  <ul id="server-list" class="settings-list" aria-labelledby="servers-title"></ul>
  <form id="server-form" class="settings-form" aria-labelledby="server-form-title">
    <h4 id="server-form-title">Add a server, or replace one</h4>
    <label for="server-name">Name</label>
    <input id="server-name" required maxlength="64" autocomplete="off" spellcheck="false" aria-describedby="server-status">
    <label for="server-url">URL</label>
    <input id="server-url" required inputmode="url" maxlength="2048" autocomplete="off" spellcheck="false" placeholder="https://…" aria-describedby="server-status">
    <label for="server-auth-header">Auth header (optional)</label>
    <input id="server-auth-header" maxlength="128" autocomplete="off" spellcheck="false" placeholder="Authorization" aria-describedby="server-status">
    <label for="server-auth-value">Auth value</label>
    <input id="server-auth-value" type="password" maxlength="4096" autocomplete="off" spellcheck="false" aria-describedby="server-status">
    <label class="settings-check"><input id="server-enabled" type="checkbox" checked> Enabled</label>
    <div class="settings-submit">
      <button type="submit" class="primary">Save server</button>
      <p id="server-status" class="form-status" aria-live="polite"></p>
    </div>
  </form>
</section>

<section class="settings-section" aria-labelledby="instructions-title">
  <h3 id="instructions-title">Standing instructions</h3>
  <form id="instructions-form" class="settings-form">
    <label for="instructions-text">Appended to the agent's system prompt at every turn (empty: none)</label>
    <textarea id="instructions-text" rows="5" maxlength="16384" aria-describedby="instructions-count instructions-status"></textarea>
    <p id="instructions-count" class="hint"></p>
    <div class="settings-submit">
      <button type="submit" class="primary">Save instructions</button>
      <p id="instructions-status" class="form-status" aria-live="polite"></p>
    </div>
  </form>
</section>

`;

/** Fills the (empty) settings dialog with its markup, once. @param {HTMLDialogElement} dialog */
export function fillSettings(dialog) {
  if (dialog.childElementCount > 0) return;
  dialog.innerHTML = MARKUP;
  dialog.setAttribute("aria-labelledby", "settings-title");
}
