/**
 * The conversation's read views: one turn, its summary, its messages (the gateway's transcript
 * and the AI SDK's UIMessage[]), a finished turn's replay, and its usage. Reads of the session
 * store only, built in one place so the shell that answers them holds no view logic; the
 * conversation's total and its budget are the turn runner's and come from the caller. Nothing
 * here writes.
 */
import type { z } from "zod";
import { replayTurn, uiMessages } from "../ai-sdk/message";
import { Refusal } from "../errors";
import type { ConversationAgent } from "../schemas/agents";
import type { ConversationSummarySchema, ConversationUsageSchema, MessagesSchema, TotalView } from "../schemas/api";
import type { BudgetState } from "../usage/budgets";
import { emptyExecutionUsage, executionView } from "../usage/usage-fold";
import { activeBranch, type BranchList, branchesOf, branchPath } from "./branches";
import { type SessionContext, TERMINAL_TURN_STATUSES, type TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";
import { buildTranscript, type TranscriptTurn, withAnswer } from "./transcript";
import { type TurnView, turnView } from "./turn-cache";
import { branchIds, siblingsOf, tipOf } from "./turn-tree";

export type ConversationSummary = z.infer<typeof ConversationSummarySchema>;
export type ConversationUsage = z.infer<typeof ConversationUsageSchema>;
export type ConversationMessages = z.infer<typeof MessagesSchema>;

/** One turn of the conversation (or the view of one the queue holds), refused when this object holds no such turn (or no conversation). */
export function turnOf(
  store: SessionStore | null,
  turnId: string,
  queued: (turnId: string) => TurnView | null,
): TurnView {
  const turn = store?.turn(turnId);
  if (store && turn) return turnView(withAnswer(store, turn), store.outstandingOfTurn(turnId));
  const waiting = store ? queued(turnId) : null;
  if (!waiting) throw new Refusal("turn_not_found", `no turn ${turnId} in this conversation`);
  return waiting;
}

/** `queue`: the turns waiting to start, in order (./queue-runner.ts). */
export function summaryOf(
  store: SessionStore,
  context: SessionContext,
  total: TotalView,
  queue: TurnView[],
  agent: ConversationAgent,
): ConversationSummary {
  const active = store.activeTurn();
  const tree = store.treeTurns();
  const branch = activeBranch(store);
  const tip = tipOf(tree, branch);
  // The active branch's latest turn (a turn running on another branch is still the active turn).
  const last = tip ? store.turn(tip.turnId) : null;
  const createdAt = store.getMeta("createdAt");
  const activeView = active ? turnView(active, store.outstandingOfTurn(active.turnId)) : null;
  return {
    conversationId: context.conversationId,
    state: active ? "running" : "idle",
    waitingFor: activeView?.waitingFor ?? null,
    title: store.getMeta("title"),
    agent,
    activeTurn: activeView,
    lastTurn: last
      ? last.turnId === active?.turnId
        ? activeView
        : turnView(withAnswer(store, last), store.outstandingOfTurn(last.turnId))
      : null,
    queue,
    turnCount: branchPath(store).turns.length,
    branch,
    branchCount: branchIds(tree).length,
    interactive: interactiveOf(store),
    lastEventId: store.lastSeq(),
    interactions: store.outstandingInteractions().map((i) => ({ turnId: i.turnId, ...i.request })),
    usage: total,
    createdAt: createdAt === null ? null : new Date(createdAt).toISOString(),
    updatedAt: last ? new Date(last.updatedAt).toISOString() : null,
  };
}

/** Interactive mode as the summary shows it (./interactive.ts holds it). */
function interactiveOf(store: SessionStore): ConversationSummary["interactive"] {
  const claim = store.getMeta("interactive");
  return claim
    ? { terminalId: claim.terminalId, generation: claim.generation, startedAt: new Date(claim.startedAt).toISOString() }
    : null;
}

/** A turn with what its views are built from (its events, or the parts it kept when the log was trimmed into it). */
function transcriptTurn(store: SessionStore, turn: TurnRecord): TranscriptTurn {
  const interactions = store.interactionsOfTurn(turn.turnId);
  if (turn.parts) return { turn, events: [], interactions };
  return { turn, events: store.eventsOfTurn(turn.turnId), interactions };
}

/** The turns of a branch's conversation (the active one by default), in order. */
function pathTurns(store: SessionStore, branch?: number): { branch: number; turns: TurnRecord[] } {
  const path = branchPath(store, branch);
  return { branch: path.branch, turns: path.turns.map((t) => store.turn(t.turnId)!) };
}

export function messagesOf(store: SessionStore, conversationId: string, branch?: number): ConversationMessages {
  const lastEventId = store.lastSeq();
  const path = pathTurns(store, branch);
  const tree = store.treeTurns();
  const messages = buildTranscript(path.turns.map((turn) => transcriptTurn(store, turn))).map((m) => {
    if (m.role !== "user") return m;
    // Where branches split: the turns that follow the same turn as this one.
    const siblings = siblingsOf(tree, m.turnId);
    return siblings.length > 1
      ? {
          ...m,
          siblings: { index: siblings.findIndex((t) => t.turnId === m.turnId), turnIds: siblings.map((t) => t.turnId) },
        }
      : m;
  });
  return { conversationId, branch: path.branch, lastEventId, messages };
}

/** The conversation as a page opens it (GET …/bootstrap, and a stream's snapshot): what it shows, read in one step. */
export type ConversationSnapshot = {
  summary: ConversationSummary;
  messages: ConversationMessages;
  branches: BranchList & { conversationId: string };
  usage: ConversationUsage;
};

/**
 * The summary, the active branch's messages, the branches and the usage, read in one synchronous step, so all four are
 * of the same last event (`messages.lastEventId`). `run`: the turn runner's live figures.
 */
export function snapshotOf(
  store: SessionStore,
  context: SessionContext,
  run: { total: TotalView; queue: TurnView[]; budget: BudgetState | null; agent: ConversationAgent },
): ConversationSnapshot {
  const { conversationId } = context;
  return {
    summary: summaryOf(store, context, run.total, run.queue, run.agent),
    messages: messagesOf(store, conversationId),
    branches: { conversationId, ...branchesOf(store) },
    usage: usageOf(store, conversationId, run.total, run.budget),
  };
}

/** A branch's conversation (the active one by default) as the AI SDK's UIMessage[] (src/ai-sdk/message.ts), as JSON. */
export function chatMessagesOf(store: SessionStore, branch?: number): string {
  return JSON.stringify(uiMessages(pathTurns(store, branch).turns.map((turn) => transcriptTurn(store, turn))));
}

/**
 * A finished turn's UI message stream (src/ai-sdk/chunks.ts) as SSE text, from its start or
 * after the asks a client answered; null while the turn runs (the stream is then followed live).
 */
export function chatReplayOf(store: SessionStore, turnId: string, continueAfterAsks: string[]): string | null {
  const turn = store.turn(turnId);
  if (!turn) throw new Refusal("turn_not_found", `no turn ${turnId} in this conversation`);
  if (!TERMINAL_TURN_STATUSES.has(turn.status)) return null;
  return replayTurn(transcriptTurn(store, turn), continueAfterAsks);
}

export function usageOf(
  store: SessionStore,
  conversationId: string,
  total: TotalView,
  budget: BudgetState | null,
): ConversationUsage {
  const byExecution = new Map(store.allExecutionUsage().map((state) => [state.executionId, state]));
  const turns = store.turns().map((turn) => {
    const state = byExecution.get(turn.executionId) ?? emptyExecutionUsage(turn.executionId);
    return {
      turnId: turn.turnId,
      executionId: turn.executionId,
      status: turn.status,
      ...(turn.request.model ? { model: turn.request.model } : {}),
      usage: executionView(state),
      conflicts: state.conflicts,
      receiptDisagreements: state.receiptDisagreements,
    };
  });
  return {
    conversationId,
    total,
    turns,
    budget: budget
      ? {
          tokens: budget.tokens,
          used: budget.used,
          complete: budget.complete,
          exceeded: budget.exceeded,
          scope: budget.scope,
          provenance: budget.provenance,
        }
      : null,
  };
}

/** What `dev/object` answers of an instance: which one, since when, and what it wrote and holds. */
export interface InstanceInfo {
  instance: string;
  startedAt: number;
  subscriptions: number;
  /** Of those, the ones whose live events go on a direct stream now (./direct-streams.ts). */
  directStreams: number;
  /** Direct streams this instance opened. */
  directStreamsOpened: number;
  rowsWritten: number;
  compactionRowsWritten: number;
  commits: number;
  log: { events: number; rows: number; bytes: number };
  turns: { rows: number; bytes: number };
}

/** An instance's figures over its store (null until a conversation is bound: nothing written, nothing held). */
export function instanceInfoOf(
  store: SessionStore | null,
  self: {
    instance: string;
    startedAt: number;
    subscriptions: number;
    directStreams: number;
    directStreamsOpened: number;
    commits: number;
  },
): InstanceInfo {
  return {
    // `commits`: the transactions this instance committed through the log (a batch of upstream frames is one).
    ...self,
    // Rows this instance wrote (a new instance starts from 0), and the log it holds.
    rowsWritten: store?.rowsWritten ?? 0,
    // Of those, the rows turn-end compaction wrote (each row it deletes counts).
    compactionRowsWritten: store?.compactionRowsWritten ?? 0,
    log: store?.logSize() ?? { events: 0, rows: 0, bytes: 0 },
    turns: store?.turnsSize() ?? { rows: 0, bytes: 0 },
  };
}
