/**
 * Commit, then publish: events appended inside one storage transaction reach viewers only after
 * the transaction committed, and all of them or none. The one way the session writes its log.
 */
import type { EventRow, NewEvent } from "./session-store";

export interface Appender {
  append(event: NewEvent): EventRow;
}

export interface EventLogDeps {
  /** Runs `fn` in one storage transaction (rolled back if it throws). */
  transaction<T>(fn: () => T): T;
  append(event: NewEvent): EventRow;
  publish(row: EventRow): void;
}

export class EventLog {
  constructor(private readonly deps: EventLogDeps) {}

  commit<T>(fn: (log: Appender) => T): T {
    const rows: EventRow[] = [];
    const result = this.deps.transaction(() =>
      fn({
        append: (event) => {
          const row = this.deps.append(event);
          rows.push(row);
          return row;
        },
      }),
    );
    for (const row of rows) this.deps.publish(row);
    return result;
  }
}
