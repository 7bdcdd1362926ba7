/**
 * The agent a conversation runs (docs/api.md#choosing-the-agent): the deployment's catalog of
 * backends and models (`GET /v1/agents`), a turn's backend options (agent-provider-tangle,
 * "Per-turn backend options"), and the agent a conversation shows.
 */
import { z } from "zod";
import { InstructionsText, SettingName } from "./agent-settings";
import { RequestedInteractions } from "./contracts";

/** A route or model name as a catalog or a turn gives it. */
const Name = z.string().min(1).max(256);

/** A backend model as one route: `provider/model`, or the model alone. */
export function modelRoute(model: { provider?: string; model: string }): string {
  return model.provider ? `${model.provider}/${model.model}` : model.model;
}

/** A field the Sandbox's prompt options declare that a request body may not carry here: refused, with the reason. */
const refusedField = (why: string) =>
  z
    .unknown()
    .optional()
    .refine((value) => value === undefined, why);
const BEARER = "a key is never taken in a request body (it would be stored with the turn)";

/**
 * A turn's `backend.model` (the Sandbox's `BackendConfig.model`): strictly the fields a request
 * body may carry. The prompt options also declare `apiKey` and `authFiles`; they are bearer
 * material, refused in a request body (agent-options.ts) so no key is ever stored with a turn.
 */
const BackendModelOptions = z.strictObject({
  provider: Name.optional().describe("the model's provider (`anthropic`, `zai`, …)"),
  model: Name.describe("the model's name at that provider"),
  apiKey: refusedField(BEARER),
  authFiles: refusedField(BEARER),
});

/**
 * `providerOptions.backend` of a turn: the backend type and model the turn runs on, and its
 * interaction posture. Every level refuses a field the prompt options do not declare.
 */
export const BackendOptions = z.strictObject({
  type: Name.optional().describe("the backend (agent) type, one of GET /v1/agents' backends"),
  model: BackendModelOptions.optional(),
  interactions: RequestedInteractions.optional().describe(
    "the turn's interaction posture; must agree with the turn's own `interactions` when both are sent",
  ),
  profile: refusedField("an inline profile is not taken by this gateway"),
  runtimeAttachments: refusedField("runtime attachments are not taken in a request body by this gateway"),
  metadata: refusedField("backend metadata is not taken by this gateway"),
});
export type BackendOptions = z.infer<typeof BackendOptions>;

export const ProviderOptions = z
  .strictObject({ backend: BackendOptions.optional() })
  .describe(
    "The Sandbox's per-turn backend options (Tangle only: the CLI Bridge takes a model route as `model`). Part of the turn's request digest",
  )
  .meta({ id: "ProviderOptions" });
export type ProviderOptions = z.infer<typeof ProviderOptions>;

/** A fact of the catalog: reported (true or false), or unavailable with the reason. */
export const CatalogFact = z.union([
  z.boolean(),
  z.strictObject({ unavailable: z.string().describe("why the provider's catalog cannot say") }),
]);
export type CatalogFact = z.infer<typeof CatalogFact>;

const AgentBackendSchema = z.strictObject({
  type: Name.describe("the backend type (Tangle: the Sandbox backend; CLI Bridge: the harness of its model routes)"),
  models: z
    .union([z.array(Name), z.strictObject({ unavailable: z.string() })])
    .describe("the models it runs (CLI Bridge: whole model routes), or unavailable with the reason"),
  defaultModel: Name.nullable().describe("the model it runs when a turn names none; null: not reported"),
  supports: z.strictObject({
    interactions: CatalogFact.describe("asks (questions, permissions, plans) the gateway can answer"),
    attachments: CatalogFact.describe("runtime MCP attachments"),
    systemPromptReplace: CatalogFact.describe("replacing the agent's own system prompt"),
    systemPromptAppend: CatalogFact.describe("appending to the agent's own system prompt"),
    perTurnModel: CatalogFact.describe("a turn naming another model than its conversation's"),
  }),
});
export type AgentBackend = z.infer<typeof AgentBackendSchema>;

export const AgentCatalogSchema = z
  .strictObject({
    provider: z.enum(["tangle", "cli-bridge"]),
    default: z.strictObject({
      backend: Name.nullable().describe("the deployment's backend when a conversation names none"),
      model: Name.nullable().describe("the deployment's model when a conversation names none; null: the backend's own"),
    }),
    perTurnBackend: z
      .boolean()
      .describe(
        "whether a turn may name its backend (`providerOptions.backend.type`); on the CLI Bridge the model route names it",
      ),
    backends: z.array(AgentBackendSchema),
  })
  .meta({ id: "AgentCatalog" });
export type AgentCatalog = z.infer<typeof AgentCatalogSchema>;

/** The agent a conversation runs: chosen by its first turn, else the deployment's default. */
export const ConversationAgentSchema = z
  .strictObject({
    backend: Name.nullable().describe(
      "the backend type; null: the deployment names none (the CLI Bridge's route does)",
    ),
    model: Name.nullable().describe("the model (CLI Bridge: the model route); null: the backend's own default"),
    chosen: z.enum(["first-turn", "default"]).describe("whether the first turn named it or the deployment's default"),
    credential: Name.nullable()
      .optional()
      .describe("the user's model credential it runs with, by name (never the key); null: none"),
    mcpServers: z.array(Name).optional().describe("the user's MCP servers it enables, by name"),
  })
  .meta({ id: "ConversationAgent" });
export type ConversationAgent = z.infer<typeof ConversationAgentSchema>;

/** The agent settings a turn may name (the first turn's are the conversation's: docs/api.md#choosing-the-agent). */
export const TurnSettingsFields = {
  credential: SettingName.optional().describe(
    "A model credential of the user's (PUT /v1/credentials/:name) the turn's model runs with (Tangle only)",
  ),
  mcpServers: z
    .array(SettingName)
    .max(20)
    .refine((names) => new Set(names).size === names.length, "must not name a server twice")
    .optional()
    .describe(
      "The user's MCP servers (PUT /v1/mcp-servers/:name) the agent may use in this conversation (Tangle only)",
    ),
  instructions: InstructionsText.optional().describe(
    "The conversation's instructions, appended to the agent's system prompt after the user's own (Tangle only)",
  ),
  systemPrompt: InstructionsText.optional().describe(
    "Replaces the agent's own system prompt: refused where the backend can only append (Tangle only)",
  ),
};
