/**
 * The session object's rooms, wired: each is handed the others' functions it needs, here and
 * nowhere else; the shell (./session.ts) answers the RPCs over them. The event log commits, then
 * publishes to the browser streams (./subscriptions.ts), tells the queue a turn ended and the
 * webhook hand-off (./webhook-handoff.ts) what to hand over; the interaction desk holds the asks;
 * the turn runner (./turn-runner.ts) the rest of a turn's life. One start-up path, and one alarm
 * shared by what needs waking: the watchdog of a running turn (./turn-end.ts), the hand-off's
 * retries, and the release of an idle agent session (./session-release.ts).
 */
import { SNAPSHOT_EVENT } from "../../public/wire/frames.js";
import { type Config, readConfig } from "../config";
import { createProvider } from "../providers";
import type { AgentProvider } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import type { SessionBinding } from "./binding";
import { EventLog, storeWrites } from "./event-log";
import { InteractionDesk } from "./interaction-desk";
import { SubscriptionSockets } from "./subscription-sockets";
import { TurnRunner } from "./turn-runner";
import type { UserLink } from "./user-link";
import { snapshotOf } from "./views";
import { HANDOFF_RETRY_MS, WebhookHandoff } from "./webhook-handoff";

/** The events that end a turn (./turn-end.ts): each may let the queue move. */
const TURN_ENDS = new Set(["turn.completed", "turn.failed", "turn.cancelled"]);

export class SessionRooms {
  readonly log: EventLog;
  readonly desk: InteractionDesk;
  readonly runner: TurnRunner;
  readonly subscriptions: SubscriptionSockets;
  /** Webhook events handed to the user object after their commit. */
  readonly handoff: WebhookHandoff;
  private providerInstance: AgentProvider | undefined;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly binding: SessionBinding,
    user: UserLink,
  ) {
    const store = () => binding.store;
    this.log = new EventLog({
      transaction: (fn) => ctx.storage.transactionSync(fn),
      ...storeWrites(store, () => binding.current),
      publish: (row) => {
        this.subscriptions.publish(row);
        // A turn ended: the next queued turn may start (after this commit's events are out).
        if (TURN_ENDS.has(row.type)) {
          // Nothing more is coming soon: the viewers' direct streams end with this batch.
          this.subscriptions.endDirectSoon();
          queueMicrotask(() => this.runner.turnEnded());
        }
        this.handoff.noticed(row.type);
      },
    });
    this.handoff = new WebhookHandoff({
      store: () => binding.current,
      bound: () => binding.session(),
      handOff: (ownerKey, events) => user.handOff(ownerKey, events),
      retryLater: async (at) => {
        const armed = await ctx.storage.getAlarm();
        if (armed === null || armed > at) await ctx.storage.setAlarm(at);
      },
    });
    this.subscriptions = new SubscriptionSockets(
      { accept: (ws) => ctx.acceptWebSocket(ws), sockets: () => ctx.getWebSockets() },
      () => binding.current,
      () => {
        const context = binding.session();
        const held = binding.current;
        if (!context || !held) return null;
        const snapshot = snapshotOf(held, context, this.run());
        return {
          lastSeq: snapshot.messages.lastEventId,
          json: JSON.stringify({ type: SNAPSHOT_EVENT, data: snapshot }),
        };
      },
      () => this.config().SSE_DIRECT_QUIET_MS,
    );
    this.desk = new InteractionDesk({
      store,
      log: this.log,
      provider: () => this.provider(),
      secret: () => this.config().SESSION_ID_SECRET,
      waitingChanged: () => this.runner.refreshIndex(),
    });
    this.runner = new TurnRunner({
      store,
      bound: () => binding.session(),
      log: this.log,
      desk: this.desk,
      provider: () => this.provider(),
      config: () => this.config(),
      alarms: {
        set: (at) => ctx.storage.setAlarm(at),
        // An event not yet handed over keeps the alarm, so it is handed over even if nothing wakes
        // this object; so does an agent session to release once idle (./session-release.ts).
        clear: () => {
          const handoff = this.handoff.needsAlarm() ? Date.now() + HANDOFF_RETRY_MS : null;
          const release = binding.current ? this.runner.release.dueAt() : null;
          const due = [handoff, release].filter((at) => at !== null);
          return due.length > 0 ? ctx.storage.setAlarm(Math.min(...due)) : ctx.storage.deleteAlarm();
        },
      },
      user,
      durable: () => ctx.storage.sync(),
    });
  }

  /** The turn runner's live figures a snapshot reads (./views.ts snapshotOf). */
  run() {
    return {
      total: this.runner.total(),
      queue: this.runner.queue.waiting(),
      budget: this.runner.budget(),
      agent: this.runner.agent(),
    };
  }

  private config(): Config {
    return readConfig(this.env);
  }

  private provider(): AgentProvider {
    try {
      return (this.providerInstance ??= createProvider(this.config(), this.env));
    } catch (err) {
      throw providerRefusal(err);
    }
  }

  /**
   * The one start-up path: whatever wakes the object (a request, an RPC, the alarm), a running
   * turn gets its upstream reader back before anything else runs.
   */
  start(): void {
    const held = () => this.binding.current !== null;
    // Ended turns a crash left uncompacted are compacted (./turn-end.ts); never fails the start.
    if (held()) this.runner.compactEnded();
    try {
      if (held()) this.runner.ensureReader();
    } catch (err) {
      console.error(JSON.stringify({ msg: "could not resume the upstream reader", error: String(err) }));
    }
    // A queued turn this instance finds recorded pending and undispatched (the last one was
    // evicted mid-dispatch) is dispatched again; with nothing active, the next one starts.
    if (held()) void this.runner.queue.move();
    try {
      this.handoff.start();
    } catch (err) {
      console.error(JSON.stringify({ msg: "could not resume the webhook hand-off", error: String(err) }));
    }
  }

  /** The alarm: hand-offs due, the watchdog, idle releases, and the queue. */
  async alarm(): Promise<void> {
    await this.handoff.flush();
    if (this.binding.current) await this.runner.watchdog();
    if (this.binding.current) {
      await this.runner.release.releaseIdle();
      await this.ringForRelease();
      void this.runner.queue.move();
    }
  }

  /** Keeps the alarm for the next idle release (./session-release.ts), unless it rings sooner for something else. */
  private async ringForRelease(): Promise<void> {
    const due = this.runner.release.dueAt();
    if (due === null) return;
    const armed = await this.ctx.storage.getAlarm();
    if (armed === null || armed > due) await this.ctx.storage.setAlarm(due);
  }
}
