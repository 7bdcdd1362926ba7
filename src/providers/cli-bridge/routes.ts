/**
 * Every CLI Bridge route this client calls, in one table (docs/cli-bridge-wire.md). Correct a
 * path here and nowhere else.
 */
import type { Route } from "../http";

const enc = encodeURIComponent;

export const bridgeRoutes = {
  health: (): Route => ({ method: "GET", path: "/health" }),
  capabilities: (): Route => ({ method: "GET", path: "/v1/capabilities" }),
  models: (): Route => ({ method: "GET", path: "/v1/models" }),
  chat: (): Route => ({ method: "POST", path: "/v1/chat/completions" }),
  run: (runId: string): Route => ({ method: "GET", path: `/v1/runs/${enc(runId)}` }),
  runEvents: (runId: string): Route => ({ method: "GET", path: `/v1/runs/${enc(runId)}/events` }),
  cancel: (runId: string): Route => ({ method: "POST", path: `/v1/runs/${enc(runId)}/cancel` }),
  respond: (runId: string, interactionId: string): Route => ({
    method: "POST",
    path: `/v1/runs/${enc(runId)}/interactions/${enc(interactionId)}/respond`,
  }),
  createSession: (): Route => ({ method: "POST", path: "/v1/sessions" }),
  turns: (sessionId: string): Route => ({ method: "POST", path: `/v1/sessions/${enc(sessionId)}/turns` }),
  closeSession: (sessionId: string): Route => ({ method: "POST", path: `/v1/sessions/${enc(sessionId)}/close` }),
  session: (sessionId: string): Route => ({ method: "GET", path: `/v1/sessions/${enc(sessionId)}` }),
} as const;
