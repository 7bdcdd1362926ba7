/**
 * §3 a run: started by `POST …/agents/run/stream` (its execution id from the body or the header,
 * its run-control ref, its model; a dispatch of a run that exists attaches to it; a busy session
 * refuses or answers the receipt of its run in flight), replayed after a cursor by the same route,
 * interrupted (`…/abort`), and its result read (the completed-turn and execution-result routes).
 * The run itself is ./runner.ts; its stream ./streams.ts.
 */

import type { Hono } from "hono";
import { API_PATHS, type ApiKit, apiNotFound, jsonBody } from "./api-common";
import { knownBackend, takesAttachments } from "./catalog";
import type { ExecutionRow } from "./store-schema";
import { abortBody, admissionFrame } from "./variants";
import { AbortBody, BackendModelObject, RunStreamBody, RunStreamBodyHeaderId } from "./wire";
import { resolvePath } from "./workspace-path";

export function registerRunRoutes(app: Hono, api: ApiKit): void {
  const { store, runner, streams, variants, fail, invalid, runningSandbox } = api;

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
    // A file part names a file of this sandbox's workspace: one that is not there is refused.
    for (const part of body.parts ?? []) {
      if (part.type !== "file") continue;
      const resolved = resolvePath(decodeURIComponent(part.url.slice("file://".length)));
      if (!resolved.ok || !api.workspace.read(sb.id, resolved.rel))
        return fail(c, 400, "FILE_NOT_FOUND", `the file part names no file of the workspace: ${part.url}`);
    }

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
    // A backend the catalog does not have is refused, as a deployment refuses one it cannot run.
    if (body.backend?.type !== undefined && !knownBackend(body.backend.type))
      return fail(c, 400, "VALIDATION_ERROR", `backend.type ${body.backend.type} is not in the backend catalog`);
    const runType =
      body.backend?.type ?? (JSON.parse(sb.body) as { backend?: { type?: string } }).backend?.type ?? "opencode";
    if (body.backend?.runtimeAttachments?.length && !takesAttachments(runType))
      return fail(c, 400, "VALIDATION_ERROR", `backend ${runType} does not support runtimeAttachments`);
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
      ...(modelName(body.backend?.model) ? { model: modelName(body.backend?.model) } : {}),
      dispatched: dispatchedWith(body.backend),
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

/** A dispatch's `backend.model` as a name (`provider/model`), whichever form it came in. */
function modelName(model: unknown): string | undefined {
  if (typeof model === "string") return model;
  const parsed = BackendModelObject.safeParse(model);
  if (!parsed.success) return undefined;
  return parsed.data.provider ? `${parsed.data.provider}/${parsed.data.model}` : parsed.data.model;
}

/**
 * What [whoami] says of a dispatch beyond its backend and model: the session credential (its
 * provider and endpoint, and that a key came, never the key), the profile's system prompt and the
 * runtime attachments (their names, and which came with auth). Nothing secret is kept.
 */
function dispatchedWith(backend: RunStreamBody["backend"]): string[] {
  const out: string[] = [];
  const model = backend?.model;
  if (model && typeof model === "object") {
    const m = model as Record<string, unknown>;
    if (typeof m.apiKey === "string")
      out.push(
        `credential ${String(m.provider ?? "?")}${typeof m.baseUrl === "string" ? ` at ${m.baseUrl}` : ""} (key set)`,
      );
  }
  const prompt = (backend?.profile as { prompt?: Record<string, unknown> } | undefined)?.prompt;
  if (typeof prompt?.systemPrompt === "string") out.push(`system prompt replaced: ${prompt.systemPrompt}`);
  if (typeof prompt?.appendSystemPrompt === "string") out.push(`appended: ${prompt.appendSystemPrompt}`);
  const attachments = backend?.runtimeAttachments ?? [];
  if (attachments.length > 0)
    out.push(`attachments ${attachments.map((a) => `${a.name}${a.headers ? " (auth)" : ""}`).join(", ")}`);
  return out;
}
