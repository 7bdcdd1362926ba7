/**
 * The conversation as a tree of turns (docs/api.md#branches). Pure.
 *
 * Each turn follows one turn, its parent (null for a first message). A branch is a chain of turns
 * that run in one agent session: branch 0 starts with the first turn; every other branch starts
 * with a turn sent after a turn that already had a follower (an edit of a later message, or a
 * regenerate of a later answer), and holds that turn and the ones sent after it. A branch's path
 * is its conversation: the ancestors of its tip, first message first, so a forked branch shares
 * the turns before its fork point with the branch it was forked from. One branch is active: its
 * path is what the summary and the transcript show.
 *
 * Where a new turn goes (`place`): after the turn it names (or, naming none, after the active
 * branch's tip). A parent nobody follows yet is continued in its own branch (its own agent
 * session); a parent that already has a follower starts a new branch, forked from the parent's
 * branch at the parent (upstream: a fork of that agent session at the parent's answer), or, for
 * a first message sent again, started afresh (no conversation to copy).
 */
import type { BranchRecord, TreeTurn } from "./store/records";

export type Placement =
  /** The turn continues `branch` (its first turn, when the conversation has none). */
  | { kind: "continue"; parentTurnId: string | null; branch: number }
  /** The turn starts a branch: `branch` is new, or an earlier one that holds no turn yet with the same origin (its fork is reused, never made twice). */
  | { kind: "branch"; parentTurnId: string | null; branch: number; forkOf: number | null; reused: boolean }
  | { kind: "unknown_parent"; parentTurnId: string };

const byOrdinal = (a: TreeTurn, b: TreeTurn) => a.ordinal - b.ordinal;

/** The branch's newest turn; null for a branch that holds none yet (its path then ends at its fork point). */
export function tipOf(turns: readonly TreeTurn[], branch: number): TreeTurn | null {
  let tip: TreeTurn | null = null;
  for (const t of turns) if (t.branch === branch && (tip === null || t.ordinal > tip.ordinal)) tip = t;
  return tip;
}

/** The branch's conversation: the ancestors of its tip, first message first (of a branch without turns: up to its fork point). */
export function pathOf(turns: readonly TreeTurn[], branch: number, branches: readonly BranchRecord[] = []): TreeTurn[] {
  const byId = new Map(turns.map((t) => [t.turnId, t]));
  const tip = tipOf(turns, branch);
  let at: string | null = tip?.turnId ?? branches.find((b) => b.branch === branch)?.at ?? null;
  const path: TreeTurn[] = [];
  const seen = new Set<string>();
  while (at !== null && !seen.has(at)) {
    const turn = byId.get(at);
    if (!turn) break;
    seen.add(at);
    path.push(turn);
    at = turn.parentTurnId;
  }
  return path.reverse();
}

/** The branches that hold turns, by branch id. */
export function branchIds(turns: readonly TreeTurn[]): number[] {
  return [...new Set(turns.map((t) => t.branch))].sort((a, b) => a - b);
}

/** Where a turn sent after `parent` goes (`undefined`: after the active branch's tip). */
export function place(
  turns: readonly TreeTurn[],
  branches: readonly BranchRecord[],
  active: number,
  parent: string | null | undefined,
): Placement {
  const parentTurnId =
    parent === undefined
      ? (tipOf(turns, active)?.turnId ?? branches.find((b) => b.branch === active)?.at ?? null)
      : parent;
  const parentTurn = parentTurnId === null ? null : turns.find((t) => t.turnId === parentTurnId);
  if (parentTurnId !== null && !parentTurn) return { kind: "unknown_parent", parentTurnId };
  const followed = turns.some((t) => t.parentTurnId === parentTurnId);
  if (!followed) {
    // Nobody follows the parent yet: its own branch goes on (the first turn: branch 0; a branch
    // that holds no turn yet and was forked at this parent: that branch).
    // (No first message yet: the conversation's first turn, in branch 0.)
    return { kind: "continue", parentTurnId, branch: parentTurn ? parentTurn.branch : 0 };
  }
  const forkOf = parentTurn ? parentTurn.branch : null;
  const held = new Set(turns.map((t) => t.branch));
  const reusable = branches.find((b) => b.at === parentTurnId && b.forkOf === forkOf && !held.has(b.branch));
  if (reusable) return { kind: "branch", parentTurnId, branch: reusable.branch, forkOf, reused: true };
  const next = Math.max(0, ...turns.map((t) => t.branch), ...branches.map((b) => b.branch)) + 1;
  return { kind: "branch", parentTurnId, branch: next, forkOf, reused: false };
}

/** The turns that follow the same turn as `turnId` (itself included), oldest first: the "< n/m >" choices where branches split. */
export function siblingsOf(turns: readonly TreeTurn[], turnId: string): TreeTurn[] {
  const turn = turns.find((t) => t.turnId === turnId);
  if (!turn) return [];
  return turns.filter((t) => t.parentTurnId === turn.parentTurnId).sort(byOrdinal);
}

/**
 * The branch to show when a split's choice `turnId` is picked: the active branch when its path
 * goes through that turn, else the newest branch whose path does.
 */
export function branchThrough(turns: readonly TreeTurn[], turnId: string, active: number): number | null {
  if (pathOf(turns, active).some((t) => t.turnId === turnId)) return active;
  const through = branchIds(turns).filter((b) => pathOf(turns, b).some((t) => t.turnId === turnId));
  if (through.length === 0) return null;
  // Newest: the branch whose tip was sent last.
  return through.reduce((best, b) => (tipOf(turns, b)!.ordinal > tipOf(turns, best)!.ordinal ? b : best));
}
