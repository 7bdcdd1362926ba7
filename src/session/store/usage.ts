/**
 * The session's `usage` table: each execution's usage fold (../../usage/usage-fold.ts), as the
 * fold's state. While a turn runs its record's usage is read from here (./store.ts).
 */
import { type ExecutionUsageState, ExecutionUsageStateSchema } from "../../usage/usage-fold";

export class UsageStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  executionUsage(executionId: string): ExecutionUsageState | null {
    const row = this.sql
      .exec<{ state: string }>("SELECT state FROM usage WHERE execution_id = ?", executionId)
      .toArray()[0];
    return row ? ExecutionUsageStateSchema.parse(JSON.parse(row.state)) : null;
  }

  allExecutionUsage(): ExecutionUsageState[] {
    return this.sql
      .exec<{ state: string }>("SELECT state FROM usage")
      .toArray()
      .map((r) => ExecutionUsageStateSchema.parse(JSON.parse(r.state)));
  }

  /** Stores an execution's fold, under the turn it ran for. */
  putExecutionUsage(turnId: string, state: ExecutionUsageState): void {
    this.sql.exec(
      "INSERT INTO usage (execution_id, turn_id, state) VALUES (?, ?, ?) ON CONFLICT(execution_id) DO UPDATE SET state = excluded.state",
      state.executionId,
      turnId,
      JSON.stringify(state),
    );
  }
}
