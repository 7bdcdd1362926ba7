/**
 * Ingest at the speed of the wire: the upstream events of one reader, committed in batches. An
 * event pushed while no commit is in flight is applied at once (no added delay, no timer); events
 * pushed while a batch's commit is being made durable wait, and go together in the next commit.
 * So a slow commit makes bigger batches, never a slower reader, and a frame waits at most one
 * commit before its own.
 *
 * `apply` is one synchronous storage transaction over the whole batch (./upstream-reader.ts), or
 * none when the store holds the batch's text deltas to write later (./store/log-chunks.ts): a batch that
 * committed nothing is not waited on;
 * `durable` resolves once what was committed is durable (`ctx.storage.sync()`: the output gate,
 * which also holds every socket send of the object until then). A batch that throws is rolled
 * back whole, then applied again in halves, in order, down to the one event that fails: the events
 * before it commit in this pass (so one bad frame costs one pass, not one pass per frame before
 * it), and nothing after it is applied (the cursor never passes an event not stored). The queue is
 * then dropped and the failure handed to the reader (the next `push` or `settled` throws it, and
 * `onFailure` listeners drop the stream being read), which reconnects from the cursor the store
 * holds, so the failing event is read again, first and alone.
 *
 * The backlog is bounded by count and by an estimate of its bytes (`sizeOf`): upstream frames may
 * each be large (a part's whole text so far, up to 1 MiB). Once either bound is reached the reader
 * waits for the commit in flight (`backlogged`), so the queue holds at most the bound plus the one
 * frame that reached it; a frame larger than the bound still goes, alone.
 */

/** What applying a batch did: its new events, and whether it committed (only then is it waited on). */
export interface Applied {
  admitted: number;
  committed: boolean;
}

export interface IngestQueueDeps<E> {
  /**
   * Applies a batch, in one commit or none (text deltas the store holds, ./store/log-chunks.ts); answers
   * how many of its events were new (not repeats) and whether it committed anything.
   */
  apply(batch: E[]): Applied;
  /** Resolves once everything committed so far is durable. */
  durable(): Promise<void>;
  /** Events queued beyond which the reader waits for the commit in flight (memory stays bounded). */
  maxQueued?: number;
  /** An estimate of an event's size in bytes (its memory); without it, events are not weighed. */
  sizeOf?(event: E): number;
  /** Estimated bytes queued beyond which the reader waits for the commit in flight. */
  maxQueuedBytes?: number;
}

const DEFAULT_MAX_QUEUED = 500;
// Far below the isolate's 128 MB, yet a few dozen large frames (a part's whole text so far, up to 1 MiB each).
export const DEFAULT_MAX_QUEUED_BYTES = 8 * 1024 * 1024;

export class IngestQueue<E> {
  private queue: E[] = [];
  /** The estimated bytes of `queue`. */
  private bytes = 0;
  private running = false;
  private closed = false;
  private failure: unknown = undefined;
  private waiters: Array<{ resolve(): void; reject(err: unknown): void }> = [];
  private readonly failureListeners = new Set<() => void>();
  /** Events applied as new since this queue was made (a reader's progress). */
  admitted = 0;
  /** Commits made (batches applied that committed), for tests and counters. */
  commits = 0;

  constructor(private readonly deps: IngestQueueDeps<E>) {}

  /** Queues one event; the first one while nothing is in flight is committed now, synchronously. */
  push(event: E): void {
    this.throwFailure();
    if (this.closed) return;
    this.queue.push(event);
    if (this.deps.sizeOf) this.bytes += this.deps.sizeOf(event);
    if (!this.running) void this.run();
  }

  /** The estimated bytes of the events waiting for a commit. */
  queuedBytes(): number {
    return this.bytes;
  }

  /** Whether the reader should wait (`settled`) before reading on. */
  backlogged(): boolean {
    return (
      this.queue.length >= (this.deps.maxQueued ?? DEFAULT_MAX_QUEUED) ||
      this.bytes >= (this.deps.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES)
    );
  }

  /** Resolves when every event pushed so far is committed and durable; rejects with a batch's failure. */
  settled(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.takeFailure());
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /**
   * Calls `listener` when a batch fails, so the reader can drop the stream it is reading (it may
   * wait long for its next frame, an ask's answer for one) and read it again from the cursor.
   * Answers the function that stops listening.
   */
  onFailure(listener: () => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /** Drops what is queued and applies nothing more (the reader was stopped). */
  close(): void {
    this.closed = true;
    this.drop();
    this.wake();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const batch = this.queue;
        this.drop();
        const before = this.commits;
        try {
          this.applyInOrder(batch);
        } finally {
          // What arrives while this commit becomes durable forms the next batch; what committed
          // before a failing event is made durable before the reader hears of the failure.
          if (this.commits > before) await this.deps.durable();
        }
      }
    } catch (err) {
      this.failure = err;
      this.drop();
      for (const listener of [...this.failureListeners]) listener();
    } finally {
      this.running = false;
      this.wake();
    }
  }

  /**
   * Applies `batch` in one commit; if it fails (rolled back whole), its halves in order, and so on
   * down to the one event that fails, which throws. Nothing after a failing event is applied.
   */
  private applyInOrder(batch: E[]): void {
    try {
      const applied = this.deps.apply(batch);
      this.admitted += applied.admitted;
      if (applied.committed) this.commits++;
    } catch (err) {
      if (batch.length === 1) throw err;
      const half = Math.ceil(batch.length / 2);
      this.applyInOrder(batch.slice(0, half));
      this.applyInOrder(batch.slice(half));
    }
  }

  private drop(): void {
    this.queue = [];
    this.bytes = 0;
  }

  private wake(): void {
    if (this.running) return;
    const waiters = this.waiters;
    this.waiters = [];
    if (this.failure !== undefined && waiters.length > 0) {
      const err = this.takeFailure();
      for (const w of waiters) w.reject(err);
      return;
    }
    for (const w of waiters) w.resolve();
  }

  private takeFailure(): unknown {
    const err = this.failure;
    this.failure = undefined;
    return err;
  }

  private throwFailure(): void {
    if (this.failure !== undefined) throw this.takeFailure();
  }
}
