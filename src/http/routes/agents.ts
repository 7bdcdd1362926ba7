/**
 * What this deployment can run (docs/api.md#choosing-the-agent): `GET /v1/agents`, the provider's
 * own catalog (Tangle: the Sandbox's backend catalog; CLI Bridge: its model routes and their
 * capability documents), read at most once a minute per Worker instance (`AGENTS_CATALOG_TTL_MS`). A failed read is the
 * provider's error, unchanged (a 502, 503 or 504 with its code), and is not kept.
 */

import type { Context } from "hono";
import { ApiError, Refusal } from "../../errors";
import { createProvider } from "../../providers";
import { providerRefusal } from "../../providers/refusal";
import { type AgentCatalog, AgentCatalogSchema } from "../../schemas/agents";
import type { TurnAgentRequest } from "../agent-options";
import type { AppEnv } from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

let cached: { key: string; at: number; catalog: Promise<AgentCatalog> } | null = null;

/** The deployment's catalog: read once a minute at most, concurrent reads sharing one; a failed read is not kept. */
function catalogOf(c: Context<AppEnv>): Promise<AgentCatalog> {
  const config = c.get("config");
  const key = `${config.provider}|${config.sandboxBaseUrl}|${config.CLI_BRIDGE_URL ?? ""}`;
  const now = Date.now();
  if (cached && cached.key === key && now - cached.at < config.AGENTS_CATALOG_TTL_MS) return cached.catalog;
  const catalog = createProvider(config, c.env).catalog();
  const entry = { key, at: now, catalog };
  cached = entry;
  catalog.catch(() => {
    if (cached === entry) cached = null;
  });
  return catalog;
}

/** The catalog, or the provider's failure as the API's error. */
async function readCatalogOrRefuse(c: Context<AppEnv>): Promise<AgentCatalog> {
  try {
    return await catalogOf(c);
  } catch (err) {
    const refusal = providerRefusal(err);
    if (refusal instanceof Refusal)
      unwrapRpc({
        ok: false,
        refusal: {
          code: refusal.code,
          message: refusal.message,
          ...(refusal.details ? { details: refusal.details } : {}),
          ...(refusal.retryAfterSeconds !== undefined ? { retryAfterSeconds: refusal.retryAfterSeconds } : {}),
        },
      });
    throw err;
  }
}

export const agentRoutes = new DeclaredRoutes();

agentRoutes.serve(
  {
    method: "get",
    path: "/",
    summary:
      "What this deployment can run: each backend, its models and what it supports (each fact reported or unavailable with the reason)",
    answers: { 200: json(AgentCatalogSchema, "The catalog") },
    errors: [401, 502, 503, 504],
  },
  async (c) => c.json(await readCatalogOrRefuse(c)),
);

/**
 * A turn naming a backend is checked against the catalog before anything is stored or sent: a
 * backend the deployment does not list is refused (400 unknown_backend), and a failed catalog
 * read is the provider's error, unchanged. A turn naming none reads nothing.
 */
export async function checkBackendChoice(c: Context<AppEnv>, request: TurnAgentRequest): Promise<void> {
  const type = request.backend?.type;
  if (type === undefined) return;
  const catalog = await readCatalogOrRefuse(c);
  if (!catalog.backends.some((b) => b.type === type))
    throw new ApiError(
      400,
      "unknown_backend",
      `providerOptions.backend.type ${JSON.stringify(type)} is not one of this deployment's backends (${catalog.backends.map((b) => b.type).join(", ")}; GET /v1/agents)`,
      { field: "providerOptions.backend.type" },
    );
}
