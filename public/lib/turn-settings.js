// @ts-check
/**
 * The agent picker's Key and Tools for a new conversation's first turn (controllers/agent-picker.js):
 * which of the user's model keys and MCP servers it may name. Pure, tested in Node. Apart from
 * lib/settings.js (the settings view's logic, loaded with that view at its first opening) so the
 * page loads none of the view's code on its way to "live".
 */

/** @typedef {import("./wire").CredentialView} CredentialView */
/** @typedef {import("./wire").McpServerView} McpServerView */

/**
 * What a new conversation's first turn names of the user's settings (its key, its MCP servers: the
 * first turn's are the conversation's, docs/api.md#bring-your-own-key). Nothing picked: nothing sent.
 * @typedef {{ credential: string | null, mcpServers: string[] }} SettingsChoice
 */
/** @type {SettingsChoice} */
export const NO_SETTINGS = Object.freeze({ credential: null, mcpServers: [] });

/** @typedef {{ credential?: string, mcpServers?: string[] }} TurnSettingsFields */
/**
 * @typedef {object} TurnSettingsView
 * @property {{ shown: boolean, options: Array<{ value: string, label: string }>, value: string }} key
 * @property {{ shown: boolean, options: Array<{ name: string, checked: boolean }> }} tools
 * @property {TurnSettingsFields} send
 */

/**
 * The picker row's Key and Tools for a new conversation's first turn, from the user's settings and
 * the deployment's catalog: the CLI Bridge takes neither; a key is offered when the user has one;
 * the enabled MCP servers are offered where the backend the turn runs on says it takes runtime
 * attachments (a fact unavailable is not taken as yes).
 * @param {import("./wire").AgentCatalog} catalog
 * @param {string | null} backendType  the backend the first turn runs on
 * @param {CredentialView[]} credentials
 * @param {McpServerView[]} servers
 * @param {SettingsChoice} choice
 * @returns {TurnSettingsView}
 */
export function turnSettingsView(catalog, backendType, credentials, servers, choice) {
  const tangle = catalog.provider !== "cli-bridge";
  const keyShown = tangle && credentials.length > 0;
  const key = keyShown && credentials.some((c) => c.name === choice.credential) ? String(choice.credential) : "";
  const backend = catalog.backends.find((b) => b.type === backendType);
  const enabled = servers.filter((s) => s.enabled);
  const toolsShown = tangle && backend?.supports.attachments === true && enabled.length > 0;
  const options = toolsShown ? enabled.map((s) => ({ name: s.name, checked: choice.mcpServers.includes(s.name) })) : [];
  const picked = options.filter((o) => o.checked).map((o) => o.name);
  return {
    key: {
      shown: keyShown,
      options: [
        { value: "", label: "The deployment's" },
        ...credentials.map((c) => ({ value: c.name, label: `${c.name} (${c.provider})` })),
      ],
      value: key,
    },
    tools: { shown: toolsShown, options },
    send: { ...(key ? { credential: key } : {}), ...(picked.length ? { mcpServers: picked } : {}) },
  };
}
