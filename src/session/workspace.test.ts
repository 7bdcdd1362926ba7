import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { WorkspaceCheckpoints } from "../providers/checkpoints";
import { EventLog, storeWrites } from "./event-log";
import { SessionStore } from "./store/store";
import { Workspace } from "./workspace";

/**
 * The workspace room's rules with a store of its own and a provider that records what it is asked:
 * what `WORKSPACE_CHECKPOINTS_MAX` 0 takes (nothing) and what it keeps using (the checkpoints taken
 * before); the retention releasing the oldest first, never one a branch's sandbox was made from.
 */

function recordingCheckpoints(calls: string[]): WorkspaceCheckpoints {
  let n = 0;
  return {
    take: async (_env, { key }) => {
      calls.push(`take ${key}`);
      return { status: "created", snapshotId: `snap-${++n}`, createdAt: new Date().toISOString() };
    },
    diff: async () => ({ status: "ok", files: [], truncated: false }),
    restore: async () => ({ status: "restored" }),
    release: async (_env, id) => {
      calls.push(`release ${id}`);
      return "deleted";
    },
  };
}

async function withWorkspace(
  max: number,
  fn: (workspace: Workspace, store: SessionStore, calls: string[], inUse: Set<string>) => Promise<void>,
): Promise<void> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`workspace-${crypto.randomUUID()}`));
  await runInDurableObject(stub, async (_instance, state) => {
    const store = new SessionStore(state.storage.sql);
    const log = new EventLog({
      transaction: (f) => state.storage.transactionSync(f),
      ...storeWrites(
        () => store,
        () => store,
      ),
      publish: () => undefined,
    });
    const calls: string[] = [];
    const inUse = new Set<string>();
    const checkpoints = recordingCheckpoints(calls);
    const workspace = new Workspace({
      store: () => store,
      log,
      provider: () => ({ checkpoints }) as never,
      config: () => ({ WORKSPACE_CHECKPOINTS_MAX: max, WORKSPACE_DIFF_MAX_BYTES: 65_536, WORKSPACE_FORKS_MAX: 3 }),
      branches: {
        inUse: (key) => (inUse.has(key) ? [1] : []),
        liveEnvironment: async () => null,
        destroyAll: async () => undefined,
      },
      environment: async () => {
        throw new Error("not asked here");
      },
    });
    for (const [i, t] of ["t1", "t2", "t3", "t4"].entries())
      store.insertPendingTurn({
        turnId: t,
        requestDigest: "d",
        request: { message: "hi" },
        executionId: `e${i + 1}`,
        now: i,
      });
    await fn(workspace, store, calls, inUse);
  });
}

describe("the workspace room", () => {
  it("WORKSPACE_CHECKPOINTS_MAX 0 takes no checkpoint and says so in the turn's view", async () => {
    await withWorkspace(0, async (workspace, _store, calls) => {
      expect(await workspace.before("t1", "e1", "sbx")).toBeUndefined();
      expect(calls).toEqual([]);
      expect(workspace.checkpointOf("t1")).toEqual({
        status: "unavailable",
        message: "no checkpoints are taken here (WORKSPACE_CHECKPOINTS_MAX is 0)",
      });
    });
  });

  it("releases the oldest past the bound, skipping one a branch's sandbox was made from", async () => {
    await withWorkspace(2, async (workspace, store, calls, inUse) => {
      await workspace.before("t1", "e1", "sbx");
      await workspace.before("t2", "e2", "sbx");
      // The first checkpoint seeded a branch's sandbox: it is in use, the next oldest goes instead.
      inUse.add(store.checkpoints.ofTurn("t1")!.key);
      await workspace.before("t3", "e3", "sbx");
      await new Promise((r) => setTimeout(r, 0));
      expect(calls.filter((c) => c.startsWith("release"))).toEqual(["release snap-2"]);
      expect(workspace.checkpointOf("t1")).toMatchObject({ status: "created", inUse: [1] });
      expect(workspace.checkpointOf("t2").status).toBe("released");
    });
  });
});
