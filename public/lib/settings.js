// @ts-check
/**
 * The settings view's logic (controllers/settings.js draws it): what each form sends
 * (docs/api.md#bring-your-own-key, #mcp-servers, #standing-instructions), what the page says once
 * saved, and where a refusal belongs. Pure, tested in Node.
 *
 * A key or an auth value is only ever in a request body: no answer carries one, and nothing here
 * keeps one.
 */

/** @typedef {import("./wire").CredentialView} CredentialView */
/** @typedef {import("./wire").McpServerView} McpServerView */

/** The most characters of standing instructions the gateway keeps. */
export const INSTRUCTIONS_MAX = 16_384;

/**
 * PUT /v1/credentials/:name's body from the form: an empty endpoint is none.
 * @param {{ provider: string, key: string, baseUrl: string }} form
 */
export function credentialBody({ provider, key, baseUrl }) {
  const endpoint = baseUrl.trim();
  return { provider: provider.trim(), key, ...(endpoint ? { baseUrl: endpoint } : {}) };
}

/**
 * PUT /v1/mcp-servers/:name's body from the form: auth when either of its fields is filled in (one
 * without the other is the gateway's to refuse, naming it). Replacing a server that has auth
 * (`storedHeader`, its header's name): its header with no value keeps the stored auth (`auth`
 * omitted), both fields emptied removes it (`auth: null`).
 * @param {{ url: string, header: string, value: string, enabled: boolean, storedHeader?: string | null }} form
 */
export function mcpServerBody({ url, header, value, enabled, storedHeader = null }) {
  const name = header.trim();
  // The stored auth's header with no value typed: the gateway keeps the stored auth (an omitted `auth`).
  if (!value && storedHeader !== null && name === storedHeader) return { url: url.trim(), enabled };
  // No header and no value where the server had auth: removed (null).
  if (!name && !value && storedHeader !== null) return { url: url.trim(), auth: null, enabled };
  return { url: url.trim(), ...(name || value ? { auth: { header: name, value } } : {}), enabled };
}

/**
 * What the form says once the gateway stored it.
 * @param {"credential" | "mcp"} kind
 * @param {{ name: string, created: boolean }} answer
 */
export function savedText(kind, answer) {
  if (answer.created) return `Saved “${answer.name}”.`;
  return kind === "credential"
    ? `Saved: the key of “${answer.name}” was replaced.`
    : `Saved: “${answer.name}” was replaced.`;
}

/** Which form field each of the API's field names is. */
const FIELDS = /** @type {Record<string, string>} */ ({
  name: "name",
  provider: "provider",
  key: "key",
  baseUrl: "baseUrl",
  url: "url",
  auth: "authHeader",
  "auth.header": "authHeader",
  "auth.value": "authValue",
  enabled: "enabled",
  text: "text",
});

/**
 * A refusal as the form shows it: its message (the API's, which names the field) and the form's
 * fields it names, to mark invalid. `details.issues[].path` (400 invalid_request), `details.field`
 * (422 mcp_server_url_refused), or a message about the name (the path's own name, refused before
 * the body is read).
 * @param {unknown} err
 * @returns {{ message: string, fields: string[] }}
 */
export function refusalOf(err) {
  const message = err instanceof Error ? err.message : String(err);
  const body =
    /** @type {{ error?: { code?: string, details?: { issues?: Array<{ path?: unknown }>, field?: unknown } } }} */ (
      /** @type {{ body?: unknown }} */ (err)?.body ?? {}
    );
  const details = body?.error?.details;
  /** @type {string[]} */
  const named = [];
  for (const issue of details?.issues ?? []) if (typeof issue?.path === "string") named.push(issue.path);
  if (typeof details?.field === "string") named.push(details.field);
  if (body?.error?.code === "invalid_request" && /^name: /.test(message)) named.push("name");
  const fields = [...new Set(named.flatMap((path) => (FIELDS[path] ? [FIELDS[path]] : [])))];
  return { message, fields };
}

/** @param {number} n @param {string} one */
const count = (n, one) => `${n.toLocaleString("en")} ${one}${n === 1 ? "" : "s"}`;

/** The count under the instructions. @param {string} text */
export function instructionsCount(text) {
  return `${count(text.length, "character")} of ${INSTRUCTIONS_MAX.toLocaleString("en")}`;
}

/** What saving the instructions did. @param {string} text  what was saved */
export const instructionsSavedText = (text) => (text ? "Saved." : "Removed: no standing instructions.");

/** A credential's line in the list (never a key: the API has none to give). @param {CredentialView} c */
export function credentialLine(c) {
  return [c.provider, c.baseUrl ?? "the provider's own endpoint"].join(" · ");
}

/** An MCP server's line in the list: its URL, its auth header's name (never its value). @param {McpServerView} s */
export function serverLine(s) {
  return [s.url, s.authHeader ? `auth: ${s.authHeader} header` : "no auth"].join(" · ");
}

/**
 * The body that turns a server on or off: its URL and the new state, no `auth`, so the gateway
 * keeps the stored one (docs/api.md#mcp-servers: an omitted auth is kept, null removes it).
 * @param {McpServerView} s @param {boolean} enabled
 */
export const toggleBody = (s, enabled) => ({ url: s.url, enabled });
