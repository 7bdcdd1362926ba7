/**
 * The emulator's `snapshots` (a sandbox's files copied at a moment, the copy a tree of
 * ./store-files.ts owned by `snap:<id>`, kept when its sandbox is deleted) and `restores` (each
 * restore in place by its operation id, so the same operation again is answered, not redone).
 */
import { type FileStore, snapshotOwner } from "./store-files";

export interface SnapshotRow extends Record<string, SqlStorageValue> {
  id: string;
  sandbox_id: string;
  created_at: number;
  /** The tags, as JSON. */
  tags: string;
  size_bytes: number;
  idempotency_key: string | null;
  request_digest: string | null;
}

export interface RestoreRow extends Record<string, SqlStorageValue> {
  operation_id: string;
  sandbox_id: string;
  snapshot_id: string;
  restored_at: number;
}

export class SnapshotStore {
  constructor(
    private readonly sql: Pick<SqlStorage, "exec">,
    private readonly files: FileStore,
  ) {}

  snapshot(id: string): SnapshotRow | undefined {
    return this.sql.exec<SnapshotRow>("SELECT * FROM snapshots WHERE id = ?", id).toArray()[0];
  }

  /** The snapshot a sandbox took under an idempotency key. */
  byKey(sandboxId: string, key: string): SnapshotRow | undefined {
    return this.sql
      .exec<SnapshotRow>("SELECT * FROM snapshots WHERE sandbox_id = ? AND idempotency_key = ?", sandboxId, key)
      .toArray()[0];
  }

  /** A sandbox's snapshots, oldest first. */
  list(sandboxId: string): SnapshotRow[] {
    return this.sql
      .exec<SnapshotRow>("SELECT * FROM snapshots WHERE sandbox_id = ? ORDER BY created_at, id", sandboxId)
      .toArray();
  }

  /** Copies the sandbox's files into a new snapshot. */
  take(row: {
    id: string;
    sandboxId: string;
    createdAt: number;
    tags: string[];
    idempotencyKey: string | null;
    requestDigest: string | null;
  }): SnapshotRow {
    this.files.copy(row.sandboxId, snapshotOwner(row.id));
    this.sql.exec(
      "INSERT INTO snapshots (id, sandbox_id, created_at, tags, size_bytes, idempotency_key, request_digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
      row.id,
      row.sandboxId,
      row.createdAt,
      JSON.stringify(row.tags),
      this.files.totalSize(snapshotOwner(row.id)),
      row.idempotencyKey,
      row.requestDigest,
    );
    return this.snapshot(row.id)!;
  }

  /** Forgets a snapshot and its files; whether there was one. */
  remove(id: string): boolean {
    const had = this.snapshot(id) !== undefined;
    this.sql.exec("DELETE FROM snapshots WHERE id = ?", id);
    this.files.drop(snapshotOwner(id));
    return had;
  }

  restore(operationId: string): RestoreRow | undefined {
    return this.sql.exec<RestoreRow>("SELECT * FROM restores WHERE operation_id = ?", operationId).toArray()[0];
  }

  /** Replaces the sandbox's files with the snapshot's, recorded under the operation id. */
  restoreInto(operationId: string, sandboxId: string, snapshotId: string, at: number): RestoreRow {
    this.files.copy(snapshotOwner(snapshotId), sandboxId);
    this.sql.exec(
      "INSERT INTO restores (operation_id, sandbox_id, snapshot_id, restored_at) VALUES (?, ?, ?, ?)",
      operationId,
      sandboxId,
      snapshotId,
      at,
    );
    return this.restore(operationId)!;
  }
}
