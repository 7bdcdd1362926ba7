/**
 * Ingest at the speed of the wire: the upstream events of one reader, committed in batches. An
 * event pushed while no commit is in flight is applied at once (no added delay, no timer); events
 * pushed while a batch's commit is being made durable wait, and go together in the next commit.
 * So a slow commit makes bigger batches, never a slower reader, and a frame waits at most one
 * commit before its own.
 *
 * `apply` is one synchronous storage transaction over the whole batch (./upstream-reader.ts);
 * `durable` resolves once what was committed is durable (`ctx.storage.sync()`: the output gate,
 * which also holds every socket send of the object until then). A batch that throws is rolled
 * back whole: the queue is dropped and the failure is handed to the reader (the next `push` or
 * `settled` throws it, and `onFailure` listeners drop the stream being read), which reconnects from
 * the cursor the store still holds, so what the batch held is read again.
 */

export interface IngestQueueDeps<E> {
  /** Applies a batch in one commit; answers how many of its events were new (not repeats). */
  apply(batch: E[]): number;
  /** Resolves once everything committed so far is durable. */
  durable(): Promise<void>;
  /** Events queued beyond which the reader waits for the commit in flight (memory stays bounded). */
  maxQueued?: number;
}

// Upstream frames may each be large (a part's whole text so far, up to 1 MiB): a few hundred bound the memory.
const DEFAULT_MAX_QUEUED = 500;

export class IngestQueue<E> {
  private queue: E[] = [];
  private running = false;
  private closed = false;
  private failure: unknown = undefined;
  private waiters: Array<{ resolve(): void; reject(err: unknown): void }> = [];
  private readonly failureListeners = new Set<() => void>();
  /** Events applied as new since this queue was made (a reader's progress). */
  admitted = 0;
  /** Commits made (batches applied), for tests and counters. */
  commits = 0;

  constructor(private readonly deps: IngestQueueDeps<E>) {}

  /** Queues one event; the first one while nothing is in flight is committed now, synchronously. */
  push(event: E): void {
    this.throwFailure();
    if (this.closed) return;
    this.queue.push(event);
    if (!this.running) void this.run();
  }

  /** Whether the reader should wait (`settled`) before reading on. */
  backlogged(): boolean {
    return this.queue.length >= (this.deps.maxQueued ?? DEFAULT_MAX_QUEUED);
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
    this.queue = [];
    this.wake();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const batch = this.queue;
        this.queue = [];
        this.admitted += this.deps.apply(batch);
        this.commits++;
        // What arrives while this commit becomes durable forms the next batch.
        await this.deps.durable();
      }
    } catch (err) {
      this.failure = err;
      this.queue = [];
      for (const listener of [...this.failureListeners]) listener();
    } finally {
      this.running = false;
      this.wake();
    }
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
