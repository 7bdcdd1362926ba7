/**
 * What a turn's dispatch carries besides its message (docs/api.md#choosing-the-agent): checked
 * against the provider's catalog where the turn asks for something a backend may not support
 * (agent-provider-tangle: the catalog is read before any sandbox work, and its errors are thrown
 * unchanged), then the user's settings opened (the named credential's key, the named MCP servers'
 * auth, the standing instructions). A turn asking nothing of the catalog reads none.
 */
import { Refusal } from "../errors";
import type { DispatchInput } from "../providers/provider";
import type { TurnSecrets } from "../schemas/agent-settings";
import type { AgentCatalog, CatalogFact } from "../schemas/agents";
import type { SessionContext, TurnRequest } from "./store/records";

export type AgentInputs = Pick<DispatchInput, "credential" | "attachments" | "systemPrompt">;

export interface AgentInputsDeps {
  /** The provider's catalog (kept per isolate). */
  catalog(): Promise<AgentCatalog>;
  /** The user's settings the turn names, opened by the user's object. */
  settings(context: SessionContext, credential?: string, mcpServers?: string[]): Promise<TurnSecrets>;
  /** The deployment's backend when a turn names none. */
  defaultBackend: string | null;
}

const shown = (fact: CatalogFact | undefined) =>
  fact === undefined ? "not listed" : typeof fact === "boolean" ? String(fact) : `unavailable: ${fact.unavailable}`;

/** Refuses what the turn asks of its backend that the catalog does not say it supports (pure). */
export function checkAgainstCatalog(
  catalog: AgentCatalog,
  request: TurnRequest,
  defaultBackend: string | null,
  modelOverride = false,
): void {
  const type = request.backend?.type ?? defaultBackend;
  const entry = catalog.backends.find((b) => b.type === type);
  if (request.backend?.type !== undefined && !entry)
    throw new Refusal(
      "unknown_backend",
      `providerOptions.backend.type ${JSON.stringify(type)} is not one of this deployment's backends (${catalog.backends.map((b) => b.type).join(", ")}; GET /v1/agents)`,
      { field: "providerOptions.backend.type" },
    );
  const need = (
    capability: "attachments" | "systemPromptReplace" | "systemPromptAppend" | "perTurnModel",
    field: string,
    what: string,
  ) => {
    const fact = entry?.supports[capability];
    if (fact !== true)
      throw new Refusal(
        "capability_unsupported",
        `${field}: the backend ${type ?? "(none)"} does not support ${what} (${capability}: ${shown(fact)})`,
        { field, capability, backend: type },
      );
  };
  if (modelOverride) need("perTurnModel", "model", "a turn naming another model than its conversation's");
  if (request.mcpServers && request.mcpServers.length > 0) need("attachments", "mcpServers", "runtime MCP attachments");
  // A replacement is never quietly appended: a backend that can only append refuses it.
  if (request.systemPrompt !== undefined) need("systemPromptReplace", "systemPrompt", "replacing its system prompt");
  if (request.instructions !== undefined) need("systemPromptAppend", "instructions", "appending to its system prompt");
}

const asksOfCatalog = (request: TurnRequest, modelOverride: boolean) =>
  modelOverride ||
  request.backend?.type !== undefined ||
  (request.mcpServers?.length ?? 0) > 0 ||
  request.systemPrompt !== undefined ||
  request.instructions !== undefined;

/** The turn's dispatch inputs: checked against the catalog where it asks for anything, its settings opened. */
export async function agentInputs(
  deps: AgentInputsDeps,
  context: SessionContext,
  request: TurnRequest,
  modelOverride = false,
): Promise<AgentInputs> {
  if (asksOfCatalog(request, modelOverride))
    checkAgainstCatalog(await deps.catalog(), request, deps.defaultBackend, modelOverride);
  const secrets = await deps.settings(context, request.credential, request.mcpServers);
  const append = [secrets.instructions, request.instructions].filter((t): t is string => !!t).join("\n\n");
  const systemPrompt = {
    ...(request.systemPrompt !== undefined ? { replace: request.systemPrompt } : {}),
    ...(append ? { append } : {}),
  };
  return {
    ...(secrets.credential
      ? {
          credential: {
            provider: secrets.credential.provider,
            key: secrets.credential.key,
            ...(secrets.credential.baseUrl ? { baseUrl: secrets.credential.baseUrl } : {}),
          },
        }
      : {}),
    ...(secrets.mcpServers && secrets.mcpServers.length > 0 ? { attachments: secrets.mcpServers } : {}),
    ...(Object.keys(systemPrompt).length > 0 ? { systemPrompt } : {}),
  };
}
