/** The emulator's `frames`: each run's SSE frames as sent, numbered from 1, for replay and for the run's own reads. */
import type { FrameRow } from "./store-schema";

export class FrameStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  lastFrameId(executionId: string): number {
    return (
      this.sql
        .exec<{ last: number | null }>("SELECT MAX(id) AS last FROM frames WHERE execution_id = ?", executionId)
        .one().last ?? 0
    );
  }

  insertFrame(executionId: string, id: number, type: string, data: string): void {
    this.sql.exec("INSERT INTO frames (execution_id, id, type, data) VALUES (?, ?, ?, ?)", executionId, id, type, data);
  }

  /** An execution's frames with id ≥ `from`, in order. */
  framesFrom(executionId: string, from: number): FrameRow[] {
    return this.sql
      .exec<FrameRow>(
        "SELECT id, type, data FROM frames WHERE execution_id = ? AND id >= ? ORDER BY id",
        executionId,
        from,
      )
      .toArray();
  }

  framesOfType(executionId: string, type: string): FrameRow[] {
    return this.sql
      .exec<FrameRow>(
        "SELECT id, type, data FROM frames WHERE execution_id = ? AND type = ? ORDER BY id",
        executionId,
        type,
      )
      .toArray();
  }
}
