/**
 * What the session hands its user's object for webhooks (docs/webhooks.md#webhooks). The outbox is the
 * event log itself: an ask requested (`interaction.requested`), an ask expired
 * (`interaction.resolved` with status `expired`) and a turn's end (`turn.completed`,
 * `turn.failed`, `turn.cancelled`, the last one `turn.budget_stopped` when a budget stopped it)
 * are written in the same commit as the state change they announce, by the rooms that make it
 * (./interaction-desk.ts, ./turn-end.ts). The `webhooksHandedOff` meta value is the seq up to
 * which the log was handed over; an event past it is handed over after its commit (never awaited
 * on the turn's path), at start-up, and from the alarm after a failed hand-off, until the user
 * object has recorded it (`acceptWebhookEvents`, idempotent per event key). So no event is lost
 * between the objects, and none is sent from here: the user object delivers.
 * A conversation that existed before webhooks has no cursor: it starts at the log's end then.
 */
import { WebhookEvent } from "../schemas/webhooks";
import type { EventEnvelope, InteractionRecord, SessionContext } from "./store/records";
import type { SessionStore } from "./store/store";

/** The log's event types that may become webhook events. */
const HANDED_OFF_TYPES = [
  "interaction.requested",
  "interaction.resolved",
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
] as const;
const HANDED_OFF = new Set<string>(HANDED_OFF_TYPES);
/** Events handed over per call. */
const HANDOFF_BATCH = 50;
/** After a failed hand-off, the alarm tries again this much later. */
export const HANDOFF_RETRY_MS = 10_000;

/**
 * The webhook event a log event makes, or null. Pure. `incarnation` tells a conversation id used
 * again after a delete from the one before (their seqs start again at 1); `ask` finds the ask an
 * end of an ask names.
 */
export function webhookEventOf(
  envelope: EventEnvelope,
  conversation: { conversationId: string; title: string; incarnation: number },
  ask: (interactionId: string) => Pick<InteractionRecord, "request"> | null,
): WebhookEvent | null {
  const base = {
    key: `${conversation.conversationId}/${conversation.incarnation}/${envelope.seq}`,
    at: envelope.at,
    conversationId: conversation.conversationId,
    conversationTitle: conversation.title.slice(0, 1024),
    turnId: envelope.turnId,
  };
  const data = envelope.data;
  const askFields = (request: { id: string; kind: string; title: string }) => ({
    interactionId: request.id,
    kind: request.kind,
    title: request.title.slice(0, 1024),
  });
  let event: unknown = null;
  switch (envelope.type) {
    case "interaction.requested": {
      const request = data.interaction as { id: string; kind: string; title: string } | undefined;
      if (request) event = { ...base, type: "interaction.requested", ...askFields(request) };
      break;
    }
    case "interaction.resolved": {
      if (data.status !== "expired" || typeof data.interactionId !== "string") break;
      const record = ask(data.interactionId);
      event = {
        ...base,
        type: "interaction.expired",
        ...(record ? askFields(record.request) : { interactionId: data.interactionId }),
      };
      break;
    }
    case "turn.completed":
      event = { ...base, type: "turn.completed", status: "completed" };
      break;
    case "turn.failed": {
      const code = (data.error as { code?: unknown } | undefined)?.code;
      event = {
        ...base,
        type: "turn.failed",
        status: "failed",
        ...(typeof code === "string" ? { errorCode: code.slice(0, 128) } : {}),
      };
      break;
    }
    case "turn.cancelled":
      event = {
        ...base,
        type: data.reason === "budget_exceeded" ? "turn.budget_stopped" : "turn.cancelled",
        status: "cancelled",
      };
      break;
  }
  if (event === null) return null;
  // Only what the schema names leaves the session (a strict object: nothing else rides along).
  const parsed = WebhookEvent.safeParse(event);
  return parsed.success ? parsed.data : null;
}

export interface WebhookHandoffDeps {
  /** The store, or null while the conversation does not exist. */
  store(): SessionStore | null;
  bound(): SessionContext | null;
  /** The user object's `acceptWebhookEvents`. */
  handOff(ownerKey: string, events: WebhookEvent[]): Promise<void>;
  /** Arms the object's alarm to try again (not later than an alarm already armed). */
  retryLater(atMs: number): Promise<void>;
}

export class WebhookHandoff {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(private readonly deps: WebhookHandoffDeps) {}

  /** A conversation stored before webhooks existed starts handing over at the log's end. */
  start(): void {
    const store = this.deps.store();
    if (store && store.getMeta("webhooksHandedOff") === null && store.getMeta("session"))
      store.setMeta("webhooksHandedOff", store.lastSeq());
    if (this.pending()) this.kick();
  }

  /** An event was committed: hand it over soon if it is one of ours. */
  noticed(type: string): void {
    if (HANDED_OFF.has(type)) this.kick();
  }

  /**
   * Whether the alarm must stay armed for the hand-off: an event waits and no hand-off is under way
   * (one under way arms the alarm itself if it fails). An idle conversation keeps no alarm, so it
   * hibernates.
   */
  needsAlarm(): boolean {
    return this.running === null && this.pending();
  }

  /** Whether an event waits to be handed over. */
  pending(): boolean {
    const store = this.deps.store();
    if (!store) return false;
    return store.eventsOfTypesAfter(store.getMeta("webhooksHandedOff") ?? 0, HANDED_OFF_TYPES, 1).length > 0;
  }

  /** Starts a hand-off (or asks the running one to go on); never awaited by a turn. */
  kick(): void {
    this.flush().catch(() => undefined);
  }

  /** Hands over everything pending; on failure, the alarm tries again. */
  flush(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.drain()
      .catch(async (err: unknown) => {
        console.error(JSON.stringify({ msg: "webhook hand-off failed; retried from the alarm", error: String(err) }));
        await this.deps.retryLater(Date.now() + HANDOFF_RETRY_MS);
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      while (await this.handOffBatch());
    } while (this.again);
  }

  /** Hands over one batch; answers whether there may be more. */
  private async handOffBatch(): Promise<boolean> {
    const store = this.deps.store();
    const context = this.deps.bound();
    if (!store || !context) return false;
    const cursor = store.getMeta("webhooksHandedOff") ?? 0;
    const rows = store.eventsOfTypesAfter(cursor, HANDED_OFF_TYPES, HANDOFF_BATCH);
    if (rows.length === 0) return false;
    const conversation = {
      conversationId: context.conversationId,
      title: store.getMeta("title") ?? context.conversationId,
      incarnation: store.getMeta("createdAt") ?? 0,
    };
    const events = rows
      .map((row) => webhookEventOf(row, conversation, (id) => store.interaction(id)))
      .filter((e) => e !== null);
    if (events.length > 0) await this.deps.handOff(context.ownerKey, events);
    const last = rows[rows.length - 1]!.seq;
    // The conversation may have been deleted meanwhile: nothing to move forward then.
    const now = this.deps.store();
    if (now && this.deps.bound())
      now.setMeta("webhooksHandedOff", Math.max(last, now.getMeta("webhooksHandedOff") ?? 0));
    return rows.length === HANDOFF_BATCH;
  }
}
