/** The emulator's `frames`: each run's SSE frames as sent, numbered from 1, for replay and for the run's own reads. */
import type { FrameRow } from "./store-schema";

export class FrameStore {
  /**
   * Each execution's last frame id as read or written here (the runner numbers every frame it
   * sends from it: not a query per frame). This store is the only writer of frames; `forget`
   * after anything else deletes some.
   */
  private readonly last = new Map<string, number>();

  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  lastFrameId(executionId: string): number {
    const known = this.last.get(executionId);
    if (known !== undefined) return known;
    const last =
      this.sql
        .exec<{ last: number | null }>("SELECT MAX(id) AS last FROM frames WHERE execution_id = ?", executionId)
        .one().last ?? 0;
    this.last.set(executionId, last);
    return last;
  }

  insertFrame(executionId: string, id: number, type: string, data: string): void {
    this.sql.exec("INSERT INTO frames (execution_id, id, type, data) VALUES (?, ?, ?, ?)", executionId, id, type, data);
    this.last.set(executionId, Math.max(id, this.last.get(executionId) ?? 0));
  }

  /** Forgets the last ids held (frames were deleted: a reset, a session's deletion). */
  forget(): void {
    this.last.clear();
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
