/**
 * A turn's choice of agent as the request carries it (`model`, `interactions`,
 * `providerOptions.backend`), checked by agent-provider-tangle's rules before anything is stored
 * or dispatched ("Per-turn backend options"), and read into the turn's request. Pure.
 *
 * - A field the prompt options do not declare is refused at every level (the schemas in
 *   ../schemas/agents.ts are strict); bearer material (`apiKey`, `authFiles`) is refused in a
 *   request body, so no key is ever stored with a turn.
 * - A turn `model` that disagrees with `backend.model` is refused.
 * - Interactions stated in both places that disagree are refused; stated once, they are the turn's.
 * - The CLI Bridge declares no backend options: its model is a route (`model`), so
 *   `providerOptions.backend` is refused there.
 */
import { ApiError } from "../errors";
import { canonicalJson } from "../lib/digest";
import { type BackendOptions, modelRoute, type ProviderOptions } from "../schemas/agents";
import type { RequestedInteractions } from "../schemas/contracts";

/** What a turn asks for of its agent, as its request stores it (part of its digest). */
export interface TurnAgentRequest {
  model?: string;
  interactions?: RequestedInteractions;
  /** The backend options without the posture (that is `interactions`). */
  backend?: { type?: string; model?: { provider?: string; model: string } };
  credential?: string;
  mcpServers?: string[];
  instructions?: string;
  systemPrompt?: string;
}

/** The agent settings a turn names, each taken by the Sandbox's backend only. */
const TANGLE_ONLY = ["credential", "mcpServers", "instructions", "systemPrompt"] as const;

/**
 * The turn's agent request from its body, or a 400 naming the rule it breaks. `provider`: the
 * deployment's provider kind (the emulator is the Sandbox's wire).
 */
export function turnAgentRequest(
  body: {
    model?: string;
    interactions?: RequestedInteractions;
    providerOptions?: ProviderOptions;
    credential?: string;
    mcpServers?: string[];
    instructions?: string;
    systemPrompt?: string;
  },
  provider: "tangle" | "cli-bridge",
): TurnAgentRequest {
  const backend: BackendOptions | undefined = body.providerOptions?.backend;
  if (provider === "cli-bridge")
    for (const field of TANGLE_ONLY)
      if (body[field] !== undefined)
        throw new ApiError(
          400,
          "unsupported_field",
          `${field}: the CLI Bridge provider takes no ${field} (its wire carries none: docs/cli-bridge.md)`,
          { field },
        );
  if (backend && provider === "cli-bridge")
    throw new ApiError(
      400,
      "unsupported_field",
      "providerOptions.backend: the CLI Bridge takes no backend options; name its model route as `model` (GET /v1/agents lists them)",
      { field: "providerOptions.backend" },
    );
  if (body.model !== undefined && backend?.model) {
    const route = modelRoute(backend.model);
    if (body.model !== route && body.model !== backend.model.model)
      throw new ApiError(
        400,
        "model_conflict",
        `model ${JSON.stringify(body.model)} disagrees with providerOptions.backend.model (${JSON.stringify(route)}): send one, or the same in both`,
        { field: "model" },
      );
  }
  if (
    body.interactions !== undefined &&
    backend?.interactions !== undefined &&
    canonicalJson(body.interactions) !== canonicalJson(backend.interactions)
  )
    throw new ApiError(
      400,
      "interactions_conflict",
      "interactions and providerOptions.backend.interactions disagree: send the posture once, or the same in both",
      { field: "interactions" },
    );
  const interactions = body.interactions ?? backend?.interactions;
  const kept =
    backend && (backend.type !== undefined || backend.model !== undefined)
      ? {
          ...(backend.type !== undefined ? { type: backend.type } : {}),
          ...(backend.model !== undefined ? { model: backend.model } : {}),
        }
      : undefined;
  return {
    ...(body.model !== undefined ? { model: body.model } : {}),
    ...(interactions !== undefined ? { interactions } : {}),
    ...(kept ? { backend: kept } : {}),
    ...(body.credential !== undefined ? { credential: body.credential } : {}),
    ...(body.mcpServers !== undefined ? { mcpServers: body.mcpServers } : {}),
    ...(body.instructions !== undefined ? { instructions: body.instructions } : {}),
    ...(body.systemPrompt !== undefined ? { systemPrompt: body.systemPrompt } : {}),
  };
}
