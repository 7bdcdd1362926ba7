// @ts-check
/**
 * The settings view (docs/chat-page.md, "Settings"), loaded at its first opening (app.js): a modal
 * <dialog> opened from the sidebar's Settings button (the focus moves in, Escape or Close closes it and gives the focus back; a
 * full-screen sheet on a phone) with the user's model keys, MCP servers and standing instructions
 * (docs/api.md#bring-your-own-key, #mcp-servers, #standing-instructions), read each time it opens.
 * What each form sends and says is lib/settings.js's; the lists are views/settings.js's.
 *
 * Secrets: a key or an auth value is typed into a password field, sent, and emptied once the
 * gateway stored it (a refusal keeps it, to send again; closing the view empties it). The page
 * stores neither anywhere, and no answer carries one. A refusal is shown beside its form (a live
 * region), the fields it names marked invalid, everything typed kept.
 */
import {
  credentialBody,
  INSTRUCTIONS_MAX,
  instructionsCount,
  instructionsSavedText,
  mcpServerBody,
  refusalOf,
  savedText,
  toggleBody,
} from "../lib/settings.js";
import { settingsViews } from "../views/settings.js";
import { fillSettings } from "../views/settings-markup.js";

/** @typedef {import("../lib/wire").CredentialView} CredentialView */
/** @typedef {import("../lib/wire").McpServerView} McpServerView */

/** @param {unknown} err */
const why = (err) => (err instanceof Error ? err.message : String(err));

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   ui: { settings: HTMLDialogElement },
 *   changed: () => void,
 *   dom: import("../views/settings.js").PageDom,
 * }} deps  `changed`: the view closed (the agent picker reads the user's keys and servers again);
 *   `dom`: the page's DOM helpers (this module shares none with the page's bundle: app.js)
 */
export function createSettings({ api, ui, changed, dom }) {
  const { renderCredentials, renderServers } = settingsViews(dom);
  const dialog = ui.settings;
  fillSettings(dialog);
  /** @template {HTMLElement} T @param {string} id @returns {T} */
  const $ = (id) => /** @type {T} */ (/** @type {unknown} */ (dialog.querySelector(`#${id}`)));
  const close = $("settings-close");
  const input = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id));
  const keys = {
    title: $("keys-title"),
    empty: $("keys-empty"),
    list: $("key-list"),
    form: /** @type {HTMLFormElement} */ ($("key-form")),
    status: $("key-status"),
    fields: {
      name: input("key-name"),
      provider: input("key-provider"),
      key: input("key-secret"),
      baseUrl: input("key-endpoint"),
    },
  };
  const servers = {
    title: $("servers-title"),
    empty: $("servers-empty"),
    list: $("server-list"),
    form: /** @type {HTMLFormElement} */ ($("server-form")),
    status: $("server-status"),
    fields: {
      name: input("server-name"),
      url: input("server-url"),
      authHeader: input("server-auth-header"),
      authValue: input("server-auth-value"),
      enabled: input("server-enabled"),
    },
  };
  const text = /** @type {HTMLTextAreaElement} */ ($("instructions-text"));
  const instructions = {
    form: /** @type {HTMLFormElement} */ ($("instructions-form")),
    text,
    count: $("instructions-count"),
    status: $("instructions-status"),
    fields: { text },
  };

  /** @type {CredentialView[]} */
  let credentialList = [];
  /** @type {McpServerView[]} */
  let serverList = [];
  /** The row whose Delete is being asked for. @type {{ keys: string | null, servers: string | null }} */
  const confirming = { keys: null, servers: null };
  /** @type {Element | null} */
  let returnFocus = null;

  /**
   * What a form says, and which of its fields a refusal named (marked invalid).
   * @param {{ status: HTMLElement, fields?: Record<string, HTMLElement> }} section
   * @param {string} text @param {"ok" | "error" | ""} [kind] @param {string[]} [invalid]
   */
  function say(section, text, kind = "", invalid = []) {
    section.status.textContent = text;
    section.status.className = `form-status${kind ? ` ${kind}` : ""}`;
    for (const [name, field] of Object.entries(section.fields ?? {}))
      if (invalid.includes(name)) field.setAttribute("aria-invalid", "true");
      else field.removeAttribute("aria-invalid");
  }

  /** @param {{ status: HTMLElement, fields?: Record<string, HTMLElement> }} section @param {unknown} err */
  function refused(section, err) {
    const { message, fields } = refusalOf(err);
    say(section, message, "error", fields);
  }

  function drawKeys() {
    keys.empty.textContent = credentialList.length ? "" : "No keys yet: turns run with the deployment's own.";
    keys.empty.hidden = credentialList.length > 0;
    renderCredentials(keys.list, credentialList, {
      confirming: confirming.keys,
      ask: (name) => ask("keys", name),
      remove: (name) => remove("keys", name),
      replace: (c) => {
        keys.fields.name.value = c.name;
        keys.fields.provider.value = c.provider;
        keys.fields.baseUrl.value = c.baseUrl ?? "";
        keys.fields.key.value = "";
        say(keys, `Type the new key of “${c.name}”.`);
        keys.fields.key.focus();
      },
    });
  }

  function drawServers() {
    servers.empty.textContent = serverList.length ? "" : "No MCP servers yet.";
    servers.empty.hidden = serverList.length > 0;
    renderServers(servers.list, serverList, {
      confirming: confirming.servers,
      ask: (name) => ask("servers", name),
      remove: (name) => remove("servers", name),
      edit: (s) => {
        fillServer(s, s.enabled);
        say(servers, s.authHeader ? `Type its ${s.authHeader} value again to keep its auth.` : "");
        servers.fields.url.focus();
      },
      toggle: (s) => toggle(s),
    });
  }

  /** Puts a server in the form (never its auth value: the page does not have it). @param {McpServerView} s @param {boolean} enabled */
  function fillServer(s, enabled) {
    servers.fields.name.value = s.name;
    servers.fields.url.value = s.url;
    servers.fields.authHeader.value = s.authHeader ?? "";
    servers.fields.authValue.value = "";
    servers.fields.enabled.checked = enabled;
  }

  /**
   * Turns a server on or off at once: the body names no auth, so the gateway keeps the stored one.
   * @param {McpServerView} s
   */
  async function toggle(s) {
    const enabled = !s.enabled;
    try {
      await api.putMcpServer(s.name, toggleBody(s, enabled));
      say(servers, `${enabled ? "Enabled" : "Disabled"} “${s.name}”.`, "ok");
    } catch (err) {
      refused(servers, err);
    }
    await loadServers();
    // The row was drawn again: the focus stays on its button.
    /** @type {HTMLElement | null} */ (
      servers.list.querySelector(`li[data-name="${CSS.escape(s.name)}"] [data-focus="toggle"]`)
    )?.focus();
  }

  /** @param {"keys" | "servers"} which @param {string | null} name */
  function ask(which, name) {
    const before = confirming[which];
    confirming[which] = name;
    const section = which === "keys" ? keys : servers;
    if (which === "keys") drawKeys();
    else drawServers();
    const target = name ?? before;
    if (target === null) return;
    /** @type {HTMLElement | null} */ (
      section.list.querySelector(
        `li[data-name="${CSS.escape(target)}"] [data-focus="${name === null ? "delete" : "yes"}"]`,
      )
    )?.focus();
  }

  /** @param {"keys" | "servers"} which @param {string} name */
  async function remove(which, name) {
    confirming[which] = null;
    const section = which === "keys" ? keys : servers;
    try {
      if (which === "keys") await api.deleteCredential(name);
      else await api.deleteMcpServer(name);
      say(section, `Deleted “${name}”.`, "ok");
    } catch (err) {
      refused(section, err);
    }
    await (which === "keys" ? loadKeys() : loadServers());
    section.title.focus();
  }

  async function loadKeys() {
    try {
      credentialList = await api.credentials();
    } catch (err) {
      say(keys, `Could not read your keys (${why(err)}).`, "error");
    }
    drawKeys();
  }

  async function loadServers() {
    try {
      serverList = await api.mcpServers();
    } catch (err) {
      say(servers, `Could not read your MCP servers (${why(err)}).`, "error");
    }
    drawServers();
  }

  async function loadInstructions() {
    try {
      const { text } = await api.instructions();
      instructions.text.value = text;
    } catch (err) {
      say(instructions, `Could not read your instructions (${why(err)}).`, "error");
    }
    countInstructions();
  }

  function countInstructions() {
    instructions.count.textContent = instructionsCount(instructions.text.value);
  }

  /** Empties every field that held a secret. */
  function forgetSecrets() {
    keys.fields.key.value = "";
    servers.fields.authValue.value = "";
  }

  /**
   * Runs a form's request once at a time (its submit button disabled meanwhile).
   * @param {HTMLFormElement} form @param {() => Promise<void>} job
   */
  async function submitting(form, job) {
    const button = /** @type {HTMLButtonElement} */ (form.querySelector("button[type=submit]"));
    if (button.disabled) return;
    button.disabled = true;
    try {
      await job();
    } finally {
      button.disabled = false;
    }
  }

  keys.form.addEventListener("submit", (event) => {
    event.preventDefault();
    submitting(keys.form, async () => {
      const f = keys.fields;
      say(keys, "Saving…");
      try {
        const saved = await api.putCredential(
          f.name.value.trim(),
          credentialBody({ provider: f.provider.value, key: f.key.value, baseUrl: f.baseUrl.value }),
        );
        keys.form.reset(); // the key first of all: the gateway has it now
        say(keys, savedText("credential", saved), "ok");
      } catch (err) {
        refused(keys, err);
        return;
      }
      await loadKeys();
    });
  });

  servers.form.addEventListener("submit", (event) => {
    event.preventDefault();
    submitting(servers.form, async () => {
      const f = servers.fields;
      say(servers, "Saving…");
      try {
        const saved = await api.putMcpServer(
          f.name.value.trim(),
          mcpServerBody({
            url: f.url.value,
            header: f.authHeader.value,
            value: f.authValue.value,
            enabled: f.enabled.checked,
            storedHeader: serverList.find((s) => s.name === f.name.value.trim())?.authHeader ?? null,
          }),
        );
        servers.form.reset();
        say(servers, savedText("mcp", saved), "ok");
      } catch (err) {
        refused(servers, err);
        return;
      }
      await loadServers();
    });
  });

  instructions.form.addEventListener("submit", (event) => {
    event.preventDefault();
    submitting(instructions.form, async () => {
      say(instructions, "Saving…");
      try {
        const saved = await api.putInstructions(instructions.text.value);
        instructions.text.value = saved.text;
        say(instructions, instructionsSavedText(saved.text), "ok");
      } catch (err) {
        refused(instructions, err);
      }
      countInstructions();
    });
  });
  instructions.text.maxLength = INSTRUCTIONS_MAX;
  instructions.text.addEventListener("input", countInstructions);

  function open() {
    if (dialog.open) return;
    returnFocus = document.activeElement;
    for (const section of [keys, servers, instructions]) say(section, "");
    confirming.keys = null;
    confirming.servers = null;
    dialog.showModal();
    close.focus();
    loadKeys();
    loadServers();
    loadInstructions();
  }

  /** Gives the focus back to where it was when the view opened, unless it has moved on since. */
  function closed() {
    forgetSecrets();
    changed();
    const target = returnFocus;
    returnFocus = null;
    const now = document.activeElement;
    const unmoved = !now || now === document.body || dialog.contains(now);
    if (unmoved && target instanceof HTMLElement && target.isConnected) target.focus();
  }

  close.addEventListener("click", () => dialog.close());
  // Escape closes it too (the dialog's own cancel); either way the close event follows.
  dialog.addEventListener("close", closed);

  return { open };
}
