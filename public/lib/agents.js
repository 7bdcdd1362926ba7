// @ts-check
/**
 * The agent and model picker's logic (controllers/agent-picker.js draws it): from the deployment's
 * catalog (`GET /v1/agents`), the open conversation's agent and what the user picked, what the
 * picker offers and what a turn sends (docs/api.md#choosing-the-agent). Pure, tested in Node.
 *
 * Capability-gated: only what the catalog offers is offered. A fact that is `{ unavailable }` is
 * never taken as supported: a backend whose models are unavailable offers its default only, and a
 * conversation's model is changed for a message only where its backend reports `perTurnModel: true`.
 * - A new conversation: the backend (where the catalog says a turn may name one and lists more than
 *   one) and the model are the first turn's choice, its agent from then on.
 * - A conversation with an agent: it shows that agent; its backend is fixed, and a model picked
 *   there is sent as one message's `model` (an override for that turn only).
 */

/** @typedef {import("./wire").AgentCatalog} AgentCatalog */
/** @typedef {import("./wire").AgentBackend} AgentBackend */
/** @typedef {import("./wire").ConversationAgent} ConversationAgent */
/** What the user picked; null: left as it was. @typedef {{ backend: string | null, model: string | null }} AgentChoice */
/** @typedef {{ value: string, label: string }} Option */
/** @typedef {{ label: string | null, options: Option[] }} OptionGroup */
/**
 * What a turn's body carries of its agent (POST …/turns): nothing, when it runs on the default
 * or the conversation's agent. A new conversation's first turn may also name the user's settings
 * it runs with (lib/turn-settings.js turnSettingsView).
 * @typedef {{ model?: string, providerOptions?: { backend: { type: string } }, attachments?: string[] } & import("./turn-settings.js").TurnSettingsFields} TurnAgentFields
 *   `attachments`: the files attached in the composer (controllers/attachments.js), by id
 */
/**
 * @typedef {object} PickerView
 * @property {{ shown: boolean, options: Option[], value: string, disabled: boolean }} backend
 * @property {{ groups: OptionGroup[], value: string, disabled: boolean }} model
 * @property {string} note    what the picker says beside it (why something is not offered; "this message only")
 * @property {TurnAgentFields} send
 */

/** The model option that names no model: the backend's (or the deployment's) default. */
export const DEFAULT_MODEL = "";

/** Nothing picked yet. @type {AgentChoice} */
export const NO_CHOICE = Object.freeze({ backend: null, model: null });

/** @param {AgentCatalog} catalog @param {string | null} type */
const backendOf = (catalog, type) => catalog.backends.find((b) => b.type === type) ?? null;

/** @param {import("./wire").CatalogFact} fact */
const unavailable = (fact) => (typeof fact === "object" ? fact.unavailable : null);

/**
 * The model a turn naming none runs on, where the catalog says: on the deployment's backend the
 * deployment's model where it names one (docs/api.md#choosing-the-agent), else the backend's own.
 * @param {AgentCatalog} catalog @param {AgentBackend | null} backend
 */
const defaultModelOf = (catalog, backend) =>
  (catalog.provider === "cli-bridge" || !backend || backend.type === catalog.default.backend
    ? catalog.default.model
    : null) ??
  backend?.defaultModel ??
  null;

/** @param {string | null} name */
const defaultOption = (name) => ({ value: DEFAULT_MODEL, label: name ? `Default (${name})` : "Default" });

/** @param {string[]} models */
const modelOptions = (models) => models.map((m) => ({ value: m, label: m }));

/**
 * The picker as it stands. `agent`: the open conversation's (null: a new conversation, whose first
 * turn chooses it).
 * @param {AgentCatalog} catalog
 * @param {ConversationAgent | null} agent
 * @param {AgentChoice} choice
 * @returns {PickerView}
 */
export function pickerView(catalog, agent, choice) {
  const bridge = catalog.provider === "cli-bridge";
  const backendShown = !bridge && catalog.perTurnBackend && catalog.backends.length > 1;
  const defaultType = catalog.default.backend ?? catalog.backends[0]?.type ?? null;
  /** @type {string | null} */
  let type = agent ? agent.backend : defaultType;
  if (!agent && backendShown && choice.backend !== null && backendOf(catalog, choice.backend)) type = choice.backend;
  const backend = backendOf(catalog, type);
  const backendOptions = catalog.backends.map((b) => ({ value: b.type, label: b.type }));
  // A conversation whose backend the catalog does not (or no longer) list still shows it.
  if (type !== null && !backend) backendOptions.unshift({ value: type, label: type });

  // What the model select offers: the chosen backend's models (the CLI Bridge: every model route,
  // under its harness, since a route names its harness), or its default only.
  const models = backend?.models;
  /** @type {OptionGroup[]} */
  let groups = bridge
    ? catalog.backends.flatMap((b) =>
        Array.isArray(b.models) && b.models.length ? [{ label: b.type, options: modelOptions(b.models) }] : [],
      )
    : Array.isArray(models)
      ? [{ label: null, options: modelOptions(models) }]
      : [];
  const listed = groups.flatMap((g) => g.options.map((o) => o.value));
  const notes = [];
  const whyNoList = models && !Array.isArray(models) ? models.unavailable : null;
  if (whyNoList && !bridge) notes.push(`Model list unavailable: ${whyNoList}`);

  if (!agent) {
    const value = choice.model !== null && listed.includes(choice.model) ? choice.model : DEFAULT_MODEL;
    groups = [{ label: null, options: [defaultOption(defaultModelOf(catalog, backend))] }, ...groups];
    /** @type {TurnAgentFields} */
    const send = {
      ...(value !== DEFAULT_MODEL ? { model: value } : {}),
      ...(backendShown && type !== null && type !== catalog.default.backend
        ? { providerOptions: { backend: { type } } }
        : {}),
    };
    return {
      backend: { shown: backendShown, options: backendOptions, value: type ?? "", disabled: false },
      model: { groups, value, disabled: listed.length === 0 },
      note: notes.join(" "),
      send,
    };
  }

  // A conversation with an agent: its model, and another for one message where the backend says it can.
  const base = agent.model ?? DEFAULT_MODEL;
  if (base === DEFAULT_MODEL)
    groups = [{ label: null, options: [defaultOption(defaultModelOf(catalog, backend))] }, ...groups];
  else if (!listed.includes(base)) groups = [{ label: null, options: [{ value: base, label: base }] }, ...groups];
  const perTurn = backend ? backend.supports.perTurnModel : false;
  const changeable = perTurn === true && listed.some((m) => m !== base);
  if (!changeable && perTurn !== true) {
    const why = unavailable(perTurn);
    notes.push(
      !backend
        ? `${type ?? "This agent"} is not in this deployment's catalog: its model is fixed.`
        : why
          ? `The model is fixed for this conversation (changing it per message: unknown: ${why}).`
          : `The model is fixed for this conversation (${backend.type} does not change it per message).`,
    );
  }
  const value = changeable && choice.model !== null && listed.includes(choice.model) ? choice.model : base;
  if (value !== base) notes.push("This message only.");
  return {
    backend: { shown: backendShown, options: backendOptions, value: type ?? "", disabled: true },
    model: { groups, value, disabled: !changeable },
    note: notes.join(" "),
    send: value !== base ? { model: value } : {},
  };
}

/**
 * The agent a conversation shows while the server has not told it yet: what its first turn,
 * sent from this page, chose (the server's own view replaces it once read).
 * @param {AgentCatalog} catalog
 * @param {TurnAgentFields} sent
 * @returns {ConversationAgent}
 */
export function agentSent(catalog, sent) {
  const type = sent.providerOptions?.backend.type ?? catalog.default.backend;
  const named = sent.model !== undefined || sent.providerOptions !== undefined;
  if (catalog.provider === "cli-bridge") {
    const route = sent.model ?? catalog.default.model;
    const harness = catalog.backends.find((b) => Array.isArray(b.models) && route !== null && b.models.includes(route));
    return { backend: harness?.type ?? null, model: route, chosen: named ? "first-turn" : "default" };
  }
  // The deployment's model is its backend's: another backend with no model runs its own default.
  const model = sent.model ?? (type === catalog.default.backend ? catalog.default.model : null);
  return { backend: type, model, chosen: named ? "first-turn" : "default" };
}
