/**
 * §12 the agent's own TUI, after `/runtime` (docs/sandbox-wire.md): start (or find) a session's
 * TUI, its status, a control claim (compare-and-swap of its generation), and stop. Its PTY is a
 * terminal socket (./api-terminals.ts) on the connection id the start answers; what it draws is
 * ./tui.ts. Variant `terminalRoutes: "missing"`: every route 404 `NOT_FOUND`.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { API_PATHS, type ApiKit, apiNotFound, jsonBody } from "./api-common";
import type { Incarnation } from "./tui";

const StartBody = z.strictObject({
  idempotencyKey: z.string().min(1).max(200),
  cols: z.number().int().min(1).max(1000).optional(),
  rows: z.number().int().min(1).max(1000).optional(),
});
const ControlBody = z.strictObject({
  operationId: z.string().min(1).max(200),
  holderId: z.string().min(1).max(200),
  expectedGeneration: z.number().int().nonnegative(),
});
const StopBody = z.strictObject({ generation: z.number().int().nonnegative() });

/** Where a TUI's socket is, under the sidecar proxy. */
const streamUrl = (inc: Incarnation) => `/v1/sidecar-proxy/${inc.sandboxId}/terminals/${inc.connectionId}/ws`;

export function registerInteractiveRoutes(app: Hono, api: ApiKit): void {
  const { store, interactives, terminals, variants, fail, invalid, runningSandbox } = api;

  /** The running sandbox of a TUI route, or the error answer (404 first without the routes). */
  const sandbox = (c: Context) => {
    if (variants().terminalRoutes === "missing") return apiNotFound(store, c);
    return runningSandbox(c);
  };

  app.post(API_PATHS.interactive, async (c) => {
    const sb = sandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = StartBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const sid = c.req.param("sid") ?? "";
    const found = interactives.get(sb.id, sid);
    const started = (inc: Incarnation) => ({
      data: {
        sessionId: sid,
        incarnationId: inc.incarnationId,
        startedAt: new Date(inc.startedAt).toISOString(),
        connectionId: inc.connectionId,
        streamUrl: streamUrl(inc),
      },
    });
    if (found?.status === "running") return c.json(started(found), 200);
    const busy = store.runningExecutions(sb.id, sid)[0];
    if (busy) return fail(c, 409, "SESSION_BUSY", `session ${sid} is running execution ${busy.id}`);
    store.count("interactive.started");
    return c.json(started(interactives.start(sb.id, sid, parsed.data.idempotencyKey)), 201);
  });

  app.get(API_PATHS.interactive, (c) => {
    const sb = sandbox(c);
    if (sb instanceof Response) return sb;
    const inc = interactives.get(sb.id, c.req.param("sid") ?? "");
    if (!inc) return fail(c, 404, "INTERACTIVE_NOT_FOUND", "this session's TUI was never started");
    if (inc.status === "running")
      return c.json({
        data: {
          status: "running",
          connectionId: inc.connectionId,
          streamUrl: streamUrl(inc),
          generation: inc.generation,
        },
      });
    return c.json({
      data: {
        status: "exited",
        endedAt: new Date(inc.endedAt ?? Date.now()).toISOString(),
        ...(inc.exitCode !== undefined ? { exitCode: inc.exitCode } : {}),
        reason: inc.reason,
      },
    });
  });

  app.post(API_PATHS.interactiveControl, async (c) => {
    const sb = sandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = ControlBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const inc = interactives.get(sb.id, c.req.param("sid") ?? "");
    if (inc?.status !== "running") return fail(c, 404, "INTERACTIVE_NOT_FOUND", "this session's TUI is not running");
    const { operationId, holderId, expectedGeneration } = parsed.data;
    const seen = inc.operations.get(operationId);
    if (seen) {
      if (seen.holderId === holderId && seen.expectedGeneration === expectedGeneration)
        return c.json({ data: { status: "replayed", generation: seen.generation } });
      return c.json({ data: { status: "conflict", generation: inc.generation, conflictReason: "operation_reuse" } });
    }
    if (expectedGeneration !== inc.generation)
      return c.json({
        data: { status: "conflict", generation: inc.generation, conflictReason: "generation_mismatch" },
      });
    inc.generation++;
    inc.operations.set(operationId, { holderId, expectedGeneration, generation: inc.generation });
    store.count("interactive.claims");
    return c.json({ data: { status: "accepted", generation: inc.generation } });
  });

  app.post(API_PATHS.interactiveStop, async (c) => {
    const sb = sandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = StopBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const inc = interactives.get(sb.id, c.req.param("sid") ?? "");
    if (!inc) return fail(c, 404, "INTERACTIVE_NOT_FOUND", "this session's TUI was never started");
    if (inc.status === "running") {
      if (parsed.data.generation !== inc.generation)
        return fail(c, 409, "GENERATION_MISMATCH", `the held generation is ${inc.generation}`);
      interactives.end(inc, "stopped");
      terminals.end(sb.id, inc.connectionId);
    }
    return c.json({ data: { status: "stopped" } });
  });
}
