/**
 * The deployment's backend catalog (agent-provider-tangle: "checks the selected backend catalog";
 * `GET /v1/backends` [ours], docs/sandbox-wire.md §2): each backend's type, its models and what it
 * supports, read into the gateway's catalog (docs/api.md#choosing-the-agent). The route's answer is
 * not public: read as `{ backends }`, `{ data: { backends } }` or a bare array; a capability the
 * entry does not state is unavailable, never assumed. A deployment without the route (404) has a
 * catalog of its configured backend with every fact unavailable; any other failure is thrown
 * unchanged (the provider's error), before any sandbox work.
 */
import { z } from "zod";
import type { AgentBackend, AgentCatalog, CatalogFact } from "../../schemas/agents";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { BackendDefaults } from "./backend";
import { sandboxRoutes as routes } from "./routes";

const Flag = z.boolean().optional();
const ModelEntry = z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) }).transform((m) => m.id)]);
const BackendEntry = z.looseObject({
  type: z.string().min(1).max(256),
  models: z.array(ModelEntry).optional(),
  defaultModel: z.string().min(1).optional(),
  capabilities: z
    .looseObject({
      interactions: Flag,
      runtimeAttachments: Flag,
      systemPrompt: z.looseObject({ replace: Flag, append: Flag }).optional(),
      perTurnModel: Flag,
    })
    .optional(),
});
const BackendList = z.array(BackendEntry).max(256);
const CatalogAnswer = z.union([
  BackendList,
  z.looseObject({ backends: BackendList }).transform((a) => a.backends),
  z.looseObject({ data: z.looseObject({ backends: BackendList }) }).transform((a) => a.data.backends),
]);

const NOT_STATED = "the Sandbox's catalog does not state it";
const fact = (value: boolean | undefined): CatalogFact => value ?? { unavailable: NOT_STATED };

function backendOf(entry: z.infer<typeof BackendEntry>): AgentBackend {
  const caps = entry.capabilities;
  return {
    type: entry.type,
    models: entry.models ? entry.models.slice(0, 1000) : { unavailable: NOT_STATED },
    defaultModel: entry.defaultModel ?? null,
    supports: {
      interactions: fact(caps?.interactions),
      attachments: fact(caps?.runtimeAttachments),
      systemPromptReplace: fact(caps?.systemPrompt?.replace),
      systemPromptAppend: fact(caps?.systemPrompt?.append),
      perTurnModel: fact(caps?.perTurnModel),
    },
  };
}

export async function readCatalog(client: HttpTransport, defaults: BackendDefaults): Promise<AgentCatalog> {
  const base = { provider: "tangle" as const, default: { backend: defaults.backend, model: defaults.model ?? null } };
  try {
    const entries = await client.json(routes.backends(), CatalogAnswer, { retry: true }, "read the backend catalog");
    return { ...base, perTurnBackend: true, backends: entries.map(backendOf) };
  } catch (err) {
    if (!(err instanceof ProviderError && err.code === "not_found")) throw err;
    const why = "this Sandbox deployment serves no backend catalog (GET /v1/backends answered 404)";
    const unknown = { unavailable: why };
    return {
      ...base,
      perTurnBackend: true,
      backends: [
        {
          type: defaults.backend,
          models: unknown,
          defaultModel: defaults.model ?? null,
          supports: {
            interactions: unknown,
            attachments: unknown,
            systemPromptReplace: unknown,
            systemPromptAppend: unknown,
            perTurnModel: unknown,
          },
        },
      ],
    };
  }
}
