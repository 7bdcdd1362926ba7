/**
 * What this deployment can run (docs/api.md#choosing-the-agent): `GET /v1/agents`, the provider's
 * own catalog (Tangle: the Sandbox's backend catalog; CLI Bridge: its model routes and their
 * capability documents), read at most once a minute per Worker instance (`AGENTS_CATALOG_TTL_MS`). A failed read is the
 * provider's error, unchanged (a 502, 503 or 504 with its code), and is not kept.
 */

import type { Context } from "hono";
import { Refusal } from "../../errors";
import { createProvider } from "../../providers";
import { cachedCatalog, catalogKey } from "../../providers/catalog-cache";
import { providerRefusal } from "../../providers/refusal";
import { type AgentCatalog, AgentCatalogSchema } from "../../schemas/agents";
import type { AppEnv } from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

/** The deployment's catalog, kept per isolate (../../providers/catalog-cache.ts). */
function catalogOf(c: Context<AppEnv>): Promise<AgentCatalog> {
  const config = c.get("config");
  return cachedCatalog(catalogKey(config), config.AGENTS_CATALOG_TTL_MS, () => createProvider(config, c.env).catalog());
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
