/**
 * The agent a conversation runs (docs/api.md#choosing-the-agent). Pure. Its first turn chooses it
 * (a model, a backend type), else the deployment's default does; a later turn that names no model
 * runs on the conversation's, and one that names its own runs on that one (an override for that
 * turn only). The backend type, the credential, the MCP servers, the conversation's instructions
 * and a system prompt replacement are the conversation's unless a turn names its own.
 */
import type { Config } from "../config";
import { harnessOf } from "../providers/cli-bridge/catalog";
import { type ConversationAgent, modelRoute } from "../schemas/agents";
import type { TurnRequest } from "./store/records";

/** What a turn's request says of its agent (the part ../http/agent-options.ts reads). */
export type AgentRequest = Pick<
  TurnRequest,
  "model" | "backend" | "credential" | "mcpServers" | "instructions" | "systemPrompt"
>;

/** The settings a later turn takes from the conversation unless it names its own. */
const INHERITED = ["credential", "mcpServers", "instructions", "systemPrompt"] as const;

/** The first turn's choice, as the conversation keeps it. */
export function chosenAgent(first: TurnRequest): AgentRequest {
  const out: AgentRequest = {
    ...(first.model !== undefined ? { model: first.model } : {}),
    ...(first.backend !== undefined ? { backend: first.backend } : {}),
  };
  for (const key of INHERITED) if (first[key] !== undefined) Object.assign(out, { [key]: first[key] });
  return out;
}

/** The model and backend a turn runs on: its own where it names them, else the conversation's. */
export function agentOfTurn(request: TurnRequest, conversation: AgentRequest | null): AgentRequest {
  if (!conversation) return chosenAgent(request);
  const ownModel = request.model !== undefined || request.backend?.model !== undefined;
  const model = ownModel ? request.model : conversation.model;
  const backendModel = ownModel ? request.backend?.model : conversation.backend?.model;
  const type = request.backend?.type ?? conversation.backend?.type;
  const backend =
    type !== undefined || backendModel !== undefined
      ? { ...(type !== undefined ? { type } : {}), ...(backendModel !== undefined ? { model: backendModel } : {}) }
      : undefined;
  const out: AgentRequest = { ...(model !== undefined ? { model } : {}), ...(backend ? { backend } : {}) };
  for (const key of INHERITED) {
    const value = request[key] ?? conversation[key];
    if (value !== undefined) Object.assign(out, { [key]: value });
  }
  return out;
}

/** A request's model as one route (its `model`, else its backend model as `provider/model`). */
function routeOf(request: AgentRequest): string | undefined {
  const m = request.backend?.model;
  return request.model ?? (m ? modelRoute(m) : undefined);
}

/** Whether a later turn names a model other than its conversation's (a per-turn model change). */
export function overridesModel(request: TurnRequest, conversation: AgentRequest | null): boolean {
  if (conversation === null) return false;
  const own = routeOf(request);
  return own !== undefined && own !== routeOf(conversation);
}

/** The deployment's default agent: Tangle's AGENT_BACKEND and AGENT_MODEL; the CLI Bridge's CLI_BRIDGE_MODEL route. */
export interface AgentDefaults {
  backend: string | null;
  model: string | null;
}

/**
 * The agent a conversation shows: the first turn's choice over the deployment's default. `bridge`:
 * the CLI Bridge, where the model is a route and its harness the backend.
 */
export function conversationAgent(
  chosen: AgentRequest | null,
  defaults: AgentDefaults,
  bridge: boolean,
): ConversationAgent {
  const named = chosen !== null && (chosen.model !== undefined || chosen.backend !== undefined);
  // The deployment's model is its backend's: a conversation on another backend runs that backend's own default.
  const onDefaultBackend = chosen?.backend?.type === undefined || chosen.backend.type === defaults.backend;
  const model = (chosen ? routeOf(chosen) : undefined) ?? (bridge || onDefaultBackend ? defaults.model : null);
  const backend = bridge ? (model !== null ? harnessOf(model) : null) : (chosen?.backend?.type ?? defaults.backend);
  return {
    backend,
    model,
    chosen: named ? "first-turn" : "default",
    credential: chosen?.credential ?? null,
    mcpServers: chosen?.mcpServers ?? [],
  };
}

/** The agent a conversation shows, from what its first turn chose (null: none yet, or before this was kept) and the configuration. */
export function agentView(chosen: AgentRequest | null, config: Config): ConversationAgent {
  const bridge = config.provider === "cli-bridge";
  const defaults: AgentDefaults = bridge
    ? { backend: null, model: config.CLI_BRIDGE_MODEL ?? null }
    : { backend: config.AGENT_BACKEND, model: config.AGENT_MODEL ?? null };
  return conversationAgent(chosen, defaults, bridge);
}
