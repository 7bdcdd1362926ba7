// @ts-check
/**
 * The gateway's HTTP API as the page uses it: one request function (token, JSON, one error type)
 * and a method per route. No DOM, no page state.
 */

/** An answer the page could not use: an HTTP error, or no answer at all (status 0). */
export class ApiError extends Error {
  /**
   * @param {number} status  0 when the server could not be reached
   * @param {string} code
   * @param {string} message
   * @param {unknown} [body]
   */
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }

  /** The request may not have reached the server: the same request again is the safe retry. */
  get unreachable() {
    return this.status === 0 || this.status >= 500;
  }
}

// The answers' types are the server's schemas' (wire.d.ts): the page trusts the gateway's JSON.
/** @typedef {import("./wire").ConversationEntry} ConversationEntry */
/** A turn's agent, as its body carries it (lib/agents.js). @typedef {import("./agents.js").TurnAgentFields} AgentFields */

const enc = encodeURIComponent;
const conversationPath = (/** @type {string} */ cid) => `/v1/conversations/${enc(cid)}`;
export const REQUEST_TIMEOUT_MS = 20_000;
/** How many conversations the page lists (the most recent; the sidebar says when there are more). */
export const LIST_LIMIT = 100;

/** The paths of the requests the page starts before its module runs (lib/early.js), as this api asks them. */
export const PATHS = {
  health: "/healthz",
  conversations: `/v1/conversations?limit=${LIST_LIMIT}`,
  /** The conversation's stream, opened with its snapshot (docs/sse-protocol.md §14). */
  snapshot: (/** @type {string} */ cid) => `${conversationPath(cid)}/events?snapshot=1`,
};

/**
 * A signal that gives up on a request whose answer has not begun in REQUEST_TIMEOUT_MS, and not later: a
 * stream's body reads on for as long as it lasts. `began()` once its headers are in.
 */
export function headersTimeout() {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("timed out", "TimeoutError")), REQUEST_TIMEOUT_MS);
  return { signal: controller.signal, began: () => clearTimeout(timer) };
}

/**
 * @param {{
 *   baseUrl: string,
 *   token: () => string | null,
 *   onUnauthorized: () => void,
 *   early?: (url: string, token: string | null) => Promise<Response> | null,
 * }} options  `early`: the answer to a GET of `url` the page started already with this token (lib/early.js), taken once
 */
export function createApi({ baseUrl, token, onUnauthorized, early = () => null }) {
  /**
   * @param {string} path
   * @param {{ method?: string, body?: unknown, accept?: number[] }} [init]  `accept`: error statuses answered as data, not thrown
   * @returns {Promise<{ status: number, data: any }>}
   */
  async function request(path, { method = "GET", body, accept = [] } = {}) {
    /** @type {Record<string, string>} */
    const headers = {};
    const bearer = token();
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const form = body instanceof FormData;
    if (body !== undefined && !form) headers["content-type"] = "application/json";
    const res = await reach(
      (method === "GET" && early(`${baseUrl}${path}`, bearer)) ||
        fetch(`${baseUrl}${path}`, {
          method,
          headers,
          body: body === undefined || form ? /** @type {FormData | undefined} */ (body) : JSON.stringify(body),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        }),
    );
    const data = await res.json().catch(() => null);
    if (res.ok || accept.includes(res.status)) return { status: res.status, data };
    throw refusal(res, data, bearer);
  }

  /** @param {Promise<Response>} answer */
  async function reach(answer) {
    try {
      return await answer;
    } catch (err) {
      throw new ApiError(
        0,
        "unreachable",
        `could not reach the server (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  }

  /** The error a refused request throws (a 401 with a token signs the page out). @param {Response} res @param {any} data @param {string | null} bearer */
  function refusal(res, data, bearer) {
    if (res.status === 401 && bearer) onUnauthorized();
    return new ApiError(
      res.status,
      data?.error?.code ?? "http_error",
      data?.error?.message ?? `HTTP ${res.status}`,
      data,
    );
  }

  return {
    /** @returns {Promise<import("./wire").Health>} */
    health: async () => (await request(PATHS.health)).data,
    /** @param {string} user @returns {Promise<import("./wire").DevLoginAnswer>} */
    devLogin: async (user) => (await request("/v1/dev/login", { method: "POST", body: { user } })).data,
    /**
     * Whether the server accepts a pasted user token (a 401 here signs nobody out).
     * @param {string} candidate @returns {Promise<string | null>} null when accepted, else why not
     */
    checkToken: async (candidate) => {
      const res = await fetch(`${baseUrl}/v1/conversations?limit=1`, {
        headers: { authorization: `Bearer ${candidate}` },
      }).catch(() => null);
      if (!res) return "could not reach the server";
      if (res.ok) return null;
      return (await res.json().catch(() => null))?.error?.message ?? "that token was not accepted";
    },
    /** The LIST_LIMIT most recent. @returns {Promise<ConversationEntry[]>} */
    conversations: async () => (await request(PATHS.conversations)).data.conversations,
    /**
     * The conversation's event stream opened with its snapshot (GET …/events?snapshot=1, with the user's token): its
     * body, to read as SSE (lib/stream.js). A refusal (a conversation the user does not have: 404) throws as any request.
     * @param {string} cid @returns {Promise<ReadableStream<Uint8Array>>}
     */
    openStream: async (cid) => {
      const path = PATHS.snapshot(cid);
      const bearer = token();
      const timeout = headersTimeout();
      const res = await reach(
        early(`${baseUrl}${path}`, bearer) ||
          fetch(`${baseUrl}${path}`, {
            headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
            signal: timeout.signal,
          }),
      ).finally(timeout.began);
      if (res.ok && res.body) return res.body;
      throw refusal(res, await res.json().catch(() => null), bearer);
    },
    /** @param {string} cid @returns {Promise<import("./wire").Messages>} */
    messages: async (cid) => (await request(`${conversationPath(cid)}/messages`)).data,
    /** @param {string} cid @returns {Promise<import("./wire").ConversationSummary>} */
    summary: async (cid) => (await request(conversationPath(cid))).data,
    /** @param {string} cid @returns {Promise<import("./wire").ConversationUsage>} */
    usage: async (cid) => (await request(`${conversationPath(cid)}/usage`)).data,
    /** What this deployment can run (docs/api.md#choosing-the-agent). @returns {Promise<import("./wire").AgentCatalog>} */
    agents: async () => (await request("/v1/agents")).data,
    /**
     * @param {string} cid
     * @param {string} turnId  the same id on a retry: the server runs a turn once
     * @param {string} message
     * @param {AgentFields} [agent]  the turn's model and backend (the same on a retry: they are part of the turn)
     * @returns {Promise<import("./wire").TurnView>}
     */
    send: async (cid, turnId, message, agent = {}) =>
      (await request(`${conversationPath(cid)}/turns`, { method: "POST", body: { turnId, message, ...agent } })).data,
    /**
     * Sends a turn that waits in the queue while another runs (it starts at once if none does).
     * @param {string} cid @param {string} turnId  the same id on a retry: the same queued turn
     * @param {string} message
     * @param {AgentFields} [agent]
     * @returns {Promise<import("./wire").TurnView>}
     */
    queue: async (cid, turnId, message, agent = {}) =>
      (
        await request(`${conversationPath(cid)}/turns`, {
          method: "POST",
          body: { turnId, message, whenBusy: "queue", ...agent },
        })
      ).data,
    /** @param {string} cid @param {string} turnId @param {string} message @returns {Promise<import("./wire").TurnView>} */
    editQueued: async (cid, turnId, message) =>
      (
        await request(`${conversationPath(cid)}/turns/${encodeURIComponent(turnId)}`, {
          method: "PATCH",
          body: { message },
        })
      ).data,
    /** @param {string} cid @param {string} turnId @returns {Promise<import("./wire").TurnView>} */
    removeQueued: async (cid, turnId) =>
      (await request(`${conversationPath(cid)}/turns/${encodeURIComponent(turnId)}`, { method: "DELETE" })).data,
    /**
     * A turn after `parentTurnId` (an edit of the message after it, or its answer again): a branch
     * (docs/api.md#branches). @param {string} cid @param {string} turnId @param {string} message @param {string | null}
     * parentTurnId @returns {Promise<import("./wire").TurnView>}
     */
    sendAfter: async (cid, turnId, message, parentTurnId) =>
      (await request(`${conversationPath(cid)}/turns`, { method: "POST", body: { turnId, message, parentTurnId } }))
        .data,
    /** @param {string} cid @returns {Promise<import("./wire").Branches>} */
    branches: async (cid) => (await request(`${conversationPath(cid)}/branches`)).data,
    /** Shows the branch that goes through `turnId`. @param {string} cid @param {string} turnId */
    switchBranch: async (cid, turnId) =>
      (await request(`${conversationPath(cid)}/branches/active`, { method: "POST", body: { turnId } })).data,
    /**
     * The cancellation's acknowledgement, with its HTTP status (409: the operation id was used for
     * another command, or a refusal such as `turn_not_ready`; 502: whether the run stopped could not be confirmed).
     * @param {string} cid @param {string} operationId @param {string} reason
     * @returns {Promise<{ status: number, data: import("./wire").CancellationAcknowledgement | { error: { code: string, message: string } } }>}
     */
    cancel: async (cid, operationId, reason) =>
      request(`${conversationPath(cid)}/cancel`, { method: "POST", body: { operationId, reason }, accept: [409, 502] }),
    /**
     * An answer's acknowledgement, whatever its status (every status has its HTTP code).
     * @param {string} cid @param {string} interactionId
     * @param {{ operationId: string, outcome: string, data?: Record<string, unknown> }} body
     * @returns {Promise<import("./wire").InteractionAcknowledgement>}
     */
    answer: async (cid, interactionId, body) =>
      (
        await request(`${conversationPath(cid)}/interactions/${enc(interactionId)}`, {
          method: "POST",
          body,
          accept: [404, 409, 410, 422, 502],
        })
      ).data,
    /** Renames the conversation on the server (every device lists the new title). @param {string} cid @param {string} title @returns {Promise<ConversationEntry>} */
    rename: async (cid, title) => (await request(conversationPath(cid), { method: "PATCH", body: { title } })).data,
    /** @param {string} cid @returns {Promise<import("./wire").Deleted>} */
    remove: async (cid) => (await request(conversationPath(cid), { method: "DELETE" })).data,
    /** @returns {Promise<import("./wire").EnvironmentView>} */
    environment: async () => (await request("/v1/environment")).data,
    stopEnvironment: async () => (await request("/v1/environment/stop", { method: "POST" })).data,
    deleteEnvironment: async () => (await request("/v1/environment", { method: "DELETE" })).data,
    /** 200: deleted; 202: begun, and finishing by itself. @returns {Promise<{ status: number, data: any }>} */
    deleteAccount: async () => request("/v1/me", { method: "DELETE" }),
    // The user's agent settings (docs/api.md#bring-your-own-key): a key or an auth value goes in a
    // body and never comes back.
    /** @returns {Promise<import("./wire").CredentialView[]>} */
    credentials: async () => (await request("/v1/credentials")).data.credentials,
    /**
     * Stores a model credential, or replaces its key. @param {string} name
     * @param {{ provider: string, key: string, baseUrl?: string }} body @returns {Promise<import("./wire").CredentialSaved>}
     */
    putCredential: async (name, body) => (await request(`/v1/credentials/${enc(name)}`, { method: "PUT", body })).data,
    /** @param {string} name @returns {Promise<import("./wire").Deleted>} */
    deleteCredential: async (name) => (await request(`/v1/credentials/${enc(name)}`, { method: "DELETE" })).data,
    /** @returns {Promise<import("./wire").McpServerView[]>} */
    mcpServers: async () => (await request("/v1/mcp-servers")).data.mcpServers,
    /**
     * Stores an MCP server, or replaces it (an omitted `auth` keeps the stored one, null removes it).
     * @param {string} name
     * @param {{ url: string, auth?: { header: string, value: string } | null, enabled?: boolean }} body
     * @returns {Promise<import("./wire").McpServerSaved>}
     */
    putMcpServer: async (name, body) => (await request(`/v1/mcp-servers/${enc(name)}`, { method: "PUT", body })).data,
    /** @param {string} name @returns {Promise<import("./wire").Deleted>} */
    deleteMcpServer: async (name) => (await request(`/v1/mcp-servers/${enc(name)}`, { method: "DELETE" })).data,
    /** @returns {Promise<import("./wire").InstructionsView>} */
    instructions: async () => (await request("/v1/instructions")).data,
    /** Empty text removes them. @param {string} text @returns {Promise<import("./wire").InstructionsView>} */
    putInstructions: async (text) => (await request("/v1/instructions", { method: "PUT", body: { text } })).data,
    /** @param {string} cid @returns {Promise<import("./wire").StreamToken>} */
    streamToken: async (cid) => (await request(`${conversationPath(cid)}/stream-token`, { method: "POST" })).data,
    /** Any other route (the workspace panel's and the attachments', lazy chunks: controllers/workspace.js). A FormData body goes as multipart. */
    request,
    /** The user's token, for a request read as bytes (a download). */
    token,
    baseUrl,
  };
}

/** @typedef {ReturnType<typeof createApi>} Api */
