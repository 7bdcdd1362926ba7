/**
 * §3 the agent's sessions in a sandbox: listed [ours], a session's state (its run in flight and its
 * latest), forked [ours] and deleted [ours], its runs cancelled. What a session holds is
 * ./store-sessions.ts.
 */
import type { Hono } from "hono";
import { API_PATHS, type ApiKit, apiNotFound, jsonBody } from "./api-common";
import { sessionStateBody } from "./variants";
import { ForkBody } from "./wire";

export function registerSessionRoutes(app: Hono, api: ApiKit): void {
  const { store, runner, variants, fail, invalid, runningSandbox } = api;

  app.get(API_PATHS.sessions, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const sessions = store.sessionSummaries(sb.id).map((r) => ({
      id: r.session_id,
      state: r.running ? "running" : "idle",
      updatedAt: new Date(r.updated).toISOString(),
    }));
    return c.json({ data: { sessions } });
  });

  app.get(API_PATHS.session, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const rows = store.sessionExecutions(sb.id, c.req.param("sid"));
    if (rows.length === 0) return fail(c, 404, "SESSION_NOT_FOUND", "session not found");
    const active = rows.find((r) => r.status === "running");
    return c.json(
      sessionStateBody(variants(), {
        state: active ? "running" : "idle",
        ...(active ? { activeExecutionId: active.id } : {}),
        latestExecutionId: rows[0]!.id,
      }),
    );
  });

  // §3 fork [ours]: copies the session's conversation up to a run into a new session under the
  // caller's id (the Sandbox sessions guide: `session(id).fork({ messageId })`). The same new id
  // and origin again is the same session (200); another origin under that id is a conflict.
  app.post(API_PATHS.fork, async (c) => {
    const v = variants();
    if (v.forkRoute === "missing") return apiNotFound(store, c);
    if (v.forkRoute === "not-implemented")
      return fail(c, 501, "NOT_IMPLEMENTED", "this deployment does not fork sessions");
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = ForkBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const source = c.req.param("sid");
    const { messageId, sessionId } = parsed.data;
    const history = store.sessionHistory(sb.id, source);
    if (history.length === 0) return fail(c, 404, "SESSION_NOT_FOUND", "no such session");
    if (!history.some((m) => m.executionId === messageId))
      return fail(c, 404, "MESSAGE_NOT_FOUND", `no message ${messageId} in session ${source}`);
    const answer = (status: 200 | 201) =>
      c.json({ data: { session: { id: sessionId, forkedFrom: { sessionId: source, messageId } } } }, status);
    const known = store.forkOf(sb.id, sessionId);
    if (known) {
      if (known.source !== source || known.messageId !== messageId)
        return fail(c, 409, "SESSION_EXISTS", `session ${sessionId} was forked from elsewhere`);
      store.count("sessions.forkReplayed");
      return answer(200);
    }
    if (store.countSessionExecutions(sb.id, sessionId) > 0)
      return fail(c, 409, "SESSION_EXISTS", `session ${sessionId} exists`);
    store.insertFork(sb.id, sessionId, source, messageId, Date.now());
    store.count("sessions.forked");
    return answer(201);
  });

  app.delete(API_PATHS.session, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const sid = c.req.param("sid");
    for (const exe of store.runningExecutions(sb.id, sid))
      runner.finish(exe, "cancelled", { error: "session deleted" });
    store.deleteSession(sb.id, sid);
    runner.schedule();
    return c.json({ data: { deleted: true } });
  });
}
