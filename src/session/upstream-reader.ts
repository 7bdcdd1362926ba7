/**
 * The upstream reader of the running turn: at most one per execution in this instance, over the
 * reconnecting loop of ./pump.ts. The events it reads are committed in batches (./ingest-queue.ts):
 * the first while no commit is in flight at once, those that arrive while one is made durable
 * together in the next, one transaction each; text deltas that continue a part are published at
 * once and stored by a later commit, several in one row (the held tail: ./store/log-chunks.ts). In a batch each event is admitted once by its
 * upstream id (`SessionStore.admitUpstream`, the one de-duplication rule, decided in memory),
 * stepped by the pure ./ingest.ts, and what the step says written: the shown event, asks opened or
 * ended, warnings, the usage fold (./turn-usage.ts), and the turn's end (./turn-end.ts). A batch's
 * rows reach viewers after its commit (./event-log.ts). A total that crossed a budget hands the
 * turn to the budget stop (./budget-stop.ts) after the commit.
 */

import { STREAMED_TYPES } from "../../public/wire/part-text.js";
import type { AgentProvider, ProviderEvent } from "../providers/provider";
import { emptyExecutionUsage } from "../usage/usage-fold";
import type { BudgetStop } from "./budget-stop";
import type { EventLog } from "./event-log";
import { eventBytes, holdableUpdate, ingestStep } from "./ingest";
import { type Applied, IngestQueue } from "./ingest-queue";
import type { InteractionDesk } from "./interaction-desk";
import { runPump } from "./pump";
import type { SessionStore } from "./store/store";
import type { TurnEnd } from "./turn-end";
import { recordUsage } from "./turn-usage";

export interface UpstreamReaderDeps {
  store: () => SessionStore;
  /** Whether the conversation still exists here: a deleted one has nothing left to read into (and recreates nothing). */
  exists(): boolean;
  log: EventLog;
  desk: Pick<InteractionDesk, "recordAsk" | "endAsk">;
  provider: () => AgentProvider;
  end: Pick<TurnEnd, "finish" | "fromResult" | "fail" | "failWithin" | "afterFail" | "afterRun">;
  budgets: Pick<BudgetStop, "budget" | "stop">;
  /** The conversation list shows the conversation idle (never rejects). */
  showIdle(): Promise<void>;
  /** What the running turn waits for changed: the conversation list follows. */
  waitingChanged(): void;
  /** A reader stopped (its run's stream is over, it gave up, or it was stopped): the queue may move. */
  stopped(): void;
  /** Resolves once every write committed so far is durable (ctx.storage.sync()). */
  durable(): Promise<void>;
}

/** At most this long between holding a delta and storing it (docs/sse-protocol.md §12). */
const TAIL_FLUSH_MS = 2000;

export class UpstreamReader {
  /** The timer that stores held deltas of a run gone quiet. */
  private tailFlush: ReturnType<typeof setTimeout> | undefined;
  private reader: { executionId: string; abort: AbortController; queue: IngestQueue<ProviderEvent> } | undefined;
  /**
   * The text of each streaming part of the running execution, so each delta is stored and sent
   * once (./part-deltas.ts). Memory only: a new instance sends a part whole once, then deltas.
   */
  private partTexts: { executionId: string; texts: Map<string, string> } | undefined;

  constructor(private readonly deps: UpstreamReaderDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** Starts the upstream reader for the running turn, unless one runs already in this instance. */
  ensure(): void {
    const turn = this.store.activeTurn();
    if (turn?.status !== "running" || !turn.controlRef) return;
    if (this.reader?.executionId === turn.executionId) return;
    const abort = new AbortController();
    const ref = turn.controlRef;
    const turnId = turn.turnId;
    const queue = new IngestQueue<ProviderEvent>({
      apply: (batch) =>
        this.deps.exists() ? this.ingest(turnId, ref.executionId, batch) : { admitted: 0, committed: false },
      durable: () => this.deps.durable(),
      // Bounded by bytes as well as by count: a part's frame carries its whole text so far.
      sizeOf: eventBytes,
    });
    const reader = { executionId: turn.executionId, abort, queue };
    this.reader = reader;
    runPump(
      this.deps.provider(),
      ref,
      {
        cursor: () => (this.deps.exists() ? this.store.cursorOf(turnId, ref.executionId) : undefined),
        ingest: (event) => queue.push(event),
        settled: () => queue.settled(),
        admitted: () => queue.admitted,
        backlogged: () => queue.backlogged(),
        onFailure: (listener) => queue.onFailure(listener),
        isLive: () => this.deps.exists() && this.store.turnStatus(turnId) === "running",
        finishFromResult: (result, reason) => this.deps.end.fromResult(turnId, ref.executionId, result, reason),
        environmentLost: (reason) =>
          this.deps.end.fail(
            turnId,
            "environment_lost",
            `the agent's environment is gone or stopped, and the run with it: ${reason}`,
          ),
      },
      { signal: abort.signal },
    )
      .then((outcome) => {
        if (outcome === "finished") return this.deps.end.afterRun(ref.executionId);
        // Could not reach the run: remembered, so a turn nothing can settle ends after a bounded time.
        if (outcome === "gave_up") this.deps.log.commit(() => this.store.markLost(turnId, Date.now()));
      })
      .catch((err) =>
        console.error(
          JSON.stringify({ msg: "upstream reader failed", executionId: ref.executionId, error: String(err) }),
        ),
      )
      .finally(() => {
        queue.close();
        if (this.reader === reader) this.reader = undefined;
        // Every way a reader stops lets go of its execution's held cursor (unless it reads again).
        if (this.reader?.executionId !== reader.executionId) this.release(reader.executionId);
        this.deps.stopped();
      });
  }

  /** Whether a reader runs in this instance. */
  reading(): boolean {
    return this.reader !== undefined;
  }

  /** Stops the reader (a cancel, the watchdog's fail, a shutdown): its execution's held cursor is let go now. */
  stop(): void {
    const reader = this.reader;
    if (!reader) return;
    reader.abort.abort();
    // Nothing read after a stop is applied.
    reader.queue.close();
    this.reader = undefined;
    this.release(reader.executionId);
  }

  /** Lets go of what the store holds in memory for an execution (a deleted conversation holds nothing, and gets no store back). */
  private release(executionId: string): void {
    if (this.deps.exists()) this.store.releaseHeld(executionId);
  }

  /**
   * Persists a batch of upstream events and what follows from them; answers how many were new and
   * whether anything was committed. Updates of a text or reasoning part the store may hold
   * (`holdableUpdate`) are published at once and stored with a later commit, several in one row
   * (./store/held-tail.ts); the other events go in one commit per run of them, each once (repeats are
   * dropped).
   */
  private ingest(turnId: string, executionId: string, batch: ProviderEvent[]): Applied {
    const store = this.store;
    if (this.partTexts?.executionId !== executionId) this.partTexts = { executionId, texts: new Map() };
    const texts = this.partTexts.texts;
    let admitted = 0;
    let committed = false;
    let group: ProviderEvent[] = [];
    const commitGroup = () => {
      if (group.length === 0) return;
      admitted += this.commitEvents(turnId, executionId, group, texts);
      committed = true;
      group = [];
    };
    for (const event of batch) {
      // The reader was stopped by what the batch held before (a stream error): nothing after it is taken.
      if (this.reader?.executionId !== executionId) break;
      if (event.kind === "part") {
        // What comes before a part's update is stored first: the part's text may be in it.
        commitGroup();
        const held = holdableUpdate(event, store.turnStatus(turnId), texts.get(event.part.id));
        if (held) {
          if (!store.admitUpstream(turnId, executionId, event.upstreamId!)) continue;
          admitted++;
          const hold = { turnId, executionId, ...held, upstreamId: event.upstreamId!, now: Date.now() };
          let row = store.holdUpdate(hold);
          if (!row) {
            // The tail is full or another part's: the commit stores it, this update starts the next.
            this.deps.log.commit(() => undefined);
            committed = true;
            row = store.holdUpdate(hold)!;
          }
          // A held delta's part carries its whole text (holdableUpdate): kept as upstream's own string.
          if (STREAMED_TYPES.has(event.part.type)) texts.set(event.part.id, String(event.part.text));
          this.deps.log.publishHeld(row);
          this.armTailFlush();
          continue;
        }
      }
      group.push(event);
    }
    commitGroup();
    return { admitted, committed };
  }

  /**
   * Stores what the store holds at most TAIL_FLUSH_MS after a delta was held, so a run that goes
   * quiet (an agent thinking) does not leave published deltas unstored for long. Runs even after
   * the reader stopped; a commit before then has stored the tail already.
   */
  private armTailFlush(): void {
    if (this.tailFlush !== undefined) return;
    this.tailFlush = setTimeout(() => {
      this.tailFlush = undefined;
      if (this.deps.exists() && this.store.holdsTail()) this.deps.log.commit(() => undefined);
    }, TAIL_FLUSH_MS);
  }

  /** One commit of upstream events (each once: repeats are dropped) and what follows from them; answers how many were new. */
  private commitEvents(
    turnId: string,
    executionId: string,
    batch: ProviderEvent[],
    texts: Map<string, string>,
  ): number {
    const store = this.store;
    let fresh = 0;
    let finished = false;
    let overBudget = false;
    let waitingChanged = false;
    let streamFailed = false;
    // The batch's part texts, held once it is stored: a rolled-back commit leaves them as they were.
    const drafted = new Map<string, string>();
    this.deps.log.commit((log) => {
      for (const event of batch) {
        // The stream failed: nothing after the failure is taken (its run is stopped upstream).
        if (streamFailed) break;
        if (event.upstreamId !== undefined && !store.admitUpstream(turnId, executionId, event.upstreamId)) continue;
        fresh++;
        // A new frame may carry a copy of a child task's update: applied once per sourceEventId.
        if (event.kind === "child-task" && !store.admitChildUpdate(turnId, executionId, event.task.sourceEventId))
          continue;
        const status = store.turnStatus(turnId);
        if (!status) continue;
        const now = Date.now();
        const step = ingestStep(
          {
            status,
            usage:
              event.kind === "usage" || event.kind === "terminal"
                ? (store.executionUsage(executionId) ?? emptyExecutionUsage(executionId))
                : emptyExecutionUsage(executionId),
            askStatus: (id) => store.interaction(id)?.status ?? null,
            cancelRequested: event.kind === "terminal" && store.turn(turnId)?.cancelReason != null,
            partText: (id) => (drafted.has(id) ? drafted.get(id) : texts.get(id)),
          },
          event,
        );
        if (step.partText) drafted.set(step.partText.partId, step.partText.text);
        if (step.shown) {
          const { type, data, usage } = step.shown;
          log.append({
            turnId,
            executionId,
            upstreamId: event.upstreamId ?? null,
            type,
            data,
            ...(usage ? { usage, usageMode: "cumulative" as const } : {}),
            now,
          });
        }
        if (step.askRequested && this.deps.desk.recordAsk(log, turnId, executionId, step.askRequested, now))
          waitingChanged = true;
        if (
          step.askEnded &&
          this.deps.desk.endAsk(log, step.askEnded.interactionId, step.askEnded.status, now, step.askEnded.reason)
        )
          waitingChanged = true;
        if (step.usage) {
          const budget = recordUsage(store, log, turnId, step.usage, now, () => this.deps.budgets.budget());
          if (status === "running" && budget?.exceeded === true) overBudget = true;
        }
        if (step.streamError && status === "running") {
          // In this commit: a crash after it cannot read past the error into a turn still running.
          this.deps.end.failWithin(log, store.turn(turnId)!, step.streamError, now);
          streamFailed = true;
        }
        if (step.finish && status === "running") {
          this.deps.end.finish(log, store.turn(turnId)!, step.finish.status, step.finish.text, step.finish.error, now);
          finished = true;
        }
      }
    });
    for (const [partId, text] of drafted) texts.set(partId, text);
    if (streamFailed) {
      // The turn ended here: its reader stops (its run is stopped upstream as an abandoned run's).
      this.partTexts = undefined;
      this.stop();
      this.deps.end.afterFail(turnId, true);
      return fresh;
    }
    // The conversation list shows the turn done as soon as it is, not when the stream closes.
    if (finished) {
      this.partTexts = undefined;
      void this.deps.showIdle();
    } else if (waitingChanged) this.deps.waitingChanged();
    if (overBudget) this.deps.budgets.stop(turnId);
    return fresh;
  }
}
