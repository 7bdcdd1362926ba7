/**
 * Commit, then publish: events appended inside one storage transaction reach viewers only after
 * the transaction committed, and all of them or none. The one way the session writes its log.
 *
 * The upstream reader commits a whole batch of frames at a time (./ingest-queue.ts): what the
 * store holds in memory for the batch (cursor, seen ids) is written by `settle` inside the same
 * transaction, and a transaction that fails drops what the store held (`rolledBack`), so memory
 * never runs ahead of storage. A commit's rows are published in order, in one synchronous step
 * after it (the subscriptions send such a burst as one message per socket): the Durable Object's
 * output gate then holds every socket send until the commit is durable, so no viewer sees a row a
 * crash could take back.
 *
 * One exception, the held tail (./store/log-chunks.ts, docs/sse-protocol.md §12): a text delta that
 * continues a part whose upstream frame carried the part's whole text is published at once
 * (`publishHeld`) and stored with a later commit, several in one row. `settle` writes the tail in
 * every commit before the commit's own rows, so the log's order is the order viewers saw; what a
 * crash takes of the tail is read again from upstream, and comes back within the part's whole text.
 */
import type { EventRow, NewEvent } from "./store/records";
import type { SessionStore } from "./store/store";

export interface Appender {
  append(event: NewEvent): EventRow;
}

export interface EventLogDeps {
  /** Runs `fn` in one storage transaction (rolled back if it throws). */
  transaction<T>(fn: () => T): T;
  append(event: NewEvent): EventRow;
  /** Each row a commit appended, in order, once it committed. */
  publish(row: EventRow): void;
  /** Writes what the store holds for this commit, inside the transaction, before it commits. */
  settle?(): void;
  /** The transaction rolled back: what the store holds in memory is dropped. */
  rolledBack?(): void;
  /** The transaction committed: what it wrote of what the store held is stored now. */
  committed?(): void;
}

export class EventLog {
  /** Transactions committed through this log by this instance (the benchmarks: frames per commit). */
  commits = 0;

  constructor(private readonly deps: EventLogDeps) {}

  commit<T>(fn: (log: Appender) => T): T {
    const rows: EventRow[] = [];
    let result: T;
    try {
      result = this.deps.transaction(() => {
        const value = fn({
          append: (event) => {
            const row = this.deps.append(event);
            rows.push(row);
            return row;
          },
        });
        this.deps.settle?.();
        return value;
      });
    } catch (err) {
      this.deps.rolledBack?.();
      throw err;
    }
    this.commits++;
    this.deps.committed?.();
    for (const row of rows) this.deps.publish(row);
    return result;
  }

  /** Publishes a delta the store holds (not yet stored): the one row that reaches viewers before its commit. */
  publishHeld(row: EventRow): void {
    this.deps.publish(row);
  }
}

type LogStore = Pick<SessionStore, "appendEvent" | "settleAdmissions" | "discardHeld" | "tailCommitted">;

/**
 * How the log writes through a session's store: its appends, and what the store holds for a
 * commit (written inside it, dropped if it rolls back, let go once it committed). The one wiring,
 * the session object's and the tests'. `open` answers the store, making it if need be (an append
 * creates the session's storage); `current` the store if there is one (a commit that wrote nothing
 * creates nothing).
 */
export function storeWrites(
  open: () => LogStore,
  current: () => LogStore | null = open,
): Pick<EventLogDeps, "append" | "settle" | "rolledBack" | "committed"> {
  return {
    append: (event) => open().appendEvent(event),
    settle: () => current()?.settleAdmissions(),
    rolledBack: () => current()?.discardHeld(),
    committed: () => current()?.tailCommitted(),
  };
}
