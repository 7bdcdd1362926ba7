/**
 * §3 the asks of a session: its outstanding interactions listed, an interaction answered (checked
 * against its request, answered once: the same answer again is acknowledged), and the plan
 * decisions [ours], which answer the session's outstanding plan ask. The run goes on according to
 * the answer (./runner.ts); what an answer is, ./asks.ts.
 */
import type { Context, Hono } from "hono";
import { API_PATHS, type ApiKit, jsonBody } from "./api-common";
import { type AskAnswer, sameAnswer } from "./asks";
import type { ExecutionRow } from "./store-schema";
import { InteractionAnswerBody, PlanApproveBody, PlanRejectBody } from "./wire";

export function registerInteractionRoutes(app: Hono, api: ApiKit): void {
  const { store, runner, variants, fail, invalid, runningSandbox } = api;

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
}
