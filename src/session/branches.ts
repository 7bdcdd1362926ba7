/**
 * Branches of a conversation in the session's storage (the tree itself is ./turn-tree.ts): which
 * agent session a branch runs in, the run a turn continues from, the branch list and a switch.
 * Branch 0 runs in the conversation's agent session; branch n in `<that id>.b<n>`, derived from
 * the conversation and the branch (never from a turn id), recorded when the branch is made.
 */
import { Refusal } from "../errors";
import type { BranchView } from "../schemas/api";
import type { AgentExactRunControlRef } from "../schemas/contracts";
import type { EventLog } from "./event-log";
import type { TreeTurn } from "./store/records";
import type { SessionStore } from "./store/store";
import { branchIds, branchThrough, pathOf, tipOf } from "./turn-tree";

/** The agent session id of a new branch. */
export function branchSessionId(base: string, branch: number): string {
  return `${base}.b${branch}`;
}

/** The agent session a branch runs in (`base`: branch 0's). */
export function agentSessionOf(store: SessionStore, base: string, branch: number): string {
  if (branch === 0) return base;
  return store.branches().find((b) => b.branch === branch)?.agentSessionId ?? branchSessionId(base, branch);
}

/** Every agent session the conversation made upstream (branch 0's, and each branch's that exists there), each with its latest run. */
export function agentSessions(
  store: SessionStore,
  base: string,
): Array<{ sessionId: string; lastRun: AgentExactRunControlRef | null }> {
  const lastRunOf = (branch: number) => {
    const turns = store.turns().filter((t) => t.branch === branch && t.controlRef !== null);
    return turns.at(-1)?.controlRef ?? null;
  };
  return [
    { sessionId: base, lastRun: lastRunOf(0) },
    ...store
      .branches()
      .filter((b) => b.forked)
      .map((b) => ({ sessionId: b.agentSessionId, lastRun: lastRunOf(b.branch) })),
  ];
}

/** The run a turn after `parentTurnId` continues: the nearest dispatched turn on its path. */
export function previousRun(store: SessionStore, parentTurnId: string | null): AgentExactRunControlRef | null {
  const seen = new Set<string>();
  for (let at = parentTurnId; at !== null && !seen.has(at); ) {
    seen.add(at);
    const turn = store.turn(at);
    if (!turn) return null;
    if (turn.controlRef) return turn.controlRef;
    at = turn.parentTurnId;
  }
  return null;
}

export function activeBranch(store: SessionStore): number {
  return store.getMeta("activeBranch") ?? 0;
}

/** The turns of a branch's conversation, in order (`branch` omitted: the active one); refused for a branch that holds no turn. */
export function branchPath(store: SessionStore, branch?: number): { branch: number; turns: TreeTurn[] } {
  const tree = store.treeTurns();
  const which = branch ?? activeBranch(store);
  if (branch !== undefined && !tree.some((t) => t.branch === branch))
    throw new Refusal("branch_not_found", `no branch ${branch} in this conversation`);
  return { branch: which, turns: pathOf(tree, which) };
}

/** The conversation's branches (those that hold turns), oldest first. */
/** A conversation's branches, as `GET …/branches` answers them. */
export interface BranchList {
  active: number;
  branches: BranchView[];
}

/** A switch's outcome: the branch shown now, the one before, and the new branch's latest turn. */
export interface BranchSwitch {
  branch: number;
  previous: number;
  tipTurnId: string;
}

export function branchesOf(store: SessionStore): BranchList {
  const tree = store.treeTurns();
  const active = activeBranch(store);
  const stored = new Map(store.branches().map((b) => [b.branch, b]));
  const branches = branchIds(tree).map((branch): BranchView => {
    const path = pathOf(tree, branch);
    const first = tree.find((t) => t.branch === branch)!;
    const origin = stored.get(branch);
    return {
      branch,
      active: branch === active,
      forkedFrom: origin && origin.forkOf !== null ? { branch: origin.forkOf, turnId: origin.at! } : null,
      firstTurnId: first.turnId,
      parentTurnId: first.parentTurnId,
      tipTurnId: tipOf(tree, branch)!.turnId,
      turnIds: path.map((t) => t.turnId),
    };
  });
  return { active, branches };
}

/**
 * Shows another branch (a branch id, or the branch a turn's choice leads to): stored, and told
 * to every stream of the conversation as `branch.switched`. Showing the branch shown is no event.
 */
export function switchBranch(
  store: SessionStore,
  log: EventLog,
  target: { branch?: number; turnId?: string },
): BranchSwitch {
  const tree = store.treeTurns();
  const previous = activeBranch(store);
  let branch: number | null;
  if (target.turnId !== undefined) {
    if (!tree.some((t) => t.turnId === target.turnId))
      throw new Refusal("turn_not_found", `no turn ${target.turnId} in this conversation`);
    branch = branchThrough(tree, target.turnId, previous);
  } else {
    branch = target.branch ?? null;
  }
  const tip = branch === null ? null : tipOf(tree, branch);
  if (branch === null || !tip) throw new Refusal("branch_not_found", `no branch ${target.branch} in this conversation`);
  if (branch !== previous) {
    log.commit((l) => {
      store.setMeta("activeBranch", branch);
      l.append({
        turnId: null,
        executionId: null,
        type: "branch.switched",
        data: { branch, previous, tipTurnId: tip.turnId, by: "switch" },
        now: Date.now(),
      });
    });
  }
  return { branch, previous, tipTurnId: tip.turnId };
}
