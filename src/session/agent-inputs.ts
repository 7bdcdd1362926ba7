/**
 * What a turn's dispatch carries besides its message (docs/api.md#choosing-the-agent): checked
 * against the provider's catalog where the turn asks for something a backend may not support
 * (agent-provider-tangle: the catalog is read before any sandbox work, and its errors are thrown
 * unchanged), then the user's settings opened (the named credential's key, the named MCP servers'
 * auth, the standing instructions). A turn asking nothing of the catalog reads none.
 */
import { Refusal } from "../errors";
import { isImage } from "../lib/file-bytes";
import type { DispatchInput } from "../providers/provider";
import type { TurnSecrets } from "../schemas/agent-settings";
import type { AgentCatalog, CatalogFact } from "../schemas/agents";
import type { Attachment } from "../schemas/workspace";
import type { SessionContext, TurnRequest } from "./store/records";

export type AgentInputs = Pick<DispatchInput, "credential" | "attachments" | "systemPrompt" | "images"> & {
  /** The message as dispatched, where the turn names attachments: it says where each file is. */
  message?: string;
};

export interface AgentInputsDeps {
  /** The provider's catalog (kept per isolate). */
  catalog(): Promise<AgentCatalog>;
  /** The user's settings the turn names, opened by the user's object. */
  settings(context: SessionContext, credential?: string, mcpServers?: string[]): Promise<TurnSecrets>;
  /** The deployment's backend when a turn names none. */
  defaultBackend: string | null;
  /** The conversation's attachments of these ids (an id it did not issue left out). */
  attachments(ids: readonly string[]): Attachment[];
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

/** A size as the message says it: bytes, KB or MB (1024s). */
function sizeInWords(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * The turn's attachments (docs/api.md#attachments): each named id must be one its conversation
 * issued (400 `attachment_not_found` otherwise); the message says where each is, and an image goes
 * as an image part too where the backend's catalog says it takes attachments (`supports.attachments`).
 */
async function attachmentInputs(
  deps: AgentInputsDeps,
  request: TurnRequest,
): Promise<Pick<AgentInputs, "message" | "images">> {
  const ids = request.attachments ?? [];
  if (ids.length === 0) return {};
  const found = deps.attachments(ids);
  const missing = ids.filter((id) => !found.some((a) => a.id === id));
  if (missing.length > 0)
    throw new Refusal(
      "attachment_not_found",
      `attachments: ${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} no attachment of this conversation (POST /v1/conversations/:cid/attachments answers the ids)`,
      { field: "attachments", missing },
    );
  const lines = found.map((a) => `Attached: ${a.path}, ${a.mediaType}, ${sizeInWords(a.size)}`);
  const message = `${request.message}\n\n${lines.join("\n")}`;
  const pictures = found.filter((a) => isImage(a.mediaType));
  if (pictures.length === 0) return { message };
  // The catalog decides whether the backend sees images; one that cannot be read sends none (the message says where they are).
  const catalog = await deps.catalog().catch(() => null);
  const type = request.backend?.type ?? deps.defaultBackend;
  const sees = catalog?.backends.find((b) => b.type === type)?.supports.attachments === true;
  return sees
    ? { message, images: pictures.map((a) => ({ path: a.path, mediaType: a.mediaType, name: a.name })) }
    : { message };
}

/** The turn's dispatch inputs: checked against the catalog where it asks for anything, its settings opened. */
export async function agentInputs(
  deps: AgentInputsDeps,
  context: SessionContext,
  request: TurnRequest,
  modelOverride = false,
): Promise<AgentInputs> {
  if (asksOfCatalog(request, modelOverride))
    checkAgainstCatalog(await deps.catalog(), request, deps.defaultBackend, modelOverride);
  const files = await attachmentInputs(deps, request);
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
    ...files,
  };
}
