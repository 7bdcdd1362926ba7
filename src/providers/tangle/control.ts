/**
 * Commands about a dispatched run: cancel it (exactly the execution the ref names, safe to
 * repeat) and deliver an answer to one of its interactions. Each reads upstream's answer into
 * the seam's terms: a cancel effect, an acknowledgement status. Unconfirmed delivery is
 * `transport_failure`, never `accepted`.
 */
import { stripUndefined } from "../../lib/digest";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { AnswerDelivery, CancelOutcome, InteractionCommand } from "../provider";
import { decidePlan, isPlanAsk } from "./plans";
import { sandboxRoutes as routes } from "./routes";
import { AbortResponse, AnswerResponse } from "./wire";

export async function cancelRun(client: HttpTransport, ref: AgentExactRunControlRef): Promise<CancelOutcome> {
  try {
    const answer = await client.json(
      routes.abort(ref.environmentId, ref.sessionId),
      AbortResponse,
      // Naming the execution makes the abort exact and safe to repeat. The wire has no field for
      // a reason: the session keeps it.
      { body: { executionId: ref.executionId }, retry: true },
      "cancel run",
    );
    const why = answer.reason ?? answer.noopReason;
    return { effect: answer.cancelled ? "cancelled" : "not_live", ...(why ? { reason: why } : {}) };
  } catch (err) {
    // 404: the platform does not know the session, so nothing runs there to cancel.
    if (err instanceof ProviderError && err.code === "not_found")
      return { effect: "not_live", reason: "unknown_session" };
    throw err;
  }
}

export async function answerInteraction(
  client: HttpTransport,
  ref: AgentExactRunControlRef,
  command: InteractionCommand,
): Promise<AnswerDelivery> {
  if (isPlanAsk(command.request)) return decidePlan(client, ref, command);
  const body = stripUndefined({ id: command.binding.interactionId, outcome: command.outcome, data: command.data });
  try {
    // Not retried here: whether a repeat is safe depends on the deployment recording answers
    // (interactions.responseDedupe), which the session checks before answering.
    const response = await client.send(
      routes.answerInteraction(ref.environmentId, ref.sessionId),
      { body },
      "answer interaction",
    );
    // A 2xx is delivery; a deployment that says the same answer was already recorded is told apart.
    const answer = AnswerResponse.safeParse(await response.json().catch(() => null));
    return {
      status:
        answer.success && answer.data.data?.status === "already_resolved_same" ? "already_resolved_same" : "accepted",
    };
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.code === "conflict")
      return { status: "already_resolved_different", message: "the deployment already holds a different answer" };
    if (err.code === "not_found" && err.options.wireCode?.toUpperCase() === "SESSION_NOT_FOUND") {
      return { status: "unknown_run", message: "the deployment no longer knows this session" };
    }
    if (err.code === "not_found")
      return { status: "unknown_interaction", message: "the deployment no longer knows this interaction" };
    if (err.code === "invalid_request") return { status: "invalid_response", message: err.message };
    // The deployment does not take answers at all: that is a refusal, not a failure to retry.
    if (err.code === "capability_denied")
      throw err.as("capability_denied", "this deployment does not take interaction answers (501)");
    // Delivery is unconfirmed: never `accepted`.
    return { status: "transport_failure", message: `delivery could not be confirmed: ${err.message}`, retryable: true };
  }
}
