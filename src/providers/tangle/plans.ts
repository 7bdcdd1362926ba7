/**
 * A plan that waits for its decision, as an ask. Some deployments send no interaction frame for
 * it: `plan.submitted`, then `status: awaiting_plan_decision`. The reader turns that into a `plan`
 * ask (`planAsk`), and its answer goes to the plan routes instead of the interaction route
 * (`decidePlan`). Both directions live here so the ask's form and its answer's reading cannot
 * disagree.
 */
import type { AgentExactRunControlRef, InteractionRequest } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { AnswerDelivery, InteractionCommand } from "../provider";
import { sandboxRoutes as routes } from "./routes";

export interface SubmittedPlan {
  id: string;
  revision: number;
  title?: string;
  body: string;
}

const PLAN_ASK_PREFIX = "plan:";

/** The plan a `plan.submitted` frame carries, when it has the fields an ask needs. */
export function submittedPlan(value: unknown): SubmittedPlan | undefined {
  const p = value as Partial<SubmittedPlan> | undefined;
  return p && typeof p.id === "string" && typeof p.revision === "number" && typeof p.body === "string"
    ? { id: p.id, revision: p.revision, body: p.body, ...(p.title ? { title: p.title } : {}) }
    : undefined;
}

/** The ask a plan waiting for its decision becomes (the same form a `plan` interaction has). */
export function planAsk(plan: SubmittedPlan): InteractionRequest {
  return {
    id: `${PLAN_ASK_PREFIX}${plan.id}:r${plan.revision}`,
    kind: "plan",
    title: plan.title
      ? `Approve the plan "${plan.title}" (revision ${plan.revision})?`
      : `Approve plan revision ${plan.revision}?`,
    body: plan.body,
    subject: { planId: plan.id, revision: plan.revision },
    answerSpec: {
      fields: [
        { name: "decision", type: "select", label: "Decision", options: ["approve", "reject"], required: true },
        { name: "feedback", type: "text", label: "Feedback for a revised plan" },
      ],
    },
  };
}

/** An ask `planAsk` made (no upstream binding): answered through the plan routes. */
export function isPlanAsk(request: InteractionRequest): boolean {
  return request.kind === "plan" && request.id.startsWith(PLAN_ASK_PREFIX) && request.binding === undefined;
}

/** A plan decided through the plan routes: approve, or reject with feedback (a revised plan follows). */
export async function decidePlan(
  client: HttpTransport,
  ref: AgentExactRunControlRef,
  command: InteractionCommand,
): Promise<AnswerDelivery> {
  const decision = command.outcome === "accepted" && command.data?.decision === "approve" ? "approve" : "reject";
  const feedback = typeof command.data?.feedback === "string" ? command.data.feedback : undefined;
  try {
    await client.send(
      routes.planDecision(ref.environmentId, ref.sessionId, decision),
      { body: decision === "reject" && feedback ? { feedback } : {} },
      "decide plan",
    );
    return { status: "accepted" };
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.code === "not_found")
      return { status: "unknown_interaction", message: "the deployment no longer waits for this plan decision" };
    if (err.code === "conflict")
      return { status: "already_resolved_different", message: "the plan was already decided" };
    if (err.code === "invalid_request") return { status: "invalid_response", message: err.message };
    if (err.code === "capability_denied")
      throw err.as("capability_denied", "this deployment does not take plan decisions (501)");
    return { status: "transport_failure", message: `delivery could not be confirmed: ${err.message}`, retryable: true };
  }
}
