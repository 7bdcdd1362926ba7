/**
 * The conversation's workspace checkpoints (seed 000, "Workspace branching"; docs/api.md "The
 * workspace"), over the provider's ../providers/checkpoints.ts:
 *  - before each turn is dispatched, a checkpoint of the workspace, keyed by the turn's execution
 *    id (a dispatch resumed after a crash asks again under the same key and gets the same one);
 *    one that fails never stops the turn: the turn's changes then come from its tool calls, and say so;
 *  - once a turn ended, what it really changed: its checkpoint compared with the next one (or the
 *    workspace as the turn left it), recorded once as a `workspace.changes` event. The next turn's
 *    checkpoint waits for that (`settle`), so no other turn's changes are read as this one's;
 *  - undo: the workspace restored in place to a turn's checkpoint, after a checkpoint of it as it
 *    was (the undo's own, which a redo restores); idempotent under the operation id; refused while
 *    a turn runs or waits; shown as a `workspace.restored` event. Only an explicit outcome upstream
 *    is acknowledged: an unknown one is refused retryable (the same operation id asks again);
 *  - retention: at most WORKSPACE_CHECKPOINTS_MAX kept, the oldest released first; a delete
 *    releases every one (`releaseAll`).
 */
import type { Config } from "../config";
import { Refusal } from "../errors";
import { canonicalDigest, sha256Hex } from "../lib/digest";
import type { CheckpointTaken, WorkspaceCheckpoints } from "../providers/checkpoints";
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import type { CheckpointView, RestoreAck, TurnChanges } from "../schemas/checkpoints";
import type { BranchWorkspaces } from "./branch-workspace";
import type { EventLog } from "./event-log";
import { priorOperation } from "./operations";
import type { CheckpointRecord, CheckpointStatus } from "./store/checkpoints";
import { type SessionContext, TERMINAL_TURN_STATUSES, type TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";

export interface WorkspaceDeps {
  /** The branches' own sandboxes (./branch-workspace.ts): which checkpoints are in use, a branch's sandbox. */
  branches: Pick<BranchWorkspaces, "inUse" | "liveEnvironment" | "destroyAll">;
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<AgentProvider, "checkpoints" | "ensureEnvironment" | "claimsFor" | "deleteEnvironment">;
  config: () => Pick<Config, "WORKSPACE_CHECKPOINTS_MAX" | "WORKSPACE_DIFF_MAX_BYTES" | "WORKSPACE_FORKS_MAX">;
  /** The user's ready environment (resumed if it idled out). */
  environment(context: SessionContext): Promise<EnvironmentRecord>;
}

/** A warning the turn's acceptance carries: its checkpoint could not be taken or confirmed. */
export type CheckpointNotice = { code: string; message: string };

/** A turn's checkpoint key: deterministic, so a resumed dispatch asks under the same one. */
function checkpointKey(executionId: string): string {
  return `ckpt-${executionId}`.replace(/[^A-Za-z0-9._-]/g, "_");
}

/** The tags a checkpoint is taken with (the Sandbox's tags: at most 128 bytes of `[A-Za-z0-9._-]`): asked again, the same. */
async function tagsOf(kind: CheckpointRecord["kind"], turnId: string): Promise<string[]> {
  return [kind === "undo" ? "acg.undo" : "acg.checkpoint", `acg.turn.${(await sha256Hex(turnId)).slice(0, 32)}`];
}

function statusOf(taken: CheckpointTaken): CheckpointStatus {
  switch (taken.status) {
    case "created":
    case "replayed":
      return "created";
    case "unknown":
      return "unknown";
    case "unavailable":
      return "unavailable";
    default:
      return "failed";
  }
}

export class Workspace {
  /** The one read of ended turns' changes under way, if any. */
  private settling: Promise<void> | null = null;

  constructor(private readonly deps: WorkspaceDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  private get checkpoints(): WorkspaceCheckpoints | undefined {
    return this.deps.provider().checkpoints;
  }

  /** The provider's checkpoints, where new ones are taken (WORKSPACE_CHECKPOINTS_MAX 0: none; those kept are still used). */
  private get taking(): WorkspaceCheckpoints | undefined {
    return this.deps.config().WORKSPACE_CHECKPOINTS_MAX > 0 ? this.checkpoints : undefined;
  }

  /**
   * Before a turn's dispatch: the ended turns' changes read first, then the turn's checkpoint.
   * Never throws: what went wrong is the notice its acceptance carries.
   */
  async before(turnId: string, executionId: string, environmentId: string): Promise<CheckpointNotice | undefined> {
    const checkpoints = this.taking;
    if (!checkpoints) return undefined;
    try {
      await this.settle(true);
      const key = checkpointKey(executionId);
      const known = this.store.checkpoints.get(key);
      if (known?.status === "created" && known.environmentId === environmentId) return undefined;
      const taken = await checkpoints.take(environmentId, { key, tags: await tagsOf("turn", turnId) });
      const record: CheckpointRecord = {
        key,
        kind: "turn",
        turnId,
        environmentId,
        snapshotId: taken.status === "created" || taken.status === "replayed" ? taken.snapshotId : null,
        status: statusOf(taken),
        message: "message" in taken ? taken.message : null,
        createdAt: Date.now(),
        changesAt: null,
      };
      this.deps.log.commit(() => this.store.checkpoints.put(record));
      if (record.status === "created") {
        void this.retain().catch(() => undefined);
        return undefined;
      }
      // A deployment without checkpoints says so once per turn in the turn's view, not as a warning.
      if (record.status === "unavailable") return undefined;
      return {
        code: record.status === "unknown" ? "checkpoint_unknown" : "checkpoint_failed",
        message: `no checkpoint of the workspace before this turn: ${record.message}; its changes are what its tool calls say`,
      };
    } catch (err) {
      console.error(JSON.stringify({ msg: "checkpoint before a turn failed", turnId, error: String(err) }));
      return { code: "checkpoint_failed", message: "no checkpoint of the workspace before this turn" };
    }
  }

  /** A turn ended: its changes are read soon (never throws). */
  turnEnded(): void {
    if (!this.checkpoints) return;
    this.settle(false).catch((err) =>
      console.error(JSON.stringify({ msg: "reading a turn's changes failed", error: String(err) })),
    );
  }

  /**
   * Reads the changes of every ended turn whose changes are not recorded yet, one read at a time.
   * `final`: no later try will come before the workspace moves on (a turn is about to start), so
   * a turn whose changes cannot be read is recorded as such now.
   */
  async settle(final: boolean): Promise<void> {
    while (this.settling) await this.settling.catch(() => undefined);
    this.settling = this.settleNow(final).finally(() => {
      this.settling = null;
    });
    return this.settling;
  }

  private async settleNow(final: boolean): Promise<void> {
    const store = this.store;
    for (const checkpoint of store.checkpoints.all()) {
      if (checkpoint.kind !== "turn" || checkpoint.changesAt !== null) continue;
      if (checkpoint.status !== "created" && checkpoint.status !== "unknown") continue;
      const turn = store.turn(checkpoint.turnId);
      if (!turn || !TERMINAL_TURN_STATUSES.has(turn.status)) continue;
      await this.readChanges(checkpoint, final);
    }
  }

  private async readChanges(checkpoint: CheckpointRecord, final: boolean): Promise<void> {
    const checkpoints = this.checkpoints!;
    let current = checkpoint;
    if (current.status === "unknown") {
      // Asked again under its key: taken then, it is replayed now; not taken, it would be taken
      // now, after the turn, which is not the turn's checkpoint: only a replay is kept.
      const taken = await checkpoints.take(current.environmentId, {
        key: current.key,
        tags: await tagsOf("turn", current.turnId),
      });
      if (taken.status === "replayed") current = { ...current, status: "created", snapshotId: taken.snapshotId };
      else if (taken.status === "created") {
        current = { ...current, status: "failed", message: "the checkpoint was not taken before the turn" };
        await checkpoints.release(current.environmentId, taken.snapshotId).catch(() => "unknown");
      } else if (!final) return;
    }
    let changes: TurnChanges;
    if (current.status === "created" && current.snapshotId) {
      const next = this.nextCheckpoint(current);
      const diff = await checkpoints.diff(
        current.environmentId,
        current.snapshotId,
        next ?? "live",
        this.deps.config().WORKSPACE_DIFF_MAX_BYTES,
      );
      if (diff.status === "ok") changes = { source: "workspace", files: diff.files, truncated: diff.truncated };
      else if (!final) {
        console.error(
          JSON.stringify({ msg: "a turn's changes could not be read yet", turnId: current.turnId, why: diff.message }),
        );
        return;
      } else changes = { source: "tool-calls", reason: `the workspace could not be compared: ${diff.message}` };
    } else {
      changes = { source: "tool-calls", reason: current.message ?? "the turn's checkpoint could not be confirmed" };
    }
    const turn = this.store.turn(current.turnId);
    // A turn that changed no file says so in its view (`changes: "none"`), not with an event.
    const nothing = changes.source === "workspace" && changes.files.length === 0 && !changes.truncated;
    this.deps.log.commit((log) => {
      this.store.checkpoints.put({ ...current, changesAt: Date.now() });
      if (nothing) return;
      log.append({
        turnId: current.turnId,
        executionId: turn?.executionId ?? null,
        type: "workspace.changes",
        data: { turnId: current.turnId, ...changes },
        now: Date.now(),
      });
    });
  }

  /** The snapshot of the first turn checkpoint taken after this one, in the same environment. */
  private nextCheckpoint(checkpoint: CheckpointRecord): string | null {
    const later = this.store.checkpoints
      .all()
      .find(
        (c) =>
          c.kind === "turn" &&
          c.createdAt > checkpoint.createdAt &&
          c.status === "created" &&
          c.environmentId === checkpoint.environmentId,
      );
    return later?.snapshotId ?? null;
  }

  /**
   * What a turn's view shows of its checkpoint. Not whether its changes were read yet: that is
   * known a moment after the turn ended, and a finished turn's view does not change under a reader
   * (the `workspace.changes` event says it).
   */
  checkpointOf(turnId: string): CheckpointView {
    if (!this.checkpoints) return { status: "unavailable", message: "this provider takes no checkpoints" };
    const record = this.store.checkpoints.ofTurn(turnId);
    if (!record && !this.taking)
      return { status: "unavailable", message: "no checkpoints are taken here (WORKSPACE_CHECKPOINTS_MAX is 0)" };
    if (!record) return { status: "none" };
    const inUse = this.deps.branches.inUse(record.key);
    return {
      status: record.status,
      ...(record.message ? { message: record.message } : {}),
      ...(inUse.length > 0 ? { inUse } : {}),
    };
  }

  // ------------------------------------------------------------------ undo and redo

  /**
   * Restores the workspace to a turn's checkpoint (`undo`), or to how it was before the turn's
   * latest undo (`redo`), under `operationId`: the same request again replays its acknowledgement.
   */
  async restore(
    context: SessionContext,
    turnId: string,
    direction: "undo" | "redo",
    operationId: string,
  ): Promise<RestoreAck> {
    const checkpoints = this.checkpoints;
    if (!checkpoints)
      throw new Refusal("capability_denied", "this provider takes no checkpoints of the workspace", {
        missing: ["workspace.checkpoints"],
      });
    const store = this.store;
    if (!store.turn(turnId)) throw new Refusal("turn_not_found", `no turn ${turnId} in this conversation`);
    const requestDigest = await canonicalDigest({ operationId, turnId, direction });
    const prior = priorOperation(store.operation(operationId), "restore", requestDigest);
    if (prior.kind === "replay") return { ...prior.ack, status: "replayed" };
    if (prior.kind === "conflict")
      throw new Refusal("operation_conflict", `operation ${operationId} was already used for another request`, {
        operationId,
      });
    const active = store.activeTurn();
    if (active || store.waitingTurns().length > 0)
      throw new Refusal(
        "session_busy",
        "a turn is running or waiting in this conversation: the workspace is restored once it ends",
        active ? { activeTurnId: active.turnId } : {},
      );
    const environment = await this.environmentOfTurn(context, store.turn(turnId)!);
    const target = this.targetOf(turnId, direction, environment.environmentId);
    // The turns that ended are compared before the workspace moves (their changes are read now).
    await this.settle(true);
    if (direction === "undo") await this.takeUndoPoint(turnId, operationId, environment.environmentId);
    const outcome = await checkpoints.restore(environment.environmentId, target.snapshotId!, operationId);
    switch (outcome.status) {
      case "restored":
      case "replayed":
        break;
      case "busy":
        throw new Refusal("environment_busy", `${outcome.message}: nothing was restored; try again once it ends`);
      case "not_found":
        this.deps.log.commit(() => store.checkpoints.put({ ...target, status: "released" }));
        throw new Refusal("checkpoint_unavailable", `the checkpoint to restore is gone: ${outcome.message}`);
      case "conflict":
        throw new Refusal("operation_conflict", outcome.message, { operationId });
      case "unavailable":
        throw new Refusal("capability_denied", outcome.message, { missing: ["workspace.restore"] });
      case "unknown":
        throw new Refusal(
          "outcome_unknown",
          `whether the workspace was restored is unknown (${outcome.message}); send the same operationId again`,
          { operationId, retryable: true },
        );
    }
    const ack: RestoreAck = {
      operationId,
      turnId,
      direction,
      status: "restored",
      restoredAt: outcome.restoredAt ?? new Date().toISOString(),
    };
    const turn = store.turn(turnId)!;
    this.deps.log.commit((log) => {
      store.putOperation(operationId, { kind: "restore", requestDigest, ack }, Date.now());
      log.append({
        turnId,
        executionId: turn.executionId,
        type: "workspace.restored",
        data: { turnId, direction, operationId, restoredAt: ack.restoredAt },
        now: Date.now(),
      });
    });
    return ack;
  }

  /** The environment a turn ran in, brought back: its branch's own sandbox, or the conversation's. */
  private async environmentOfTurn(context: SessionContext, turn: TurnRecord): Promise<EnvironmentRecord> {
    return (await this.deps.branches.liveEnvironment(context, turn.branch)) ?? this.deps.environment(context);
  }

  /** The checkpoint an undo or a redo restores; refused when there is none to restore. */
  private targetOf(turnId: string, direction: "undo" | "redo", environmentId: string): CheckpointRecord {
    const store = this.store;
    const target =
      direction === "undo"
        ? store.checkpoints.ofTurn(turnId)
        : (store.checkpoints
            .all()
            .filter((c) => c.kind === "undo" && c.turnId === turnId)
            .at(-1) ?? null);
    if (target?.status !== "created" || !target.snapshotId) {
      const why =
        direction === "redo"
          ? "this turn's changes were not undone"
          : target?.status === "released"
            ? "its checkpoint was released (WORKSPACE_CHECKPOINTS_MAX)"
            : `it has no checkpoint (${target?.message ?? target?.status ?? "none was taken"})`;
      throw new Refusal("checkpoint_unavailable", `the workspace cannot be restored for turn ${turnId}: ${why}`, {
        turnId,
      });
    }
    if (target.environmentId !== environmentId)
      throw new Refusal(
        "checkpoint_unavailable",
        "the checkpoint was taken in an environment since replaced: it cannot be restored into this one",
        { turnId },
      );
    return target;
  }

  /** The workspace as it is, kept before an undo (its redo restores it); the undo is refused without it. */
  private async takeUndoPoint(turnId: string, operationId: string, environmentId: string): Promise<void> {
    const key = `undo-${(await sha256Hex(operationId)).slice(0, 40)}`;
    const taken = await this.checkpoints!.take(environmentId, { key, tags: await tagsOf("undo", turnId) });
    if (taken.status !== "created" && taken.status !== "replayed")
      throw new Refusal(
        "checkpoint_failed",
        `the workspace as it is could not be kept before the undo (${"message" in taken ? taken.message : taken.status}); nothing was restored`,
      );
    const record: CheckpointRecord = {
      key,
      kind: "undo",
      turnId,
      environmentId,
      snapshotId: taken.snapshotId,
      status: "created",
      message: null,
      createdAt: Date.now(),
      changesAt: null,
    };
    this.deps.log.commit(() => this.store.checkpoints.put(record));
  }

  // ------------------------------------------------------------------ retention and release

  /** Releases the oldest checkpoints past WORKSPACE_CHECKPOINTS_MAX (a release not proved is tried again later). */
  private async retain(): Promise<void> {
    const held = this.store.checkpoints.all().filter((c) => c.status === "created");
    const excess = held.length - this.deps.config().WORKSPACE_CHECKPOINTS_MAX;
    // Never one a branch's sandbox was made from while it lives (in use): the next oldest instead.
    const releasable = held.filter((c) => this.deps.branches.inUse(c.key).length === 0);
    for (const checkpoint of releasable.slice(0, Math.max(0, excess))) await this.release(checkpoint);
  }

  private async release(checkpoint: CheckpointRecord): Promise<boolean> {
    if (!checkpoint.snapshotId) return true;
    const outcome = await this.checkpoints!.release(checkpoint.environmentId, checkpoint.snapshotId);
    if (outcome === "unknown") return false;
    this.deps.log.commit(() => this.store.checkpoints.put({ ...checkpoint, status: "released" }));
    return true;
  }

  /**
   * Every checkpoint released (a conversation's delete); refused, retryable, while one's release
   * is not proved, so the delete is asked again rather than leaving it behind unnoticed.
   */
  async releaseAll(): Promise<void> {
    if (!this.checkpoints) return;
    let unproved = 0;
    // In dependency order: the branches' sandboxes first, then the checkpoints they were made from.
    await this.deps.branches.destroyAll();
    for (const checkpoint of this.store.checkpoints.all()) {
      if (checkpoint.status !== "created" && checkpoint.status !== "unknown") continue;
      if (checkpoint.status === "unknown") {
        // Taken after all? Its key answers it; then it is released like the others.
        const taken = await this.checkpoints.take(checkpoint.environmentId, {
          key: checkpoint.key,
          tags: await tagsOf(checkpoint.kind, checkpoint.turnId),
        });
        if (taken.status !== "created" && taken.status !== "replayed") continue;
        checkpoint.snapshotId = taken.snapshotId;
      }
      if (!(await this.release(checkpoint))) unproved++;
    }
    if (unproved > 0)
      throw new Refusal(
        "upstream_error",
        `${unproved} checkpoint(s) of the workspace could not be confirmed released; delete the conversation again`,
        { retryable: true },
      );
  }
}
