/**
 * Turns that wait their turn, applied (the decisions are ./turn-queue.ts, pure). A send that asks
 * to queue while the conversation is busy (./send-decision.ts) is recorded in the session's storage
 * (`queued_turns`) and answered `queued`; a queued turn can be edited or removed until it starts; `move` starts the
 * next one whenever nothing is active. `move` is asked after every turn's end, after each send, by
 * the alarm and by a new instance, and does the same from each: a queued turn is recorded pending
 * (its queue record `starting`) before it is dispatched, so after a restart it is dispatched again
 * under the same execution id (re-attached upstream, never a second run) or, if its record was
 * forgotten, started again. A turn refused at its start (its budget used up, a dispatch nothing
 * accepted) ends `failed` with the refusal as its error (`turn.dequeued`, reason `refused`); the
 * queue goes on with the next, checked the same way at its own start.
 */
import { Refusal } from "../errors";
import { providerRefusal } from "../providers/refusal";
import type { Dispatcher, Send, SubmitOutcome } from "./dispatch";
import type { Appender, EventLog } from "./event-log";
import type { QueuedTurn, SessionContext, TurnError } from "./store/records";
import type { SessionStore } from "./store/store";
import type { TurnView } from "./turn-cache";
import { WATCHDOG_INTERVAL_MS } from "./turn-end";
import { nextStep, queuedView } from "./turn-queue";

/** What a send answers: the dispatcher's outcomes, or the turn waiting in the queue. */
export type QueueOutcome = SubmitOutcome | { outcome: "queued"; turn: TurnView };

/** Why a queued turn was removed (its view's cancelReason). */
const REMOVED: TurnError = { code: "removed", message: "removed from the queue before it started" };
const CLEARED: TurnError = { code: "queue_cleared", message: "the queue was cleared before it started" };

/** Steps of one `move` at most (each starts or settles one queued turn): a bound, not a budget. */
const MAX_STEPS = 64;

export interface QueueRunnerDeps {
  store: () => SessionStore;
  /** The conversation this session holds, or null (never stored, or deleted): nothing is written then. */
  bound(): SessionContext | null;
  log: EventLog;
  dispatcher: Pick<Dispatcher, "startQueued" | "isDispatching" | "placement" | "recordPending">;
  alarms: { set(atMs: number): Promise<void> };
}

export class QueueRunner {
  private moving: Promise<void> | null = null;
  private again = false;
  /** A delete is under way: nothing more starts. */
  private closed = false;

  constructor(private readonly deps: QueueRunnerDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** A new turn that waits in the queue (./send-decision.ts), after the turns queued before it. */
  enqueue(send: Send): QueueOutcome {
    const { turnId, request } = send;
    const now = Date.now();
    this.deps.log.commit((log) => {
      this.store.insertQueuedTurn({ ...send, now });
      log.append({
        turnId,
        executionId: null,
        type: "turn.queued",
        data: {
          turnId,
          message: request.message,
          ...(request.model ? { model: request.model } : {}),
          queuePosition: this.placeOf(turnId),
        },
        now,
      });
    });
    return { outcome: "queued", turn: this.view(turnId)! };
  }

  /** A queued turn's place (1: next), among the turns still waiting to start. */
  private placeOf(turnId: string): number | null {
    const index = this.store
      .waitingTurns()
      .filter((e) => e.state === "queued")
      .findIndex((e) => e.turnId === turnId);
    return index < 0 ? null : index + 1;
  }

  /** The view of a turn the queue holds and that has no record of a run (null: it has one, or was never queued). */
  view(turnId: string): TurnView | null {
    const entry = this.store.queuedTurn(turnId);
    if (!entry || entry.state === "started" || this.store.turn(turnId)) return null;
    return queuedView(entry, this.placeOf(turnId));
  }

  /** The turns waiting to start, in order. */
  waiting(): TurnView[] {
    return this.store
      .waitingTurns()
      .filter((e) => e.state === "queued")
      .map((e, i) => queuedView(e, i + 1));
  }

  /** The queued turn, or the refusal that says why it cannot be changed (started, ended, unknown). */
  private changeable(turnId: string, verb: string): QueuedTurn {
    const entry = this.store.queuedTurn(turnId);
    if (entry?.state === "queued") return entry;
    const turn = this.store.turn(turnId);
    if (turn) {
      throw new Refusal(
        "turn_not_queued",
        `turn ${turnId} has started (it is ${turn.status}), so it can no longer be ${verb}; a running turn is stopped with POST …/cancel`,
        {
          turnId,
          status: turn.status,
        },
      );
    }
    if (entry)
      throw new Refusal(
        "turn_not_queued",
        `turn ${turnId} is no longer queued (${entry.state}), so it can no longer be ${verb}`,
        { turnId, status: entry.state },
      );
    throw new Refusal("turn_not_found", `no turn ${turnId} in this conversation`);
  }

  /** Replaces a queued turn's text (its model and interactions stay); refused once it started. */
  edit(turnId: string, message: string): TurnView {
    const entry = this.changeable(turnId, "edited");
    if (entry.request.message !== message) {
      this.deps.log.commit((log) => {
        const now = Date.now();
        this.store.setQueuedRequest(turnId, { ...entry.request, message }, now);
        log.append({ turnId, executionId: null, type: "turn.queue_edited", data: { turnId, message }, now });
      });
    }
    return this.view(turnId)!;
  }

  /** Removes a queued turn (again: the same answer); refused once it started. */
  remove(turnId: string): TurnView {
    const entry = this.store.queuedTurn(turnId);
    if (entry?.state === "removed") return this.view(turnId)!;
    this.changeable(turnId, "removed");
    this.deps.log.commit((log) => this.drop(log, turnId, REMOVED, "removed"));
    return this.view(turnId)!;
  }

  /** Removes every queued turn, in order; what was removed. */
  clear(): string[] {
    const removed = this.store
      .waitingTurns()
      .filter((e) => e.state === "queued")
      .map((e) => e.turnId);
    if (removed.length > 0)
      this.deps.log.commit((log) => {
        for (const turnId of removed) this.drop(log, turnId, CLEARED, "cleared");
      });
    return removed;
  }

  private drop(log: Appender, turnId: string, why: TurnError, reason: "removed" | "cleared"): void {
    const now = Date.now();
    this.store.setQueuedState(turnId, "removed", now, why);
    log.append({ turnId, executionId: null, type: "turn.dequeued", data: { turnId, reason }, now });
  }

  /** A delete is under way: nothing more starts (`reopen` if it was refused). */
  close(): void {
    this.closed = true;
  }

  reopen(): void {
    this.closed = false;
  }

  /** Starts the next queued turn when nothing is active; one move at a time, asked again if asked meanwhile. */
  move(): Promise<void> {
    if (this.moving) {
      this.again = true;
      return this.moving;
    }
    this.moving = (async () => {
      do {
        this.again = false;
        await this.steps();
      } while (this.again);
    })()
      .catch((err: unknown) => console.error(JSON.stringify({ msg: "the queue could not move", error: String(err) })))
      .finally(() => {
        this.moving = null;
      });
    return this.moving;
  }

  private async steps(): Promise<void> {
    for (let i = 0; i < MAX_STEPS; i++) {
      const context = this.deps.bound();
      if (this.closed || !context) return;
      const store = this.store;
      const step = nextStep({
        waiting: store.waitingTurns(),
        active: store.activeTurn(),
        lastTurnId: store.lastTurn()?.turnId ?? null,
        statusOf: (id) => store.turnStatus(id),
        dispatching: (id) => this.deps.dispatcher.isDispatching(id),
      });
      switch (step.kind) {
        case "idle":
        case "wait":
          return;
        case "started":
          this.deps.log.commit(() => store.setQueuedState(step.entry.turnId, "started", Date.now()));
          break;
        case "start": {
          const { entry } = step;
          const now = Date.now();
          // Its place in the tree is taken now: after the turn it names, else the active branch's
          // latest turn when it starts (docs/api.md#queued-turns).
          let placement: ReturnType<Dispatcher["placement"]>;
          try {
            placement = this.deps.dispatcher.placement(entry.request);
          } catch (err) {
            this.refuse(entry, err);
            break;
          }
          this.deps.log.commit(() => {
            store.setQueuedState(entry.turnId, "starting", now);
            this.deps.dispatcher.recordPending(context, placement, {
              turnId: entry.turnId,
              requestDigest: entry.requestDigest,
              request: entry.request,
              executionId: entry.executionId,
              now,
              // It was sent when it was queued: the turn keeps that, and starts now.
              sentAt: entry.createdAt,
            });
          });
          // Armed before the dispatch: an instance evicted mid-dispatch wakes to dispatch it again.
          await this.deps.alarms.set(now + WATCHDOG_INTERVAL_MS);
          await this.dispatch(context, entry);
          break;
        }
        case "redispatch":
          await this.dispatch(context, step.entry);
          break;
      }
    }
  }

  private async dispatch(context: SessionContext, entry: QueuedTurn): Promise<void> {
    // A delete began meanwhile: nothing goes upstream (a delete refused leaves the turn pending, dispatched again at the next move).
    if (this.closed) return;
    try {
      await this.deps.dispatcher.startQueued(context, entry.turnId, entry.executionId, entry.request);
      if (this.deps.bound()) this.deps.log.commit(() => this.store.setQueuedState(entry.turnId, "started", Date.now()));
    } catch (err) {
      if (!this.deps.bound()) return;
      this.refuse(entry, err);
    }
  }

  /** A queued turn refused at its start: it ends failed with the refusal as its error, and leaves the queue. */
  private refuse(entry: QueuedTurn, err: unknown): void {
    const refusal = providerRefusal(err);
    const error: TurnError =
      refusal instanceof Refusal
        ? { code: refusal.code, message: refusal.message }
        : { code: "dispatch_failed", message: "the turn could not be dispatched" };
    if (!(refusal instanceof Refusal))
      console.error(
        JSON.stringify({ msg: "a queued turn's dispatch failed", turnId: entry.turnId, error: String(err) }),
      );
    this.deps.log.commit((log) => {
      const now = Date.now();
      if (this.store.turnStatus(entry.turnId) === "pending") this.store.deleteTurn(entry.turnId);
      this.store.setQueuedState(entry.turnId, "refused", now, error);
      log.append({
        turnId: entry.turnId,
        executionId: null,
        type: "turn.dequeued",
        data: { turnId: entry.turnId, reason: "refused", error },
        now,
      });
    });
  }
}
