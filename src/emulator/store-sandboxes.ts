/**
 * The emulator's `sandboxes`: a sandbox as created, its status and readiness, when it started and
 * was last used (with when its last run ended, what its idleness is measured from), its clock moved
 * by a control route. A deleted sandbox stays, marked, its idempotency key freed.
 */
import type { SandboxRow } from "./store-schema";

export class SandboxStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  /** A sandbox row as stored (deleted ones included). */
  sandbox(id: string): SandboxRow | undefined {
    return this.sql.exec<SandboxRow>("SELECT * FROM sandboxes WHERE id = ?", id).toArray()[0];
  }

  /** Sandboxes not deleted that were created from a snapshot (a snapshot is in use while they live). */
  childrenOfSnapshot(snapshotId: string): string[] {
    return this.sql
      .exec<{ id: string }>(
        "SELECT id FROM sandboxes WHERE status != 'deleted' AND json_extract(body, '$.fromSnapshot') = ? ORDER BY created_at",
        snapshotId,
      )
      .toArray()
      .map((r) => r.id);
  }

  sandboxIdByIdempotencyKey(key: string): string | undefined {
    return this.sql.exec<{ id: string }>("SELECT id FROM sandboxes WHERE idempotency_key = ?", key).toArray()[0]?.id;
  }

  /** Ids of sandboxes not deleted, oldest first. */
  sandboxIds(limit: number, offset: number): string[] {
    return this.sql
      .exec<{ id: string }>(
        "SELECT id FROM sandboxes WHERE status != 'deleted' ORDER BY created_at LIMIT ? OFFSET ?",
        limit,
        offset,
      )
      .toArray()
      .map((r) => r.id);
  }

  insertSandbox(row: {
    id: string;
    idempotencyKey: string | null;
    body: unknown;
    readyAt: number;
    createdAt: number;
  }): void {
    // A key held by a deleted sandbox is freed first, so a create with it makes a new one.
    if (row.idempotencyKey)
      this.sql.exec("UPDATE sandboxes SET idempotency_key = NULL WHERE idempotency_key = ?", row.idempotencyKey);
    this.sql.exec(
      "INSERT INTO sandboxes (id, idempotency_key, body, status, readiness, ready_at, created_at, last_activity_at) VALUES (?, ?, ?, 'provisioning', 'transitioning', ?, ?, ?)",
      row.id,
      row.idempotencyKey,
      JSON.stringify(row.body),
      row.readyAt,
      row.createdAt,
      row.createdAt,
    );
  }

  /** The sandbox was used now (a runtime call, a resume). */
  touchSandbox(id: string, at: number): void {
    this.sql.exec("UPDATE sandboxes SET last_activity_at = ? WHERE id = ?", at, id);
  }

  setSandboxStartedAt(id: string, at: number): void {
    this.sql.exec("UPDATE sandboxes SET started_at = ? WHERE id = ?", at, id);
  }

  /**
   * Ages the sandbox by `ms`, as if that much time had passed for it: its times and its runs'
   * move back by that much (`POST /_emulator/sandboxes/:id/clock`).
   */
  ageSandbox(id: string, ms: number): void {
    this.sql.exec(
      "UPDATE sandboxes SET created_at = created_at - ?, started_at = started_at - ?, last_activity_at = last_activity_at - ?, ready_at = ready_at - ? WHERE id = ?",
      ms,
      ms,
      ms,
      ms,
      id,
    );
    this.sql.exec(
      "UPDATE executions SET created_at = created_at - ?, finished_at = finished_at - ? WHERE sandbox_id = ?",
      ms,
      ms,
      id,
    );
  }

  /** When the sandbox's last run ended (ms), null when none has. */
  lastRunEndedAt(sandboxId: string): number | null {
    return this.sql
      .exec<{ at: number | null }>("SELECT MAX(finished_at) AS at FROM executions WHERE sandbox_id = ?", sandboxId)
      .one().at;
  }

  /** How many sandboxes run now (the account's usage [ours]). */
  runningSandboxCount(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running'").one().n;
  }

  updateSandbox(
    id: string,
    fields: { status: string; readiness: string; readyAt: number | null; error: string | null },
  ): void {
    this.sql.exec(
      "UPDATE sandboxes SET status = ?, readiness = ?, ready_at = ?, error = ? WHERE id = ?",
      fields.status,
      fields.readiness,
      fields.readyAt,
      fields.error,
      id,
    );
  }

  setSandboxStatus(id: string, status: string): void {
    this.sql.exec("UPDATE sandboxes SET status = ? WHERE id = ?", status, id);
  }

  /** Sets how many answers have shown this sandbox "warming" (0 when it becomes ready again). */
  setWarmingPolls(id: string, polls: number): void {
    this.sql.exec("UPDATE sandboxes SET warming_polls = ? WHERE id = ?", polls, id);
  }

  /** Marks a sandbox deleted and frees its idempotency key. */
  deleteSandbox(id: string): void {
    this.sql.exec("UPDATE sandboxes SET status = 'deleted', idempotency_key = NULL WHERE id = ?", id);
  }
}
