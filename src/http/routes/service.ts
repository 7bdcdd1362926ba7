/**
 * The service's own routes, public and unauthenticated: liveness and version. (The OpenAPI
 * document's route is declared beside the document, in ../openapi.ts.)
 */

import { HealthSchema } from "../../schemas/api";
import { VERSION } from "../../version";
import { isLocalDevelopment } from "../app-context";
import { DeclaredRoutes, json } from "../route-declaration";

export const serviceRoutes = new DeclaredRoutes();

serviceRoutes.serve(
  { method: "get", path: "/healthz", summary: "Liveness and version", answers: { 200: json(HealthSchema, "Alive") } },
  (c) => {
    const config = c.get("config");
    return c.json({
      ok: true as const,
      version: VERSION,
      provider: config.provider,
      devLogin: config.DEV_LOGIN && isLocalDevelopment(c),
    });
  },
);
