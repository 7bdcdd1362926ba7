/**
 * Commands about a dispatched run: cancel it (digest-bound under an operation id, and confirmed
 * or not by the bridge) and deliver an answer to one of its interactions (the bridge's own
 * binding, select answers as lists). Each reads the bridge's answer into the seam's terms: a
 * cancel effect, an acknowledgement status. Unconfirmed delivery is `transport_failure`, never
 * `accepted`.
 */
import type { z } from "zod";
import { canonicalDigest, stripUndefined } from "../../lib/digest";
import {
  type AgentExactRunControlRef,
  InteractionAcknowledgement,
  type InteractionRequest,
} from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { AnswerDelivery, CancelOutcome, InteractionCommand } from "../provider";
import { readSnapshot } from "./result";
import { bridgeRoutes as routes } from "./routes";
import { CancelAnswer, RespondAnswer, RunSnapshot } from "./wire";
import { isNotFound, refine } from "./wire-errors";

/** How long a cancel waits for the bridge to confirm the run terminal. */
const CANCEL_WAIT_MS = 2_000;

export async function cancelRun(
  http: HttpTransport,
  ref: AgentExactRunControlRef,
  request: { operationId?: string; reason?: string } = {},
): Promise<CancelOutcome> {
  // Digest-bound under an operation id; without one, the legacy form (no body at all).
  let body: Record<string, unknown> | undefined;
  if (request.operationId) {
    const command = stripUndefined({ operationId: request.operationId, run: ref, reason: request.reason });
    body = { ...command, requestDigest: await canonicalDigest(command) };
  }
  let answer: z.infer<typeof CancelAnswer>;
  try {
    answer = await http.json(
      routes.cancel(ref.runId),
      CancelAnswer,
      { ...(body ? { body } : {}), query: { wait_ms: String(CANCEL_WAIT_MS) }, retry: true },
      "cancel run",
    );
  } catch (err) {
    if (isNotFound(err)) return { effect: "not_live", reason: "unknown_run" };
    throw refine(err);
  }
  if (answer.effect === "cancelled" || answer.cancelled === true) return { effect: "cancelled" };
  if (answer.effect === "not_live") return { effect: "not_live" };
  if (answer.terminal === true) return { effect: "not_live", reason: "the run had already ended" };
  // Accepted but not confirmed: a run the bridge lost in a restart never will be.
  const run = RunSnapshot.safeParse(answer.run);
  const status = run.success ? run.data.status : (await readSnapshot(http, ref.runId).catch(() => null))?.status;
  if (status === "unknown")
    return { effect: "not_live", reason: "the CLI Bridge lost this run in a restart: nothing runs under it" };
  return { effect: "cancel_requested" };
}

export async function answerInteraction(
  http: HttpTransport,
  ref: AgentExactRunControlRef,
  command: InteractionCommand,
): Promise<AnswerDelivery> {
  const interactionId = command.binding.interactionId;
  // The bridge's own binding of the ask: it names the bridge session, which is not the conversation's id.
  const binding = {
    ...(command.request.binding ?? command.binding),
    ...(command.request.requestDigest ? { requestDigest: command.request.requestDigest } : {}),
  };
  const response = stripUndefined({
    id: interactionId,
    outcome: command.outcome,
    data: command.data ? bridgeAnswer(command.request, command.data) : undefined,
  });
  const body = {
    operationId: command.operationId,
    binding,
    response,
    commandDigest: await canonicalDigest({ binding, response }),
  };
  try {
    const ack = await http.json(
      routes.respond(ref.runId, interactionId),
      RespondAnswer,
      { body },
      "answer interaction",
    );
    return deliveryOf(ack);
  } catch (err) {
    if (err instanceof ProviderError && err.code !== "unavailable" && err.code !== "timeout") {
      const known = err.options.details?.status;
      if (typeof known === "string") return deliveryOf({ status: known, message: err.message });
      if (err.code === "not_found")
        return { status: "unknown_interaction", message: "the CLI Bridge no longer knows this interaction" };
      if (err.code === "invalid_request") return { status: "invalid_response", message: err.message };
    }
    // Delivery is unconfirmed: never `accepted`.
    return {
      status: "transport_failure",
      message: `delivery could not be confirmed: ${err instanceof Error ? err.message : String(err)}`,
      retryable: true,
    };
  }
}

/** Select answers as the bridge records them: a list of the chosen values. */
function bridgeAnswer(request: InteractionRequest, data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data };
  for (const field of request.answerSpec.fields) {
    if (field.type === "select" && typeof out[field.name] === "string") out[field.name] = [out[field.name]];
  }
  return out;
}

/** The contract's acknowledgement statuses a bridge may answer (a binding mismatch is the session's to find). */
const ACK_STATUSES = new Set<string>(
  InteractionAcknowledgement.shape.status.options.filter((s) => s !== "binding_mismatch"),
);

function deliveryOf(ack: { status: string; message?: string; retryable?: boolean }): AnswerDelivery {
  if (!ACK_STATUSES.has(ack.status)) {
    return {
      status: "transport_failure",
      message: `the CLI Bridge answered an acknowledgement this gateway does not know (${ack.status})`,
      retryable: true,
    };
  }
  return {
    status: ack.status as AnswerDelivery["status"],
    ...(ack.message ? { message: ack.message } : {}),
    ...(ack.retryable !== undefined ? { retryable: ack.retryable } : {}),
  };
}
