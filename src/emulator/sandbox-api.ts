/**
 * The Sandbox HTTP API of docs/sandbox-wire.md §2–3, as the emulator serves it: the control plane
 * (`/v1/sandboxes…`) and the runtime proxy (`/v1/sandboxes/{id}/runtime…`). Every call is
 * authenticated, counted by route, and subject to injected failures (`failNext`).
 *
 * Over 400 lines on purpose: one block per route in the order of the wire document's tables, so
 * the served API is read against docs/sandbox-wire.md in one file; what a route does beyond
 * shaping its answer lives in ./runner.ts, ./sandboxes.ts and ./asks.ts.
 */
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { type AskAnswer, sameAnswer } from "./asks";
import type { Runner } from "./runner";
import type { Sandboxes } from "./sandboxes";
import type { EmulatorStore } from "./store";
import type { ExecutionRow, SandboxRow } from "./store-schema";
import type { StreamHub } from "./streams";
import { abortBody, admissionFrame, effectiveVariants, errorBody, sessionStateBody, type Variants } from "./variants";
import {
  AbortBody,
  type AccountUsageView,
  BackendModelObject,
  CreateSandboxBody,
  ForkBody,
  InteractionAnswerBody,
  PlanApproveBody,
  PlanRejectBody,
  RunStreamBody,
  RunStreamBodyHeaderId,
  type SandboxView,
} from "./wire";

export interface SandboxApiDeps {
  store: EmulatorStore;
  sandboxes: Sandboxes;
  runner: Runner;
  streams: StreamHub;
}

/** The route table: every path the emulator serves of the Sandbox API, in one place. */
const API_PATHS = {
  sandboxes: "/v1/sandboxes",
  sandbox: "/v1/sandboxes/:id",
  resume: "/v1/sandboxes/:id/resume",
  stop: "/v1/sandboxes/:id/stop",
  accountUsage: "/v1/account/usage",
  capabilities: "/v1/sandboxes/:id/runtime/capabilities",
  runStream: "/v1/sandboxes/:id/runtime/agents/run/stream",
  sessions: "/v1/sandboxes/:id/runtime/agents/sessions",
  session: "/v1/sandboxes/:id/runtime/agents/sessions/:sid",
  abort: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/abort",
  fork: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/fork",
  interactions: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/interactions",
  planApprove: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/plan/approve",
  planReject: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/plan/reject",
  completedTurn: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/turns/:turnId",
  executionResult: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/executions/:eid/result",
} as const;

/** A stable name for a route, for counters (`requests.<key>`) and targeted fault injection. */
function routeKey(method: string, path: string): string {
  if (path === API_PATHS.accountUsage) return "account.usage";
  const p = path.replace(/^\/v1\/sandboxes/, "");
  if (p === "" || p === "/") return method === "POST" ? "sandboxes.create" : "sandboxes.list";
  const runtime = p.match(/^\/[^/]+\/runtime(\/.*)$/);
  if (!runtime) {
    const action = p.match(/^\/[^/]+\/(resume|stop)$/);
    if (action) return `sandboxes.${action[1]}`;
    return method === "DELETE" ? "sandboxes.delete" : "sandboxes.get";
  }
  const rest = runtime[1]!;
  if (rest === "/capabilities") return "runtime.capabilities";
  if (rest === "/agents/run/stream") return "runtime.run";
  if (rest === "/agents/sessions") return "runtime.sessions.list";
  const m = rest.match(/^\/agents\/sessions\/[^/]+(?:\/(abort|fork|interactions|plan|turns|executions))?/);
  if (m)
    return m[1] ? `runtime.session.${m[1]}` : method === "DELETE" ? "runtime.session.delete" : "runtime.session.get";
  return "runtime.other";
}

/** Every flag the emulator serves; a `capabilities` fault turns some off. */
const FULL_CAPABILITIES = {
  schema: 1,
  agentInterface: "1.6.0",
  sidecarVersion: "emulator",
  dispatch: { runControlRef: true, executionIdOnAdmission: true },
  cancel: { canonicalRunCancellation: true, digestBound: true, idempotent: true },
  runs: { executionScopedStatus: true, eventReplay: true },
  interactions: { responseDedupe: true },
} as const;

async function jsonBody(c: Context, orElse?: unknown): Promise<unknown> {
  return c.req.json().catch(() => orElse);
}

export function registerSandboxApi(app: Hono, deps: SandboxApiDeps): void {
  const { store, sandboxes, runner, streams } = deps;
  const variants = (): Variants => effectiveVariants(store.variants());
  const fail = (
    c: Context,
    status: number,
    code: string,
    message: string,
    extra?: Record<string, unknown>,
    headers?: Record<string, string>,
  ) => c.json(errorBody(variants(), code, message, extra), status as ContentfulStatusCode, headers);
  const invalid = (c: Context, code: string, error: z.ZodError) => fail(c, 400, code, z.prettifyError(error));
  const notFound = (c: Context) => fail(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");

  /** The sandbox of a runtime route, which must be running. */
  const runningSandbox = (c: Context): SandboxRow | Response => {
    const row = sandboxes.get(c.req.param("id") ?? "");
    if (!row) return notFound(c);
    if (row.status !== "running") return fail(c, 409, "SANDBOX_NOT_RUNNING", `sandbox is ${row.status}`);
    // A runtime call is the sandbox's use: its idle timeout counts from here.
    sandboxes.touch(row);
    return row;
  };
  const view = (row: SandboxRow): SandboxView => sandboxes.view(row);

  // Authentication, counting and injected failures, for every Sandbox API call.
  app.use("/v1/*", async (c, next) => {
    const auth = c.req.header("authorization") ?? "";
    if (!/^Bearer \S+$/.test(auth)) return fail(c, 401, "UNAUTHORIZED", "missing or malformed bearer token");
    const route = routeKey(c.req.method, c.req.path);
    store.count(`requests.${route}`);
    const faults = store.faults();
    const failNext = faults.failNext;
    if (failNext && failNext.count > 0 && (!failNext.route || route.startsWith(failNext.route))) {
      store.setFaults({
        ...faults,
        failNext: failNext.count > 1 ? { ...failNext, count: failNext.count - 1 } : undefined,
      });
      store.count("faults.injected");
      const headers: Record<string, string> = {};
      if (failNext.retryAfterSeconds !== undefined) headers["retry-after"] = String(failNext.retryAfterSeconds);
      if (failNext.nonJson)
        return c.html(
          "<html><body><h1>502 Bad Gateway</h1></body></html>",
          failNext.status as ContentfulStatusCode,
          headers,
        );
      return fail(c, failNext.status, "INJECTED_FAILURE", `injected ${failNext.status}`, undefined, headers);
    }
    await next();
  });

  // ---------------------------------------------------------------- §2 control plane

  app.post(API_PATHS.sandboxes, async (c) => {
    const parsed = CreateSandboxBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const key = parsed.data.idempotencyKey;
    if (key) {
      // A repeated key answers the same sandbox: 200 (this call created nothing), or 201 like a fresh one (variant).
      const existing = store.sandboxIdByIdempotencyKey(key);
      const row = existing ? sandboxes.get(existing) : undefined;
      if (row) {
        store.count("sandboxes.replayed");
        return c.json(view(row), variants().createReplay === "201" ? 201 : 200);
      }
    }
    const row = sandboxes.create(parsed.data);
    store.count("sandboxes.created");
    return c.json(view(row), 201);
  });

  app.get(API_PATHS.sandboxes, (c) => {
    const status = c.req.query("status");
    const limit = Math.min(Number(c.req.query("limit") ?? 100) || 100, 1000);
    const offset = Number(c.req.query("offset") ?? 0) || 0;
    const rows = store
      .sandboxIds(limit, offset)
      .map((id) => sandboxes.get(id))
      .filter((r): r is SandboxRow => !!r && (!status || r.status === status));
    return c.json({ sandboxes: rows.map(view) });
  });

  app.get(API_PATHS.sandbox, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    return row ? c.json(view(row)) : notFound(c);
  });

  app.post(API_PATHS.resume, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    if (!row) return notFound(c);
    if (row.status === "stopped") {
      sandboxes.resume(row);
      store.count("sandboxes.resumed");
    } else if (row.status !== "running" && row.status !== "provisioning") {
      return fail(c, 409, "INVALID_STATE", `cannot resume a ${row.status} sandbox`);
    }
    return c.json(view(sandboxes.get(row.id)!));
  });

  app.post(API_PATHS.stop, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    if (!row) return notFound(c);
    sandboxes.stop(row);
    runner.sandboxStopped(row.id);
    return c.json(view(sandboxes.get(row.id)!));
  });

  app.delete(API_PATHS.sandbox, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    if (!row) return notFound(c);
    store.deleteSandbox(row.id);
    for (const exe of store.runningExecutions(row.id)) runner.finish(exe, "cancelled", { error: "sandbox deleted" });
    runner.schedule();
    store.count("sandboxes.deleted");
    return c.json({ success: true });
  });

  // §2 the account's usage [ours] (the SDK's `client.usage()`); variant `accountUsage: "missing"` serves none.
  app.get(API_PATHS.accountUsage, (c) => {
    if (variants().accountUsage === "missing") return fail(c, 404, "NOT_FOUND", "no route GET /v1/account/usage");
    const usage: AccountUsageView = { activeSandboxes: store.runningSandboxCount() };
    return c.json(usage);
  });

  // ---------------------------------------------------------------- §3 runtime proxy

  app.get(API_PATHS.capabilities, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const faults = store.faults();
    if (faults.capabilitiesFail) return fail(c, 500, "INTERNAL", "capability discovery failed");
    const doc: Record<string, unknown> = structuredClone(FULL_CAPABILITIES);
    for (const [group, flags] of Object.entries(faults.capabilities ?? {})) {
      if (flags === false) {
        delete doc[group];
        continue;
      }
      const merged: Record<string, boolean> = { ...((doc[group] as Record<string, boolean> | undefined) ?? {}) };
      for (const [flag, value] of Object.entries(flags)) {
        if (value) merged[flag] = true;
        else delete merged[flag];
      }
      doc[group] = merged;
    }
    Object.assign(doc, faults.capabilitiesExtra);
    return c.json(doc);
  });

  app.post(API_PATHS.runStream, async (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const v = variants();
    // Where the requested execution id travels: the body (default) or only the X-Execution-ID header.
    const byHeader = v.dispatchExecutionId === "header";
    const parsed = (byHeader ? RunStreamBodyHeaderId : RunStreamBody).safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const body: RunStreamBody = parsed.data;
    const executionHeader = c.req.header("x-execution-id") || undefined;
    const lastEventId = c.req.header("last-event-id");

    if (body.message === "" && executionHeader) {
      // Exact replay of one execution, strictly after the cursor; never starts work.
      store.count("runs.replays");
      const exe = store.execution(executionHeader);
      if (!exe || exe.sandbox_id !== sb.id || exe.session_id !== body.sessionId)
        return fail(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
      const cursor = lastEventId === undefined || lastEventId === "" ? 0 : Number(lastEventId);
      const last = store.lastFrameId(exe.id);
      if (!Number.isInteger(cursor) || cursor < 0 || cursor > last) {
        return fail(c, 409, "INVALID_CURSOR", `cursor ${lastEventId} is not in this execution`, {
          firstAvailableEventId: "1",
          lastEventId: String(last),
        });
      }
      return streams.open(exe, { cursor });
    }
    if (body.message === "") return fail(c, 400, "VALIDATION_ERROR", "message is required to start a run");

    // The requested execution id: the X-Execution-ID header (header variant), or the body's
    // executionId, which the header may repeat but not contradict.
    if (!byHeader && body.executionId && executionHeader && body.executionId !== executionHeader) {
      return fail(
        c,
        400,
        "VALIDATION_ERROR",
        `executionId ${body.executionId} and X-Execution-ID ${executionHeader} name different executions`,
      );
    }
    const requested = byHeader ? executionHeader : (body.executionId ?? executionHeader);
    // §6 the run-control ref [ours]: when given it names the requested run; the variant may require it.
    const ref = body.runControlRef;
    if (ref && ref.executionId !== requested) {
      return fail(
        c,
        400,
        "VALIDATION_ERROR",
        `runControlRef.executionId ${ref.executionId} is not the requested execution ${requested ?? "(none)"}`,
      );
    }
    if (!ref && v.runControlRef === "required") {
      return fail(
        c,
        400,
        "VALIDATION_ERROR",
        "runControlRef is required: { runId, provider, environmentId, sessionId, executionId }",
      );
    }
    const model = body.backend?.model;
    if (v.backendModel === "object" && model !== undefined && !BackendModelObject.safeParse(model).success) {
      return fail(c, 400, "VALIDATION_ERROR", "backend.model must be an object { provider?, model }");
    }
    store.count("runs.dispatches");

    // Idempotent dispatch: the same execution id or the same (session, turn) attaches to the existing run.
    const existing =
      (requested ? store.execution(requested) : undefined) ??
      (body.turnId ? store.executionByTurn(sb.id, body.sessionId, body.turnId) : undefined);
    if (existing) {
      // Nothing starts: the run is in flight, or its turn already ended (the receipt says dispatched: false).
      store.count("runs.attached");
      const prefix = admissionFrame(v, admitted(existing), { alreadyExisted: true, dispatched: false });
      return streams.open(existing, { cursor: store.lastFrameId(existing.id), prefix });
    }
    const busy = store.runningExecutions(sb.id, body.sessionId)[0];
    if (busy && v.dispatched === "receipt") {
      // The receipt of the run in flight on the session: this call started nothing.
      store.count("runs.notDispatched");
      return streams.once(admissionFrame(v, admitted(busy), { alreadyExisted: false, dispatched: false }));
    }
    if (busy) return fail(c, 409, "SESSION_BUSY", `session ${body.sessionId} is running execution ${busy.id}`);

    const created = JSON.parse(sb.body) as { backend?: { type?: string } };
    const exe = runner.start({
      sandboxId: sb.id,
      sessionId: body.sessionId,
      turnId: body.turnId,
      message: body.message,
      // The posture is read where the deployment reads it; the other place is accepted and ignored.
      interactions: v.interactionsAt === "backend" ? body.backend?.interactions : body.interactions,
      backend: body.backend?.type ?? created.backend?.type ?? "opencode",
      requestedExecutionId: requested,
      request: body,
      history: store.sessionHistory(sb.id, body.sessionId).map((m) => m.message),
    });
    const faults = store.faults();
    if (faults.withholdAdmission) {
      // The run is real and runs; this dispatch just never hears of it.
      const { withholdAdmission: _w, ...rest } = faults;
      store.setFaults(rest);
      store.count("faults.injected");
      return streams.openSilent();
    }
    return streams.open(exe, { cursor: 0 });
  });

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

  app.post(API_PATHS.abort, async (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = AbortBody.safeParse(await jsonBody(c, {}));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const running = store.runningExecutions(sb.id, c.req.param("sid"))[0];
    if (!running || (parsed.data.executionId && parsed.data.executionId !== running.id)) {
      return c.json(abortBody(variants(), false, "not_running"));
    }
    runner.cancel(running, "interrupted");
    runner.schedule();
    return c.json(abortBody(variants(), true));
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

  app.get(API_PATHS.interactions, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const interactions = store.outstandingAsks(sb.id, c.req.param("sid")).map((a) => JSON.parse(a.request) as unknown);
    return c.json({ data: { interactions } });
  });

  /** Delivers an answer to an outstanding ask of this session; the run goes on according to it. */
  const deliver = (exe: ExecutionRow, interactionId: string, answer: AskAnswer) => {
    store.count("interactions.delivered");
    runner.resolveAsk(exe, interactionId, "answered", answer);
    runner.schedule();
  };

  app.post(API_PATHS.interactions, async (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const v = variants();
    if (v.answerRoute === "not-implemented")
      return fail(c, 501, "NOT_IMPLEMENTED", "this deployment does not answer interactions");
    const parsed = InteractionAnswerBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "INVALID_INTERACTION_ANSWER", parsed.error);
    const answer = parsed.data;
    const sid = c.req.param("sid");
    if (store.countSessionExecutions(sb.id, sid) === 0) return fail(c, 404, "SESSION_NOT_FOUND", "no such session");
    const ask = store.ask(answer.id);
    const exe = ask ? store.execution(ask.execution_id) : undefined;
    // An ask only the plan routes decide was never offered as an interaction.
    if (!ask || !exe || exe.sandbox_id !== sb.id || ask.session_id !== sid || ask.via !== "interaction") {
      return fail(c, 404, "INTERACTION_NOT_FOUND", "no such interaction in this session");
    }
    if (ask.status === "answered" && v.answeredAsk === "gone") {
      // This deployment forgets an ask once it is answered.
      return fail(c, 404, "INTERACTION_NOT_FOUND", "no such interaction in this session");
    }
    store.count("interactions.answers");
    const given: AskAnswer = { outcome: answer.outcome, ...(answer.data ? { data: answer.data } : {}) };
    if (ask.status === "answered") {
      // The deployment records answers: the same answer again is acknowledged, another is refused.
      if (sameAnswer(JSON.parse(ask.answer!), given)) return c.json({ data: { status: "already_resolved_same" } });
      return fail(c, 409, "ALREADY_ANSWERED", "this interaction was already answered differently");
    }
    if (ask.status !== "outstanding") return fail(c, 404, "INTERACTION_GONE", `this interaction is ${ask.status}`);
    const request = JSON.parse(ask.request) as {
      answerSpec?: { fields?: Array<{ name: string; required?: boolean }> };
    };
    if (answer.outcome === "accepted") {
      const missing = (request.answerSpec?.fields ?? [])
        .filter((f) => f.required && answer.data?.[f.name] === undefined)
        .map((f) => f.name);
      if (missing.length)
        return fail(c, 400, "INVALID_INTERACTION_ANSWER", `missing required fields: ${missing.join(", ")}`);
    }
    deliver(exe, answer.id, given);
    const faults = store.faults();
    if (faults.answerDeliveryUnknown) {
      const left = faults.answerDeliveryUnknown - 1;
      const { answerDeliveryUnknown: _n, ...rest } = faults;
      store.setFaults(left > 0 ? { ...rest, answerDeliveryUnknown: left } : rest);
      return fail(c, 503, "UNAVAILABLE", "the answer was recorded but its delivery could not be confirmed");
    }
    return c.json({ data: { status: "accepted" } });
  });

  /** §3 plan decision [ours]: answers the session's outstanding plan ask (an interaction, or one only these routes decide). */
  const decidePlan = (c: Context, data: Record<string, unknown>) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const sid = c.req.param("sid") ?? "";
    if (store.countSessionExecutions(sb.id, sid) === 0) return fail(c, 404, "SESSION_NOT_FOUND", "no such session");
    const ask = store
      .outstandingAsks(sb.id, sid, true)
      .find((a) => (JSON.parse(a.request) as { kind?: string }).kind === "plan");
    const exe = ask ? store.execution(ask.execution_id) : undefined;
    if (!ask || !exe) return fail(c, 409, "NO_PLAN_PENDING", "no plan is waiting for a decision in this session");
    store.count("plans.decisions");
    deliver(exe, ask.interaction_id, { outcome: "accepted", data });
    return c.json({ data: { status: "accepted" } });
  };

  app.post(API_PATHS.planApprove, async (c) => {
    const parsed = PlanApproveBody.safeParse(await jsonBody(c, {}));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    return decidePlan(c, { decision: "approve" });
  });

  app.post(API_PATHS.planReject, async (c) => {
    const parsed = PlanRejectBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    return decidePlan(c, { decision: "reject", feedback: parsed.data.feedback });
  });

  app.get(API_PATHS.completedTurn, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const exe = store.finishedExecutionByTurn(sb.id, c.req.param("sid"), c.req.param("turnId"));
    if (!exe) return fail(c, 404, "TURN_NOT_FOUND", "no completed turn with this id");
    return c.json({
      turnId: exe.turn_id,
      sessionId: exe.session_id,
      executionId: exe.id,
      result: runner.promptResult(exe),
    });
  });

  app.get(API_PATHS.executionResult, (c) => {
    // A deployment without this [ours] route answers as for any unknown path.
    if (variants().resultRoute === "missing") return apiNotFound(store, c);
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const exe = store.execution(c.req.param("eid"));
    if (!exe || exe.sandbox_id !== sb.id || exe.session_id !== c.req.param("sid"))
      return fail(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
    if (exe.status === "running") return fail(c, 409, "NOT_FINISHED", "execution is still running");
    return c.json(runner.promptResult(exe));
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

/** An execution as its admission frame names it. */
function admitted(exe: ExecutionRow): { executionId: string; sessionId: string; turnId?: string; status: string } {
  return {
    executionId: exe.id,
    sessionId: exe.session_id,
    ...(exe.turn_id ? { turnId: exe.turn_id } : {}),
    status: exe.status,
  };
}

/** The error answer of an unknown path under the Sandbox API (in the error-body variant in force). */
export function apiNotFound(store: EmulatorStore, c: Context): Response {
  return c.json(
    errorBody(effectiveVariants(store.variants()), "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`),
    404,
  );
}
