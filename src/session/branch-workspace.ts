/**
 * A conversation's branches with their own files (seed 000's workspace fork; docs/api.md "A turn's
 * changes, undo and redo"): a branch from an earlier turn runs in a sandbox of its own, created
 * from the checkpoint taken before the turn it replaces (./workspace.ts takes them), keyed by the
 * conversation and the branch, recorded once made (`branch_workspaces`, ./store/checkpoints.ts).
 * The checkpoint is in use while the sandbox lives; at most WORKSPACE_FORKS_MAX branches get one,
 * and a branch past it, or with no checkpoint to fork, shares the conversation's sandbox and says
 * so. A delete destroys them before the checkpoints they were made from are released.
 */
import type { Config } from "../config";
import { Refusal } from "../errors";
import { ProviderError } from "../providers/errors";
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import type { Attachment } from "../schemas/workspace";
import type { EventLog } from "./event-log";
import type { BranchWorkspace, CheckpointRecord } from "./store/checkpoints";
import type { SessionContext, StoredBranch, TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";
import type { ClaimedEnvironment } from "./turn-claims";

/** A warning the turn's acceptance carries (its branch shares the conversation's workspace). */
type Notice = { code: string; message: string };

export interface BranchWorkspacesDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<
    AgentProvider,
    "checkpoints" | "ensureEnvironment" | "claimsFor" | "deleteEnvironment" | "workspaceFiles"
  >;
  config: () => Pick<Config, "WORKSPACE_FORKS_MAX" | "WORKSPACE_CHECKPOINTS_MAX">;
}

/** Where a turn runs: its branch's own sandbox (`own`), or the conversation's. */
export interface BranchEnvironment extends ClaimedEnvironment {
  own: boolean;
  /** The environment whose agent sessions this one holds (a fork holds its seed's, as they were then). */
  sessionsFrom?: string;
  notice?: Notice;
}

/** A branch's files shared with the others: no checkpoint holds them as they were at its fork point. */
const WORKSPACE_SHARED = (why: string): Notice => ({
  code: "workspace_shared",
  message: `this branch runs on the conversation's workspace as it is now, not as it was at its fork point: ${why}`,
});

/** A branch's sandbox's owner key: its creates are keyed by it (one per branch, per generation). */
function forkKey(context: SessionContext, branch: number): string {
  return `${context.sessionId.slice(0, 40)}.b${branch}`;
}

export class BranchWorkspaces {
  constructor(private readonly deps: BranchWorkspacesDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /**
   * The environment a turn runs in. A branch that starts at an earlier turn runs on the files as
   * they were there: a sandbox of its own, created from the checkpoint taken before the turn it
   * replaces (seed 000's workspace fork: keyed, recorded once made, kept while it lives); later
   * turns on it run there, resumed if it idled out, made again from its checkpoint if it is gone.
   * Branch 0, and a branch no checkpoint can seed (it says so), run in the conversation's.
   */
  async branchEnvironment(
    context: SessionContext,
    turn: TurnRecord,
    origin: StoredBranch | undefined,
    conversation: ClaimedEnvironment,
  ): Promise<BranchEnvironment> {
    const provider = this.deps.provider();
    if (!provider.checkpoints || turn.branch === 0) return { ...conversation, own: false };
    // No checkpoints taken here (an operator's choice): branches share the conversation's sandbox, as documented.
    const existing = this.store.checkpoints.branchWorkspace(turn.branch);
    if (!existing && this.deps.config().WORKSPACE_CHECKPOINTS_MAX === 0) return { ...conversation, own: false };
    const store = this.store;
    const seed = existing ? store.checkpoints.get(existing.seedKey) : this.seedOf(turn);
    if (!existing && !(origin && !origin.forked)) return { ...conversation, own: false };
    if (seed?.status !== "created" || !seed.snapshotId) {
      if (existing) {
        // Its sandbox may still be there: brought back as it is, never made again without its files.
        const { record } = await provider.ensureEnvironment({
          ownerKey: forkKey(context, turn.branch),
          known: existing.environment,
          resumeOnly: true,
        });
        return this.recorded(existing.branch, existing.seedKey, record);
      }
      return {
        ...conversation,
        own: false,
        notice: WORKSPACE_SHARED("no checkpoint was taken before the turn it replaces"),
      };
    }
    // Sandboxes are what an account pays for and is limited in: a conversation keeps a few.
    const max = this.deps.config().WORKSPACE_FORKS_MAX;
    const live = store.checkpoints.branchWorkspaces().filter((w) => w.status === "live").length;
    if (!existing && live >= max)
      return {
        ...conversation,
        own: false,
        notice: WORKSPACE_SHARED(`the conversation's branches already hold ${max} sandboxes (WORKSPACE_FORKS_MAX)`),
      };
    const { record } = await provider.ensureEnvironment({
      ownerKey: forkKey(context, turn.branch),
      known: existing?.environment ?? null,
      fromCheckpoint: {
        snapshotId: seed.snapshotId,
        sourceEnvironmentId: seed.environmentId,
        marker: { acgWorkspaceFork: seed.key, acgBranch: String(turn.branch) },
      },
    });
    const made = await this.recorded(turn.branch, seed.key, record, existing?.createdAt);
    return { ...made, sessionsFrom: seed.environmentId };
  }

  /** The branch's sandbox recorded (a new one, or one brought back under another id), with its claims. */
  private async recorded(
    branch: number,
    seedKey: string,
    environment: EnvironmentRecord,
    createdAt = Date.now(),
  ): Promise<BranchEnvironment> {
    const known = this.store.checkpoints.branchWorkspace(branch);
    if (!known || known.environment.environmentId !== environment.environmentId || known.status !== "live")
      this.deps.log.commit(() =>
        this.store.checkpoints.putBranchWorkspace({ branch, seedKey, environment, status: "live", createdAt }),
      );
    const claims = await this.deps.provider().claimsFor(environment);
    return { environment, claims, own: true };
  }

  /**
   * The checkpoint a new branch's files come from: the one taken before the turn it replaces (the
   * first turn that followed the same turn, with a checkpoint), which holds the files as they were
   * right after its fork point.
   */
  private seedOf(turn: TurnRecord): CheckpointRecord | null {
    const store = this.store;
    const replaced = store
      .treeTurns()
      .filter((t) => t.parentTurnId === turn.parentTurnId && t.turnId !== turn.turnId)
      .sort((a, b) => a.ordinal - b.ordinal);
    for (const t of replaced) {
      const checkpoint = store.checkpoints.ofTurn(t.turnId);
      if (checkpoint?.status === "created") return checkpoint;
    }
    return null;
  }

  /**
   * The sandbox a branch's files are in (absent: the active branch), brought back if it idled out;
   * null for the conversation's (the user's sandbox). Refused for a branch the conversation lacks.
   */
  async liveEnvironment(context: SessionContext, branch?: number): Promise<EnvironmentRecord | null> {
    const store = this.store;
    const which = branch ?? store.getMeta("activeBranch") ?? 0;
    if (which !== 0 && !store.branches().some((b) => b.branch === which))
      throw new Refusal("branch_not_found", `no branch ${which} in this conversation`, { branch: which });
    const own = store.checkpoints.branchWorkspace(which);
    if (own?.status !== "live") return null;
    return this.broughtBack(context, own);
  }

  /** A branch's sandbox resumed if it idled out (never made again here); gone: `environment_not_found`. */
  private async broughtBack(context: SessionContext, own: BranchWorkspace): Promise<EnvironmentRecord> {
    let record: EnvironmentRecord;
    try {
      ({ record } = await this.deps.provider().ensureEnvironment({
        ownerKey: forkKey(context, own.branch),
        known: own.environment,
        resumeOnly: true,
      }));
    } catch (err) {
      if (err instanceof ProviderError && err.code === "environment_gone")
        throw new Refusal(
          "environment_not_found",
          `branch ${own.branch}'s sandbox is gone: its next turn makes it again from its checkpoint`,
          { branch: own.branch },
        );
      throw providerRefusal(err);
    }
    if (record.environmentId !== own.environment.environmentId)
      this.deps.log.commit(() => this.store.checkpoints.putBranchWorkspace({ ...own, environment: record }));
    return record;
  }

  /** The branches whose sandbox a checkpoint seeded and which still live: it is in use while they do. */
  inUse(key: string): number[] {
    return this.store.checkpoints
      .branchWorkspaces()
      .filter((w) => w.seedKey === key && w.status === "live")
      .map((w) => w.branch);
  }

  /**
   * Every branch's sandbox deleted (a conversation's delete, before its checkpoints are released);
   * refused, retryable, while one's deletion is not proved.
   */
  async destroyAll(): Promise<void> {
    let unproved = 0;
    for (const workspace of this.store.checkpoints.branchWorkspaces()) {
      if (workspace.status !== "live") continue;
      try {
        await this.deps.provider().deleteEnvironment(workspace.environment);
        this.deps.log.commit(() => this.store.checkpoints.putBranchWorkspace({ ...workspace, status: "destroyed" }));
      } catch {
        unproved++;
      }
    }
    if (unproved > 0)
      throw new Refusal(
        "upstream_error",
        `${unproved} branch sandbox(es) could not be confirmed deleted; delete the conversation again`,
        { retryable: true },
      );
  }

  /**
   * The turn's attachments in the sandbox it runs in: an upload wrote each into the sandbox the
   * conversation's active branch ran on then, so a turn elsewhere (a new branch's sandbox, made
   * from a checkpoint taken before the upload; another branch switched to since) gets a copy of
   * each it lacks, read from the conversation's other sandboxes. Refused (nothing dispatched) when
   * none holds it any more.
   */
  async carryAttachments(
    environmentId: string,
    conversationEnvironmentId: string,
    attachments: readonly Attachment[],
  ): Promise<void> {
    const files = this.deps.provider().workspaceFiles;
    if (!files || attachments.length === 0) return;
    const sources = [
      conversationEnvironmentId,
      ...this.store.checkpoints
        .branchWorkspaces()
        .filter((w) => w.status === "live")
        .map((w) => w.environment.environmentId),
    ].filter((id, i, all) => id !== environmentId && all.indexOf(id) === i);
    for (const attachment of attachments) {
      if (await holds(files, environmentId, attachment)) continue;
      let copied = false;
      for (const source of sources) {
        if (!(await holds(files, source, attachment))) continue;
        const { bytes, truncated } = await files.read(source, attachment.path, attachment.size + 1);
        if (truncated || bytes.length !== attachment.size) continue;
        await files.upload(environmentId, attachment.path, bytes, attachment.name);
        copied = true;
        break;
      }
      if (!copied)
        throw new Refusal(
          "attachment_unavailable",
          `attachment ${attachment.id} (${attachment.path}) is in none of the conversation's sandboxes any more; upload it again`,
          { attachment: attachment.id },
        );
    }
  }
}

/** Whether a sandbox holds an attachment's file, of its size. */
async function holds(
  files: NonNullable<AgentProvider["workspaceFiles"]>,
  environmentId: string,
  attachment: Attachment,
): Promise<boolean> {
  try {
    const entry = await files.stat(environmentId, attachment.path);
    return entry.kind === "file" && (entry.size === null || entry.size === attachment.size);
  } catch (err) {
    if (err instanceof ProviderError && (err.code === "not_found" || err.code === "environment_gone")) return false;
    throw err;
  }
}
