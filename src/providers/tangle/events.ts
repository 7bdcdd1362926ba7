/**
 * The reader of one run's events: exact replay of the execution strictly after a cursor, then
 * live frames, each normalized by frames.ts. The run stream is opened again with the cursor as
 * `Last-Event-ID` (docs/sandbox-wire.md); reconnecting is the caller's (the session's one upstream
 * reader asks again from its last cursor). A plan waiting for its decision without an interaction
 * frame becomes an ask here (plans.ts).
 */
import { readSseFrames, type SseFrame } from "../../lib/sse";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import type { HttpTransport } from "../http";
import type { EventsOptions, ProviderEvent } from "../provider";
import { MAX_FRAME_BYTES, normalizeFrame } from "./frames";
import { planAsk, submittedPlan, type SubmittedPlan } from "./plans";
import { sandboxRoutes as routes } from "./routes";
import { refine } from "./wire-errors";

function rawStatus(frame: SseFrame): unknown {
  try {
    return (JSON.parse(frame.data ?? "{}") as { status?: unknown }).status;
  } catch {
    return undefined;
  }
}

export async function* readEvents(client: HttpTransport, ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
  const cursor = options.after ?? "0";
  let response: Response;
  try {
    response = await client.send(
      routes.runStream(ref.environmentId),
      {
        body: { message: "", sessionId: ref.sessionId },
        headers: { "x-execution-id": ref.executionId, "last-event-id": cursor },
        retry: true,
        stream: true,
        signal: options.signal,
      },
      "replay run events",
    );
  } catch (err) {
    throw refine(err, cursor);
  }
  // A plan may wait for its decision as a `status: awaiting_plan_decision` after `plan.submitted`,
  // with no interaction frame: it becomes an ask, answered through the plan routes.
  let plan: SubmittedPlan | undefined;
  for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES + 64 * 1024)) {
    const event = normalizeFrame(frame, { requireId: true });
    if (!event) continue;
    if (event.kind === "passthrough" && event.shown.type === "plan.submitted") plan = submittedPlan(event.shown.data.plan) ?? plan;
    if (plan && event.kind === "passthrough" && event.shown.type === "status" && rawStatus(frame) === "awaiting_plan_decision") {
      yield { kind: "interaction.requested", upstreamId: event.upstreamId, request: planAsk(plan), shown: event.shown };
      continue;
    }
    yield event;
  }
}
