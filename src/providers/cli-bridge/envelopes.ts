/**
 * A retained run's canonical envelopes → provider events. Stateful per stream, like chunks.ts: it
 * keeps each text part's latest whole text, so the run's answer is known at its end (a retained
 * run's terminal carries no text of its own: docs/cli-bridge-wire.md, "Retained runs").
 *
 * - A `status` event of `completed`, `failed` or `cancelled` ends the run, provisionally: the provider confirms
 *   it from the run snapshot (a cancelled retained run ends `failed` with `detail: "cancelled"`
 *   while its snapshot says `cancelled`).
 * - An envelope that names another run than the stream's is refused (seeds/003_84635c82d6e641c4.txt: the provider rejects
 *   what does not match the accepted run): a warning, and nothing of it is acted on.
 * - Nothing private is relayed (docs/api.md#when-the-agent-waits-for-a-person, "never the data"): `raw` frames are the
 * harness's own   protocol (Pi's injected extension writes the chosen grant and the bridge's per-session nonce
 *   into a `notify` after a permission answer, transcript 25), so only their usage is read and
 *   none is shown; `session.updated` and `native.session.observed` name the native session.
 */
import type { SseFrame } from "../../lib/sse";
import { ChildTaskEvent, InteractionRequest } from "../../schemas/contracts";
import type { ProviderEvent } from "../provider";
import { envelopeUsage, servedModelsOf } from "./usage";
import { Envelope } from "./wire";

export type EnvelopeRead =
  | { event: ProviderEvent }
  /** The run's last event, to confirm from the snapshot. */
  | { end: { upstreamId: string | undefined; status: "completed" | "failed" | "cancelled"; detail?: unknown } };

/** Frames that never leave the gateway: they name the native session. */
const PRIVATE_TYPES = new Set(["native.session.observed", "session.updated"]);

export class EnvelopeStream {
  /** Text parts in the order they first appeared, each with its latest whole text. */
  private readonly texts = new Map<string, string>();

  constructor(private readonly runId: string) {}

  /** The run's answer so far: its text parts, in order. */
  get answer(): string {
    return [...this.texts.values()].join("\n\n");
  }

  read(frame: SseFrame & { data: string }): EnvelopeRead {
    const upstreamId = frame.id === "" ? undefined : frame.id;
    const warn = (message: string): EnvelopeRead => ({
      event: { kind: "warning", upstreamId, code: "invalid_upstream_frame", message },
    });
    let json: unknown;
    try {
      json = JSON.parse(frame.data);
    } catch {
      return warn(`bridge event ${upstreamId ?? "(no id)"} is not JSON`);
    }
    const parsed = Envelope.safeParse(json);
    if (!parsed.success) return warn(`bridge event ${upstreamId ?? "(no id)"} is not a runtime event envelope`);
    const { event, eventId, runId } = parsed.data;
    if (runId !== this.runId)
      return warn(`bridge event ${upstreamId ?? "(no id)"} belongs to run ${runId}, not to run ${this.runId}: refused`);
    const { type, ...fields } = event;
    const shown = { type, data: fields };
    if (PRIVATE_TYPES.has(type)) return { event: { kind: "private", upstreamId, type } };
    switch (type) {
      case "message.part.updated": {
        const part = fields.part as Record<string, unknown> | undefined;
        if (!part || typeof part.id !== "string" || typeof part.type !== "string")
          return warn(`bridge event ${eventId}: a part without id or type`);
        if (part.type === "text" && typeof part.text === "string") this.texts.set(part.id, part.text);
        return {
          event: {
            kind: "part",
            upstreamId,
            part: part as Record<string, unknown> & { id: string; type: string },
            ...(typeof fields.delta === "string" ? { delta: fields.delta } : {}),
          },
        };
      }
      case "status": {
        if (fields.status === "completed" || fields.status === "failed" || fields.status === "cancelled")
          return { end: { upstreamId, status: fields.status, detail: fields.detail } };
        return { event: { kind: "passthrough", upstreamId, shown } };
      }
      case "interaction": {
        const request = InteractionRequest.safeParse(fields.request);
        if (!request.success)
          return warn(`bridge event ${eventId}: an interaction request that does not match the contract`);
        return { event: { kind: "interaction.requested", upstreamId, request: request.data, shown } };
      }
      case "child-task": {
        // Not on the bridge's wire today (docs/cli-bridge.md): one that comes is read as the
        // contract says, or not at all, never relayed unchecked (it would bypass the sourceEventId rule).
        const task = ChildTaskEvent.safeParse(fields);
        if (!task.success)
          return warn(
            `bridge event ${eventId}: a child-task event that does not match the contract (no stable childId?)`,
          );
        return { event: { kind: "child-task", upstreamId, task: task.data } };
      }
      case "interaction.cancel": {
        if (typeof fields.id !== "string") return warn(`bridge event ${eventId}: interaction.cancel without an id`);
        const reason = typeof fields.reason === "string" ? fields.reason : undefined;
        return {
          event: {
            kind: "interaction.ended",
            upstreamId,
            interactionId: fields.id,
            why: reason === "timeout" ? "expired" : "cancelled",
            ...(reason ? { reason } : {}),
            shown,
          },
        };
      }
      case "raw": {
        const inner = fields.event as { type?: unknown; usage?: unknown } | undefined;
        if (inner?.type === "usage" && typeof inner.usage === "object" && inner.usage !== null) {
          // Served models only from the bridge's own event fields, never from inside the native record.
          const served = servedModelsOf(fields);
          const counted = envelopeUsage(inner.usage as Record<string, unknown>, eventId);
          const usage =
            served === undefined
              ? counted
              : {
                  ...(counted ?? {
                    mode: "delta" as const,
                    key: eventId,
                    provenance: "unknown" as const,
                    counts: null,
                  }),
                  servedModels: served,
                };
          // The usage is the gateway's own report (usage.updated); the harness's frame is not shown.
          if (usage) return { event: { kind: "usage", upstreamId, usage } };
        }
        return {
          event: { kind: "private", upstreamId, type: typeof inner?.type === "string" ? `raw:${inner.type}` : "raw" },
        };
      }
      default:
        return { event: { kind: "passthrough", upstreamId, shown } };
    }
  }
}
