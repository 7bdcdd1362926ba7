/**
 * The workspace's checkpoints as the session sees them (seed 000, "Workspace branching"): a
 * checkpoint taken under an idempotency key, the real difference between two states of the
 * workspace, a restore in place, a release. Every answer says its outcome; one the provider could
 * not prove is `unknown`, never a success (a lost response, an answer without an outcome). A
 * deployment without the routes is `unavailable`: the session then keeps the tool-call view and
 * offers no undo. The Tangle client is ./tangle/checkpoints.ts; the CLI Bridge has none.
 */

/** One file a turn changed, read from the workspace (never from the agent's tool calls). */
interface WorkspaceFileChange {
  path: string;
  status: "added" | "modified" | "deleted" | "renamed";
  /** A rename's earlier path. */
  from?: string;
  sizeBefore?: number;
  sizeAfter?: number;
  binary: boolean;
  /** A unified text diff; absent for a binary, or past the diff's byte bound. */
  diff?: string;
}

export type CheckpointTaken =
  /** Taken now, or (`replayed`) taken earlier under the same key with the same material. */
  | { status: "created" | "replayed"; snapshotId: string; createdAt: string; sizeBytes?: number }
  /** The key was used for other material: nothing was taken. */
  | { status: "conflict"; message: string }
  /** Refused with an explicit failure: nothing was taken. */
  | { status: "failed"; message: string }
  /** No answer that proves an outcome: a snapshot may exist under the key (a retry with it replays). */
  | { status: "unknown"; message: string }
  /** The deployment cannot take one. */
  | { status: "unavailable"; message: string };

export type WorkspaceDiff =
  | { status: "ok"; files: WorkspaceFileChange[]; truncated: boolean }
  | { status: "unavailable" | "failed"; message: string };

export type RestoreOutcome =
  | { status: "restored" | "replayed"; restoredAt?: string }
  /** A run is in flight in the environment: nothing was restored. */
  | { status: "busy"; message: string }
  /** The checkpoint is gone. */
  | { status: "not_found"; message: string }
  | { status: "conflict"; message: string }
  /** Asked, and nothing proves what happened: the workspace may or may not be restored. */
  | { status: "unknown"; message: string }
  | { status: "unavailable"; message: string };

/** A release's outcome: only `deleted` and `already_absent` prove the checkpoint is gone. */
export type CheckpointRelease = "deleted" | "already_absent" | "unknown";

export interface WorkspaceCheckpoints {
  /** Takes a checkpoint of the environment's whole workspace under `key` (a repeat with the same tags replays it). */
  take(environmentId: string, request: { key: string; tags: string[] }): Promise<CheckpointTaken>;
  /** What changed from checkpoint `from` to checkpoint `to` (or the live workspace), text diffs within `maxBytes` in all. */
  diff(environmentId: string, from: string, to: string | "live", maxBytes: number): Promise<WorkspaceDiff>;
  /** Restores the workspace in place to a checkpoint; `operationId` makes a repeat the same restore. */
  restore(environmentId: string, snapshotId: string, operationId: string): Promise<RestoreOutcome>;
  /** Releases a checkpoint; safe to repeat. */
  release(environmentId: string, snapshotId: string): Promise<CheckpointRelease>;
}
