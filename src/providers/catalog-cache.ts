/**
 * The provider's catalog (GET /v1/agents, and the checks of a turn that names a backend, MCP
 * servers or a system prompt), kept per isolate for `ttlMs` (AGENTS_CATALOG_TTL_MS): concurrent
 * reads share one request, and a failed read is not kept.
 */
import type { Config } from "../config";
import type { AgentCatalog } from "../schemas/agents";

/** Which deployment a catalog is of: one kept catalog per provider and address. */
export const catalogKey = (config: Config) =>
  `${config.provider}|${config.sandboxBaseUrl}|${config.CLI_BRIDGE_URL ?? ""}`;

let cached: { key: string; at: number; catalog: Promise<AgentCatalog> } | null = null;

/** The catalog `read` answers, or the one read under the same `key` less than `ttlMs` ago. */
export function cachedCatalog(key: string, ttlMs: number, read: () => Promise<AgentCatalog>): Promise<AgentCatalog> {
  const now = Date.now();
  if (cached && cached.key === key && now - cached.at < ttlMs) return cached.catalog;
  const entry = { key, at: now, catalog: read() };
  cached = entry;
  entry.catalog.catch(() => {
    if (cached === entry) cached = null;
  });
  return entry.catalog;
}
