/**
 * Held runs: a message with `[hold]` (script.ts marks the frame) makes its run stop after its first step (after the step's
 * `step-finish` frame, or where that frame would be when the backend forwards no step usage),
 * before the answer's step begins, until a control call releases it. While a run is held nothing
 * of it moves, whatever the clock or the machine's load: a test that asserts something about a run
 * in flight (a reader joining it, a queued turn still queued behind it, a cancel or a budget stop
 * landing before its end, an ask's retry before the run ends) holds it there instead of racing its
 * frames. A held run is in flight like any other: a cancel, an interrupt or its sandbox's end ends it.
 *
 *   GET  /_emulator/executions/{id}/hold     { held, status }
 *   POST /_emulator/executions/{id}/release  {} → { ok: true }: the run goes on from where it stopped
 *                                             (its next frame at once); 409 EXECUTION_NOT_HELD
 */
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import type { Runner } from "./runner";
import type { EmulatorStore } from "./store";

const ReleaseBody = z.strictObject({});

function holdError(c: Context, status: number, code: string, message: string): Response {
  return c.json({ error: { code, message } }, status as ContentfulStatusCode);
}

export function registerHoldRoutes(app: Hono, deps: { store: EmulatorStore; runner: Runner }): void {
  const { store, runner } = deps;

  app.get("/_emulator/executions/:id/hold", (c) => {
    const exe = store.execution(c.req.param("id"));
    if (!exe) return holdError(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
    return c.json({ held: runner.held(exe), status: exe.status });
  });

  app.post("/_emulator/executions/:id/release", async (c) => {
    const parsed = ReleaseBody.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) return holdError(c, 400, "INVALID_BODY", "release takes an empty JSON object: {}");
    const exe = store.execution(c.req.param("id"));
    if (!exe) return holdError(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
    if (!runner.held(exe))
      return holdError(
        c,
        409,
        "EXECUTION_NOT_HELD",
        `execution ${exe.id} is not held (${exe.status === "running" ? "it has not reached its hold, or was released" : exe.status})`,
      );
    runner.release(exe);
    return c.json({ ok: true });
  });
}
