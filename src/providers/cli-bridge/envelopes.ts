/**
 * A retained run's canonical envelopes → provider events. Pure. A `status` event of `completed` or
 * `failed` ends the run, provisionally: the provider confirms it from the run snapshot (a cancelled
 * retained run ends `failed` with `detail: "cancelled"` while its snapshot says `cancelled`).
 */
import type { SseFrame } from "../../lib/sse";
import { InteractionRequest } from "../../schemas/contracts";
import type { ProviderEvent } from "../provider";
import { envelopeUsage, servedModelsOf } from "./usage";
import { Envelope } from "./wire";

export type EnvelopeRead =
  | { event: ProviderEvent }
  /** The run's last event, to confirm from the snapshot. */
  | { end: { upstreamId: string | undefined; status: "completed" | "failed"; detail?: unknown } }
  | { skip: true };

export function readEnvelope(frame: SseFrame & { data: string }): EnvelopeRead {
  const upstreamId = frame.id === "" ? undefined : frame.id;
  const warn = (message: string): EnvelopeRead => ({ event: { kind: "warning", upstreamId, code: "invalid_upstream_frame", message } });
  let json: unknown;
  try {
    json = JSON.parse(frame.data);
  } catch {
    return warn(`bridge event ${upstreamId ?? "(no id)"} is not JSON`);
  }
  const parsed = Envelope.safeParse(json);
  if (!parsed.success) return warn(`bridge event ${upstreamId ?? "(no id)"} is not a runtime event envelope`);
  const { event, eventId } = parsed.data;
  const { type, ...fields } = event;
  const shown = { type, data: fields };
  switch (type) {
    case "message.part.updated": {
      const part = fields.part as Record<string, unknown> | undefined;
      if (!part || typeof part.id !== "string" || typeof part.type !== "string") return warn(`bridge event ${eventId}: a part without id or type`);
      return { event: { kind: "part", upstreamId, part: part as Record<string, unknown> & { id: string; type: string }, ...(typeof fields.delta === "string" ? { delta: fields.delta } : {}) } };
    }
    case "status": {
      if (fields.status === "completed" || fields.status === "failed") return { end: { upstreamId, status: fields.status, detail: fields.detail } };
      return { event: { kind: "passthrough", upstreamId, shown } };
    }
    case "interaction": {
      const request = InteractionRequest.safeParse(fields.request);
      if (!request.success) return warn(`bridge event ${eventId}: an interaction request that does not match the contract`);
      return { event: { kind: "interaction.requested", upstreamId, request: request.data, shown } };
    }
    case "interaction.cancel": {
      if (typeof fields.id !== "string") return warn(`bridge event ${eventId}: interaction.cancel without an id`);
      const reason = typeof fields.reason === "string" ? fields.reason : undefined;
      return { event: { kind: "interaction.ended", upstreamId, interactionId: fields.id, why: reason === "timeout" ? "expired" : "cancelled", ...(reason ? { reason } : {}), shown } };
    }
    case "raw": {
      const inner = fields.event as { type?: unknown; usage?: unknown } | undefined;
      if (inner?.type === "usage" && typeof inner.usage === "object" && inner.usage !== null) {
        // Served models only from the bridge's own event fields, never from inside the native record.
        const served = servedModelsOf(fields);
        const counted = envelopeUsage(inner.usage as Record<string, unknown>, eventId);
        const usage = served === undefined ? counted : { ...(counted ?? { mode: "delta" as const, key: eventId, provenance: "unknown" as const, counts: null }), servedModels: served };
        if (usage) return { event: { kind: "usage", upstreamId, usage, shown } };
      }
      return { event: { kind: "passthrough", upstreamId, shown } };
    }
    case "native.session.observed":
      return { event: { kind: "private", upstreamId, type } };
    default:
      return { event: { kind: "passthrough", upstreamId, shown } };
  }
}
