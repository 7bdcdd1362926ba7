// @ts-check
/**
 * The agent and model picker beside the message box (docs/chat-page.md, "Choosing the agent"): two
 * labelled native selects, the backend and the model, and a note. What they offer is
 * lib/agents.js's, from the deployment's catalog (`GET /v1/agents`), read once per session and
 * not before the conversation is open (the page is live without it): after the page entered, or
 * when the message box takes the focus, whichever comes first. A read that failed is tried again
 * at the next of those. Without the catalog the picker is hidden and a turn names no agent (the
 * deployment's default, or the conversation's).
 *
 * The open conversation's agent is the server's (its snapshot's summary, else its entry in the
 * list); while neither has it, the first turn sent from here says what it chose.
 *
 * A new conversation's row also offers the user's settings its first turn may name (they are the
 * conversation's from then on: lib/turn-settings.js turnSettingsView): a Key (one of the user's model
 * credentials) and Tools (the enabled MCP servers, where the backend takes them). Their lists are
 * read with the catalog and again when the settings view closes; without them the row has neither.
 */
import { agentSent, NO_CHOICE, pickerView } from "../lib/agents.js";
import { NO_SETTINGS, turnSettingsView } from "../lib/turn-settings.js";

/** @typedef {import("../lib/agents.js").TurnAgentFields} TurnAgentFields */
/** @typedef {ReturnType<typeof createAgentPicker>} AgentPicker */

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { agentPicker: HTMLElement, agentBackendField: HTMLElement, agentBackend: HTMLSelectElement, agentModelField: HTMLElement, agentModel: HTMLSelectElement, agentKeyField: HTMLElement, agentKey: HTMLSelectElement, agentTools: HTMLFieldSetElement, agentToolsList: HTMLElement, agentNote: HTMLElement, input: HTMLTextAreaElement },
 *   el: typeof import("../views/dom.js").el,
 * }} deps  `el`: the page's own (this module is loaded after "live" and shares no module with the
 *   page's bundle: app.js)
 */
export function createAgentPicker({ api, store, ui, el }) {
  /** @type {import("../lib/agents.js").AgentCatalog | null} */
  let catalog = null;
  /** @type {Promise<void> | null} */
  let reading = null;
  /** Why the catalog could not be read (null: read, or not tried). @type {string | null} */
  let failure = null;
  /** What the user picked in the open conversation. @type {import("../lib/agents.js").AgentChoice} */
  let choice = NO_CHOICE;
  /** The conversation the choice is of. */
  let choiceOf = "";
  /** The agent each conversation's first turn, sent from here, chose: until the server says. @type {Map<string, import("../lib/agents.js").ConversationAgent>} */
  const sentAgents = new Map();
  /** What the selects were last filled with (refilled only when it changes: an open select keeps its place). */
  let filled = { backend: "", model: "", key: "", tools: "" };
  /** The user's model credentials and MCP servers (never a key or an auth value: no answer has one). */
  let settings = {
    credentials: /** @type {import("../lib/wire").CredentialView[]} */ ([]),
    servers: /** @type {import("../lib/wire").McpServerView[]} */ ([]),
  };
  /** What the user picked of them for the open new conversation's first turn. @type {import("../lib/turn-settings.js").SettingsChoice} */
  let settingsChoice = NO_SETTINGS;

  /** Reads the user's credentials and MCP servers (a list that cannot be read offers nothing). */
  async function readSettings() {
    const [credentials, servers] = await Promise.all([
      api.credentials().catch(() => []),
      api.mcpServers().catch(() => []),
    ]);
    settings = { credentials, servers };
    draw();
  }

  /** Reads the catalog once per session (a failed read is tried again at the next call). */
  function prefetch() {
    if (catalog || reading) return reading ?? Promise.resolve();
    reading = (async () => {
      readSettings();
      try {
        catalog = await api.agents();
        failure = null;
      } catch (err) {
        failure = err instanceof Error ? err.message : String(err);
      } finally {
        reading = null;
      }
      draw();
    })();
    return reading;
  }

  /**
   * The open conversation's agent: the server's, else what its first turn sent from here chose;
   * null for a conversation whose first turn is still to come; undefined when it has turns but
   * nothing here knows its agent.
   */
  function agentOfOpen() {
    const conv = store.conv;
    if (conv.agent) return conv.agent;
    const listed = store.conversations.find((c) => c.conversationId === conv.cid)?.agent;
    if (listed) return listed;
    const sent = sentAgents.get(conv.cid);
    const sentTurns = conv.order.some((id) => conv.turns[id]?.status !== "unsent");
    if (sent && sentTurns) return sent;
    return sentTurns ? undefined : null;
  }

  /**
   * The Key and Tools a new conversation's first turn may name (null: not a new conversation).
   * @param {import("../lib/agents.js").PickerView} picker
   */
  function settingsView(picker) {
    if (!catalog || agentOfOpen() !== null) return null;
    return turnSettingsView(
      catalog,
      picker.backend.value || null,
      settings.credentials,
      settings.servers,
      settingsChoice,
    );
  }

  /** The picker as it stands (null: no catalog, or the open conversation's agent is not known here). */
  function view() {
    if (store.conv.cid !== choiceOf) {
      choiceOf = store.conv.cid;
      choice = NO_CHOICE;
      settingsChoice = NO_SETTINGS;
    }
    const agent = agentOfOpen();
    if (!catalog || agent === undefined) return null;
    return pickerView(catalog, agent, choice);
  }

  /**
   * Puts the options in the select (again only when they changed: an open select keeps its place) and picks `value`.
   * @param {"backend" | "model" | "key"} which @param {string} key @param {() => Node[]} options @param {string} value
   */
  function fill(which, key, options, value) {
    const select = { backend: ui.agentBackend, model: ui.agentModel, key: ui.agentKey }[which];
    if (filled[which] !== key) {
      select.replaceChildren(...options());
      filled = { ...filled, [which]: key };
    }
    select.value = value;
  }

  /** What the picker was last drawn from: drawn again only when one of them changed (it is asked at every event). @type {unknown[]} */
  let drawnFrom = [];

  function draw() {
    const from = [catalog, failure, store.conv.cid, agentOfOpen(), choice, settings, settingsChoice];
    if (from.every((v, i) => v === drawnFrom[i])) return;
    drawnFrom = from;
    const shown = view();
    ui.agentPicker.hidden = !shown && !failure;
    if (!shown) {
      ui.agentBackendField.hidden = true;
      ui.agentModelField.hidden = true;
      ui.agentKeyField.hidden = true;
      ui.agentTools.hidden = true;
      ui.agentNote.textContent = failure ? `Could not read the agents (${failure}): sending uses the default.` : "";
      return;
    }
    ui.agentModelField.hidden = false;
    ui.agentBackendField.hidden = !shown.backend.shown;
    fill(
      "backend",
      JSON.stringify(shown.backend.options),
      () => shown.backend.options.map((o) => el("option", { value: o.value, text: o.label })),
      shown.backend.value,
    );
    ui.agentBackend.disabled = shown.backend.disabled;
    fill(
      "model",
      JSON.stringify(shown.model.groups),
      () =>
        shown.model.groups.flatMap((g) => {
          const options = g.options.map((o) => el("option", { value: o.value, text: o.label }));
          return g.label === null ? options : [el("optgroup", { label: g.label }, ...options)];
        }),
      shown.model.value,
    );
    ui.agentModel.disabled = shown.model.disabled;
    ui.agentNote.textContent = shown.note;
    drawSettings(settingsView(shown));
  }

  /** The Key select and the Tools checkboxes. @param {import("../lib/turn-settings.js").TurnSettingsView | null} shown */
  function drawSettings(shown) {
    ui.agentKeyField.hidden = !shown?.key.shown;
    ui.agentTools.hidden = !shown?.tools.shown;
    if (!shown) return;
    fill(
      "key",
      JSON.stringify(shown.key.options),
      () => shown.key.options.map((o) => el("option", { value: o.value, text: o.label })),
      shown.key.value,
    );
    const tools = JSON.stringify(shown.tools.options.map((o) => o.name));
    if (filled.tools !== tools) {
      const focused = ui.agentToolsList.contains(document.activeElement)
        ? /** @type {HTMLInputElement} */ (document.activeElement).value
        : null;
      ui.agentToolsList.replaceChildren(
        ...shown.tools.options.map((o) =>
          el("label", {}, el("input", { type: "checkbox", value: o.name }), ` ${o.name}`),
        ),
      );
      filled = { ...filled, tools };
      if (focused !== null)
        /** @type {HTMLInputElement | null} */ (
          ui.agentToolsList.querySelector(`input[value="${CSS.escape(focused)}"]`)
        )?.focus();
    }
    for (const box of ui.agentToolsList.querySelectorAll("input"))
      box.checked = shown.tools.options.some((o) => o.name === box.value && o.checked);
  }

  ui.agentBackend.addEventListener("change", () => {
    choice = { backend: ui.agentBackend.value, model: null };
    draw();
  });
  ui.agentModel.addEventListener("change", () => {
    choice = { ...choice, model: ui.agentModel.value };
    draw();
  });
  ui.agentKey.addEventListener("change", () => {
    settingsChoice = { ...settingsChoice, credential: ui.agentKey.value || null };
    draw();
  });
  ui.agentToolsList.addEventListener("change", () => {
    const names = [...ui.agentToolsList.querySelectorAll("input")].filter((b) => b.checked).map((b) => b.value);
    settingsChoice = { ...settingsChoice, mcpServers: names };
    draw();
  });
  ui.input.addEventListener("focus", () => {
    if (!catalog) prefetch();
  });
  store.subscribe(() => draw());

  return {
    prefetch,
    draw,
    /** The settings view closed: the user's credentials and servers may have changed. */
    settingsChanged: () => (catalog ? readSettings() : Promise.resolve()),
    /**
     * What the turn about to be sent carries of its agent (nothing without the catalog). A new
     * conversation's first turn chooses its agent: shown as sent until the server says.
     * @returns {TurnAgentFields}
     */
    forTurn() {
      const shown = view();
      const fields = { ...shown?.send, ...(shown ? settingsView(shown)?.send : {}) };
      if (catalog && agentOfOpen() === null) sentAgents.set(store.conv.cid, agentSent(catalog, fields));
      return fields;
    },
    /** A turn was accepted: a model picked for one message goes back to the conversation's. @param {string} cid */
    accepted(cid) {
      if (cid === store.conv.cid) choice = NO_CHOICE;
      draw();
    },
  };
}
