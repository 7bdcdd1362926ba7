/**
 * The session's `checkpoints` table: each checkpoint of the workspace this conversation asked for
 * (../workspace.ts), under the idempotency key it was asked with, whatever came of it. A turn's
 * checkpoint is taken before it runs (`kind` turn); an undo takes one of the workspace as it was
 * before the undo (`kind` undo), which its redo restores. `status`: created (its snapshot exists),
 * unknown (asked, nothing proved an outcome: asked again under the same key before any use),
 * failed or unavailable (there is none, and `message` says why), released (given back, by the
 * retention or a delete). `changes_at`: when the turn's changes were read and recorded.
 *
 * And the `branch_workspaces` table: a branch that runs on the files as they were at its fork
 * point has a sandbox of its own, created from the checkpoint `seed_key` names (which is then in
 * use, and kept); `environment` its record as the provider keeps it; `status` live, or destroyed
 * (a delete, in dependency order: the branch's sandbox before its seed checkpoint).
 */
import type { EnvironmentRecord } from "../../providers/provider";

export type CheckpointStatus = "created" | "unknown" | "failed" | "unavailable" | "released";

export interface CheckpointRecord {
  key: string;
  kind: "turn" | "undo";
  turnId: string;
  environmentId: string;
  snapshotId: string | null;
  status: CheckpointStatus;
  message: string | null;
  createdAt: number;
  changesAt: number | null;
}

type Row = {
  key: string;
  kind: string;
  turn_id: string;
  environment_id: string;
  snapshot_id: string | null;
  status: string;
  message: string | null;
  created_at: number;
  changes_at: number | null;
};

const COLUMNS = "key, kind, turn_id, environment_id, snapshot_id, status, message, created_at, changes_at";

function recordOf(row: Row): CheckpointRecord {
  return {
    key: row.key,
    kind: row.kind === "undo" ? "undo" : "turn",
    turnId: row.turn_id,
    environmentId: row.environment_id,
    snapshotId: row.snapshot_id,
    status: row.status as CheckpointStatus,
    message: row.message,
    createdAt: row.created_at,
    changesAt: row.changes_at,
  };
}

export class CheckpointStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  get(key: string): CheckpointRecord | null {
    const row = this.sql.exec<Row>(`SELECT ${COLUMNS} FROM checkpoints WHERE key = ?`, key).toArray()[0];
    return row ? recordOf(row) : null;
  }

  /** The checkpoint taken before a turn, if one was asked for. */
  ofTurn(turnId: string): CheckpointRecord | null {
    const row = this.sql
      .exec<Row>(`SELECT ${COLUMNS} FROM checkpoints WHERE turn_id = ? AND kind = 'turn'`, turnId)
      .toArray()[0];
    return row ? recordOf(row) : null;
  }

  /** Every checkpoint, oldest first. */
  all(): CheckpointRecord[] {
    return this.sql.exec<Row>(`SELECT ${COLUMNS} FROM checkpoints ORDER BY created_at, key`).toArray().map(recordOf);
  }

  /** Writes a checkpoint's record (a new one, or what a later answer proved about it). */
  put(record: CheckpointRecord): void {
    this.sql.exec(
      `INSERT INTO checkpoints (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(key) DO UPDATE SET snapshot_id = excluded.snapshot_id, status = excluded.status,
         message = excluded.message, changes_at = excluded.changes_at`,
      record.key,
      record.kind,
      record.turnId,
      record.environmentId,
      record.snapshotId,
      record.status,
      record.message,
      record.createdAt,
      record.changesAt,
    );
  }

  // ---- branch workspaces

  branchWorkspaces(): BranchWorkspace[] {
    return this.sql
      .exec<{ branch: number; seed_key: string; environment: string; status: string; created_at: number }>(
        "SELECT branch, seed_key, environment, status, created_at FROM branch_workspaces ORDER BY branch",
      )
      .toArray()
      .map((row) => ({
        branch: row.branch,
        seedKey: row.seed_key,
        environment: JSON.parse(row.environment) as EnvironmentRecord,
        status: row.status === "destroyed" ? "destroyed" : "live",
        createdAt: row.created_at,
      }));
  }

  branchWorkspace(branch: number): BranchWorkspace | null {
    return this.branchWorkspaces().find((w) => w.branch === branch) ?? null;
  }

  putBranchWorkspace(workspace: BranchWorkspace): void {
    this.sql.exec(
      `INSERT INTO branch_workspaces (branch, seed_key, environment, status, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(branch) DO UPDATE SET environment = excluded.environment, status = excluded.status`,
      workspace.branch,
      workspace.seedKey,
      JSON.stringify(workspace.environment),
      workspace.status,
      workspace.createdAt,
    );
  }
}

export interface BranchWorkspace {
  branch: number;
  /** The checkpoint the branch's sandbox was created from. */
  seedKey: string;
  environment: EnvironmentRecord;
  status: "live" | "destroyed";
  createdAt: number;
}
