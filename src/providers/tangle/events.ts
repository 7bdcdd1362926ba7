/**
 * The reader of one run's events: exact replay of the execution strictly after a cursor, then
 * live frames, each normalized by frames.ts. The run stream is opened again with the cursor as
 * `Last-Event-ID` (docs/sandbox-wire.md); reconnecting is the caller's (the session's one upstream
 * reader asks again from its last cursor).
 *
 * A run may say it waits for a person only by its status (`awaiting_*`, `blocked_on_approval`),
 * with no interaction frame before it: the session's outstanding interactions are then read
 * (`GET …/interactions`), and each of this run's becomes an ask. A plan waiting for its decision
 * that none of them is (`plan.submitted`, then `awaiting_plan_decision`) becomes an ask decided
 * through the plan routes (plans.ts).
 */
import { readSseFrames, type SseFrame } from "../../lib/sse";
import { type AgentExactRunControlRef, InteractionRequest } from "../../schemas/contracts";
import type { HttpTransport } from "../http";
import type { EventsOptions, ProviderEvent } from "../provider";
import { MAX_FRAME_BYTES, normalizeFrame } from "./frames";
import { planAsk, type SubmittedPlan, submittedPlan } from "./plans";
import { sandboxRoutes as routes } from "./routes";
import { InteractionsResponse, isWaitStatus } from "./wire";
import { refine } from "./wire-errors";

function rawStatus(frame: SseFrame): unknown {
  try {
    return (JSON.parse(frame.data ?? "{}") as { status?: unknown }).status;
  } catch {
    return undefined;
  }
}

/** The asks of this run the session lists as outstanding (read when a status says the run waits); a read that fails is a warning. */
async function listedAsks(
  client: HttpTransport,
  ref: AgentExactRunControlRef,
  status: string,
): Promise<ProviderEvent[]> {
  let listed: unknown[];
  try {
    listed = (
      await client.json(
        routes.listInteractions(ref.environmentId, ref.sessionId),
        InteractionsResponse,
        { retry: true },
        "read interactions",
      )
    ).data.interactions;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return [
      {
        kind: "warning",
        upstreamId: undefined,
        code: "interactions_unavailable",
        message: `the run waits (${status}), but its interactions could not be read: ${why}`,
      },
    ];
  }
  const asks: ProviderEvent[] = [];
  for (const raw of listed) {
    const parsed = InteractionRequest.safeParse(raw);
    if (!parsed.success) {
      const why = parsed.error.issues[0]?.message ?? "invalid";
      asks.push({
        kind: "warning",
        upstreamId: undefined,
        code: "invalid_upstream_frame",
        message: `an outstanding interaction of the session is invalid: ${why}`,
      });
      continue;
    }
    // Only this run's asks: one bound to another execution of the session is not this turn's.
    if (parsed.data.binding && parsed.data.binding.executionId !== ref.executionId) continue;
    asks.push({ kind: "interaction.requested", upstreamId: undefined, request: parsed.data });
  }
  return asks;
}

export async function* readEvents(
  client: HttpTransport,
  ref: AgentExactRunControlRef,
  options: EventsOptions,
): AsyncIterable<ProviderEvent> {
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
  let plan: SubmittedPlan | undefined;
  // An interaction frame came just before (nothing but statuses since): the wait a status then
  // announces has its ask already.
  let asked = false;
  for await (const frame of readSseFrames(client.reader(response), MAX_FRAME_BYTES + 64 * 1024)) {
    const event = normalizeFrame(frame, { requireId: true });
    if (!event) continue;
    const status = event.kind === "passthrough" && event.shown.type === "status" ? rawStatus(frame) : undefined;
    if (event.kind === "interaction.requested") asked = true;
    else if (status === undefined) asked = false;
    if (event.kind === "passthrough" && event.shown.type === "plan.submitted")
      plan = submittedPlan(event.shown.data.plan) ?? plan;
    if (event.kind !== "passthrough" || typeof status !== "string" || !isWaitStatus(status) || asked) {
      yield event;
      continue;
    }
    const found = await listedAsks(client, ref, status);
    if (plan && status === "awaiting_plan_decision" && !found.some((e) => e.kind === "interaction.requested")) {
      // A plan that waits only for the plan routes: its ask carries the status frame.
      yield* found;
      yield { kind: "interaction.requested", upstreamId: event.upstreamId, request: planAsk(plan), shown: event.shown };
      continue;
    }
    yield event;
    yield* found;
  }
}
