/**
 * What the bridge can run (GET /v1/agents): its model routes (`GET /v1/models`,
 * docs/cli-bridge-wire.md), grouped by harness, each harness's facts read from the capability
 * document of its first route (`GET /v1/capabilities?model=`, shared with the turns' reads). A
 * route whose document the bridge denies or cannot give leaves its harness's facts unavailable with
 * the reason; a failed model list is thrown unchanged. The backend is the route's harness, so a
 * turn names no backend of its own (`perTurnBackend: false`) and another model is another route
 * (its own session: docs/cli-bridge.md).
 */
import { z } from "zod";
import type { AgentBackend, AgentCatalog, CatalogFact } from "../../schemas/agents";
import type { HttpTransport } from "../http";
import { bridgeClaims } from "./claims";
import type { CapabilityDocuments } from "./environment";
import { bridgeRoutes as routes } from "./routes";

const ModelList = z.looseObject({
  data: z.array(z.looseObject({ id: z.string().min(1).max(256), backend: z.string().min(1).optional() })).max(1000),
});

type Doc = Record<string, unknown>;

/** A model route's harness: `codex/gpt-5` → `codex`. */
export function harnessOf(route: string): string {
  const slash = route.indexOf("/");
  return slash > 0 ? route.slice(0, slash) : route;
}
const profileOf = (doc: Doc): Record<string, unknown> | undefined =>
  typeof doc.profile === "object" && doc.profile !== null ? (doc.profile as Record<string, unknown>) : undefined;
const bool = (value: unknown, why: string): CatalogFact => (typeof value === "boolean" ? value : { unavailable: why });

export async function readCatalog(
  http: HttpTransport,
  documents: CapabilityDocuments,
  defaultModel: string | undefined,
): Promise<AgentCatalog> {
  const list = await http.json(routes.models(), ModelList, { retry: true }, "read the model catalog");
  const byHarness = new Map<string, string[]>();
  for (const model of list.data) {
    const harness = model.backend ?? harnessOf(model.id);
    byHarness.set(harness, [...(byHarness.get(harness) ?? []), model.id]);
  }
  const backends = await Promise.all(
    [...byHarness].map(async ([type, models]): Promise<AgentBackend> => {
      const first = models[0]!;
      let doc: Doc | null = null;
      let why = `the bridge gives no capability document for ${first}`;
      try {
        doc = await documents.read(first);
      } catch (err) {
        why = `the capability document of ${first} could not be read: ${err instanceof Error ? err.message : String(err)}`;
      }
      const profile = doc ? profileOf(doc) : undefined;
      const prompt =
        typeof profile?.systemPrompt === "object" && profile.systemPrompt !== null
          ? (profile.systemPrompt as Record<string, unknown>)
          : undefined;
      const notStated = doc ? `the capability document of ${first} does not state it` : why;
      return {
        type,
        models,
        defaultModel: defaultModel !== undefined && models.includes(defaultModel) ? defaultModel : null,
        supports: {
          interactions: doc ? bridgeClaims(doc).interactions : { unavailable: why },
          attachments: bool(profile?.mcp, notStated),
          systemPromptReplace: bool(prompt?.replace, notStated),
          systemPromptAppend: bool(prompt?.append, notStated),
          // Another model is another route, with its own session.
          perTurnModel: true,
        },
      };
    }),
  );
  return {
    provider: "cli-bridge",
    default: { backend: defaultModel ? harnessOf(defaultModel) : null, model: defaultModel ?? null },
    perTurnBackend: false,
    backends,
  };
}
