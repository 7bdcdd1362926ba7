/**
 * The session's turns, its branches and its queue: the `turns`, `branches` and `queued_turns`
 * tables. A turn's status and lost marker are held in memory once read and kept in step with every
 * write made here (the upstream reader reads them per frame); `discardHeld` forgets them when a
 * transaction rolls back. A turn's record reads its usage as stored; ./store.ts gives a turn that
 * has not ended its usage from its execution's fold.
 */
import { z } from "zod";
import {
  TranscriptPartSchema,
  TurnStatus as TurnStatusSchema,
  type UsageView,
  UsageViewSchema,
} from "../../schemas/api";
import { AgentExactRunControlRef } from "../../schemas/contracts";
import {
  type QueuedTurn,
  QueueState,
  type StoredBranch,
  type TranscriptPart,
  type TreeTurn,
  TurnError,
  type TurnRecord,
  TurnRequest,
  type TurnStatus,
  type UpstreamRun,
} from "./records";

interface TurnRow extends Record<string, SqlStorageValue> {
  turn_id: string;
  ordinal: number;
  parent_turn_id: string | null;
  branch: number;
  request_digest: string;
  request: string;
  execution_id: string;
  status: string;
  control_ref: string | null;
  upstream_cursor: string | null;
  result_text: string | null;
  error: string | null;
  usage: string | null;
  cancel_reason: string | null;
  accepted_seq: number | null;
  lost_at: number | null;
  parts: string | null;
  created_at: number;
  started_at: number | null;
  updated_at: number;
  completed_at: number | null;
  compacted: number | null;
}

interface QueuedRow extends Record<string, SqlStorageValue> {
  turn_id: string;
  position: number;
  request_digest: string;
  request: string;
  execution_id: string;
  state: string;
  error: string | null;
  created_at: number;
  updated_at: number;
}

function parseJson<S extends z.ZodType>(schema: S, text: string | null): z.output<S> | null {
  if (text === null) return null;
  return schema.parse(JSON.parse(text));
}

function toQueued(row: QueuedRow): QueuedTurn {
  return {
    turnId: row.turn_id,
    position: row.position,
    requestDigest: row.request_digest,
    request: TurnRequest.parse(JSON.parse(row.request)),
    executionId: row.execution_id,
    state: QueueState.parse(row.state),
    error: parseJson(TurnError, row.error),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** `turns.compacted` (./schema.ts, schema 12): the turn's events compacted; and its result, its message's text, in its parts only. */
const COMPACTED = 1;
const ANSWER_IN_PARTS = 2;

function toTurn(row: TurnRow): TurnRecord {
  return {
    turnId: row.turn_id,
    ordinal: row.ordinal,
    parentTurnId: row.parent_turn_id ?? null,
    branch: row.branch ?? 0,
    requestDigest: row.request_digest,
    request: TurnRequest.parse(JSON.parse(row.request)),
    executionId: row.execution_id,
    status: TurnStatusSchema.parse(row.status),
    controlRef: parseJson(AgentExactRunControlRef, row.control_ref),
    upstreamCursor: row.upstream_cursor,
    resultText: row.result_text,
    answerInParts: row.compacted === ANSWER_IN_PARTS,
    error: parseJson(TurnError, row.error),
    usage: parseJson(UsageViewSchema, row.usage),
    cancelReason: row.cancel_reason,
    acceptedSeq: row.accepted_seq,
    lostAt: row.lost_at ?? null,
    parts: parseJson(z.array(TranscriptPartSchema), row.parts ?? null),
    createdAt: row.created_at,
    startedAt: row.started_at ?? row.created_at,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
  };
}

export class TurnStore {
  /** Turn statuses read or written (null: no such turn). */
  private readonly heldStatus = new Map<string, TurnStatus | null>();
  /** Turns' lost markers read or written. */
  private readonly heldLost = new Map<string, number | null>();

  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  /** Forgets the statuses and lost markers held: a transaction rolled back, so storage is the truth again. */
  discardHeld(): void {
    this.heldStatus.clear();
    this.heldLost.clear();
  }

  // ---- turns

  turn(turnId: string): TurnRecord | null {
    const row = this.sql.exec<TurnRow>("SELECT * FROM turns WHERE turn_id = ?", turnId).toArray()[0];
    return row ? toTurn(row) : null;
  }

  /** Just a turn's status: the hot path reads this per event, from memory once read. */
  turnStatus(turnId: string): TurnStatus | null {
    const held = this.heldStatus.get(turnId);
    if (held !== undefined) return held;
    const status =
      (this.sql.exec<{ status: string }>("SELECT status FROM turns WHERE turn_id = ?", turnId).toArray()[0]?.status as
        | TurnStatus
        | undefined) ?? null;
    this.heldStatus.set(turnId, status);
    return status;
  }

  /** The turn that is pending or running, if any (at most one: turns run one at a time). */
  activeTurn(): TurnRecord | null {
    const row = this.sql
      .exec<TurnRow>("SELECT * FROM turns WHERE status IN ('pending', 'running') ORDER BY ordinal DESC LIMIT 1")
      .toArray()[0];
    return row ? toTurn(row) : null;
  }

  /** Whether a turn runs (read once, when the store opens: a predecessor may have published what it never stored). */
  anyRunning(): boolean {
    return this.sql.exec("SELECT 1 FROM turns WHERE status = 'running' LIMIT 1").toArray().length > 0;
  }

  turns(): TurnRecord[] {
    return this.sql.exec<TurnRow>("SELECT * FROM turns ORDER BY ordinal").toArray().map(toTurn);
  }

  lastTurn(): TurnRecord | null {
    const row = this.sql.exec<TurnRow>("SELECT * FROM turns ORDER BY ordinal DESC LIMIT 1").toArray()[0];
    return row ? toTurn(row) : null;
  }

  /** Ended turns whose events are not compacted yet (a crash between a turn's end and its compaction), oldest first. */
  endedUncompacted(): string[] {
    return this.sql
      .exec<{ turn_id: string }>(
        "SELECT turn_id FROM turns WHERE compacted IS NULL AND status IN ('completed', 'failed', 'cancelled') ORDER BY ordinal",
      )
      .toArray()
      .map((r) => r.turn_id);
  }

  /** Marks an ended turn compacted; `answerInParts`: its result is its message's text, dropped from the row (a mark unchanged writes no row). */
  markCompacted(turnId: string, answerInParts: boolean): void {
    const mark = answerInParts ? ANSWER_IN_PARTS : COMPACTED;
    this.sql.exec(
      "UPDATE turns SET compacted = ?, result_text = CASE WHEN ? = ? THEN NULL ELSE result_text END WHERE turn_id = ? AND compacted IS NOT ?",
      mark,
      mark,
      ANSWER_IN_PARTS,
      turnId,
      mark,
    );
  }

  /**
   * The latest dispatched run of each upstream session the conversation ran in, with its turn's
   * status and end; least recently used first.
   */
  upstreamRuns(): UpstreamRun[] {
    const latest = new Map<string, UpstreamRun>();
    const rows = this.sql.exec<{ control_ref: string; status: string; completed_at: number | null }>(
      "SELECT control_ref, status, completed_at FROM turns WHERE control_ref IS NOT NULL ORDER BY ordinal",
    );
    for (const row of rows) {
      const ref = parseJson(AgentExactRunControlRef, row.control_ref);
      if (!ref) continue;
      latest.delete(ref.sessionId);
      latest.set(ref.sessionId, { ref, status: TurnStatusSchema.parse(row.status), completedAt: row.completed_at });
    }
    return [...latest.values()];
  }

  /** The execution ids of every turn that was dispatched (all but a pending one). */
  dispatchedExecutionIds(): string[] {
    return this.sql
      .exec<{ execution_id: string }>("SELECT execution_id FROM turns WHERE status != 'pending' ORDER BY ordinal")
      .toArray()
      .map((r) => r.execution_id);
  }

  turnCount(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM turns").one().n;
  }

  /** The execution a turn's record names (the run it went under), if there is such a turn. */
  executionIdOf(turnId: string): string | undefined {
    return this.sql
      .exec<{ execution_id: string }>("SELECT execution_id FROM turns WHERE turn_id = ?", turnId)
      .toArray()[0]?.execution_id;
  }

  /**
   * Records a pending turn, started `now` (`sentAt`: when it was sent, if earlier: a turn that
   * waited in the queue); without a place in the tree it follows the newest turn, in branch 0 (a
   * conversation that never branched).
   */
  insertPendingTurn(input: {
    turnId: string;
    parentTurnId?: string | null;
    branch?: number;
    requestDigest: string;
    request: TurnRequest;
    executionId: string;
    now: number;
    sentAt?: number;
  }): void {
    const ordinal = (this.sql.exec<{ n: number | null }>("SELECT MAX(ordinal) AS n FROM turns").one().n ?? 0) + 1;
    const parentTurnId = input.parentTurnId !== undefined ? input.parentTurnId : (this.lastTurn()?.turnId ?? null);
    this.sql.exec(
      `INSERT INTO turns (turn_id, ordinal, parent_turn_id, branch, request_digest, request, execution_id, status, created_at, started_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
      input.turnId,
      ordinal,
      parentTurnId,
      input.branch ?? 0,
      input.requestDigest,
      JSON.stringify(input.request),
      input.executionId,
      input.sentAt ?? input.now,
      input.now,
      input.now,
    );
    this.heldStatus.set(input.turnId, "pending");
    this.heldLost.set(input.turnId, null);
  }

  /** Every turn's place in the tree (../turn-tree.ts), oldest first. */
  treeTurns(): TreeTurn[] {
    return this.sql
      .exec<{ turn_id: string; parent_turn_id: string | null; branch: number; ordinal: number }>(
        "SELECT turn_id, parent_turn_id, branch, ordinal FROM turns ORDER BY ordinal",
      )
      .toArray()
      .map((r) => ({ turnId: r.turn_id, parentTurnId: r.parent_turn_id, branch: r.branch, ordinal: r.ordinal }));
  }

  deleteTurn(turnId: string): void {
    this.sql.exec("DELETE FROM turns WHERE turn_id = ?", turnId);
    this.heldStatus.set(turnId, null);
    this.heldLost.delete(turnId);
  }

  /** The turn runs under its control ref's execution (the requested one, or the one it went again under). */
  markRunning(turnId: string, controlRef: AgentExactRunControlRef, acceptedSeq: number, now: number): void {
    this.sql.exec(
      "UPDATE turns SET status = 'running', execution_id = ?, control_ref = ?, accepted_seq = ?, updated_at = ? WHERE turn_id = ?",
      controlRef.executionId,
      JSON.stringify(controlRef),
      acceptedSeq,
      now,
      turnId,
    );
    this.heldStatus.set(turnId, "running");
  }

  /** Ends a turn; `usage`: its view from its execution's fold, written with it in the same row write (none: the stored one stays). */
  finishTurn(
    turnId: string,
    fields: { status: TurnStatus; resultText?: string; error?: TurnError; now: number },
    usage: UsageView | null,
  ): void {
    this.sql.exec(
      "UPDATE turns SET status = ?, result_text = ?, error = ?, completed_at = ?, updated_at = ?, usage = COALESCE(?, usage) WHERE turn_id = ?",
      fields.status,
      fields.resultText ?? null,
      fields.error ? JSON.stringify(fields.error) : null,
      fields.now,
      fields.now,
      usage ? JSON.stringify(usage) : null,
      turnId,
    );
    this.heldStatus.set(turnId, fields.status);
  }

  /** An ended turn's usage view (a report after its end). */
  setUsage(turnId: string, usage: UsageView): void {
    this.sql.exec("UPDATE turns SET usage = ? WHERE turn_id = ?", JSON.stringify(usage), turnId);
  }

  /** The upstream cursor stored on the turn (the newest opaque id admitted; numeric ids are the log's). */
  storedCursor(turnId: string): string | undefined {
    return (
      this.sql
        .exec<{ upstream_cursor: string | null }>("SELECT upstream_cursor FROM turns WHERE turn_id = ?", turnId)
        .toArray()[0]?.upstream_cursor ?? undefined
    );
  }

  storeCursor(turnId: string, cursor: string): void {
    this.sql.exec("UPDATE turns SET upstream_cursor = ? WHERE turn_id = ?", cursor, turnId);
  }

  private lostAt(turnId: string): number | null {
    const held = this.heldLost.get(turnId);
    if (held !== undefined) return held;
    const lost =
      this.sql.exec<{ lost_at: number | null }>("SELECT lost_at FROM turns WHERE turn_id = ?", turnId).toArray()[0]
        ?.lost_at ?? null;
    this.heldLost.set(turnId, lost);
    return lost;
  }

  /** Progress after the reader had lost the run: no longer lost (a statement only when it was). */
  clearLost(turnId: string): void {
    if (this.lostAt(turnId) === null) return;
    this.sql.exec("UPDATE turns SET lost_at = NULL WHERE turn_id = ?", turnId);
    this.heldLost.set(turnId, null);
  }

  /** The reader gave up reaching the turn's run; the first time is kept. */
  markLost(turnId: string, now: number): void {
    this.sql.exec("UPDATE turns SET lost_at = COALESCE(lost_at, ?) WHERE turn_id = ?", now, turnId);
    this.heldLost.delete(turnId);
  }

  setCancelReason(turnId: string, reason: string): void {
    this.sql.exec("UPDATE turns SET cancel_reason = COALESCE(cancel_reason, ?) WHERE turn_id = ?", reason, turnId);
  }

  /** Turns with events at or below `seq` whose parts are not kept yet. */
  turnsTrimmedBy(seq: number): TurnRecord[] {
    return this.sql
      .exec<TurnRow>(
        "SELECT * FROM turns WHERE parts IS NULL AND turn_id IN (SELECT DISTINCT turn_id FROM events WHERE seq <= ? AND turn_id IS NOT NULL)",
        seq,
      )
      .toArray()
      .map(toTurn);
  }

  keepParts(turnId: string, parts: TranscriptPart[]): void {
    this.sql.exec("UPDATE turns SET parts = ? WHERE turn_id = ?", JSON.stringify(parts), turnId);
  }

  /** The turns' records: how many, and the bytes of their values (text and JSON; each number as its decimal text): what the turns keep beside the log. */
  turnsSize(): { rows: number; bytes: number } {
    const columns = this.sql.exec("SELECT * FROM turns LIMIT 0").columnNames;
    const sum = columns.map((c) => `COALESCE(LENGTH(CAST("${c}" AS BLOB)), 0)`).join(" + ");
    return this.sql
      .exec<{ rows: number; bytes: number }>(`SELECT COUNT(*) AS rows, COALESCE(SUM(${sum}), 0) AS bytes FROM turns`)
      .one();
  }

  // ---- branches

  branches(): StoredBranch[] {
    return this.sql
      .exec<{
        branch: number;
        fork_of: number | null;
        at_turn_id: string | null;
        agent_session_id: string;
        forked: number;
        created_at: number;
      }>("SELECT * FROM branches ORDER BY branch")
      .toArray()
      .map((r) => ({
        branch: r.branch,
        forkOf: r.fork_of,
        at: r.at_turn_id,
        agentSessionId: r.agent_session_id,
        forked: r.forked === 1,
        createdAt: r.created_at,
      }));
  }

  insertBranch(branch: Omit<StoredBranch, "forked">): void {
    this.sql.exec(
      "INSERT INTO branches (branch, fork_of, at_turn_id, agent_session_id, forked, created_at) VALUES (?, ?, ?, ?, 0, ?)",
      branch.branch,
      branch.forkOf,
      branch.at,
      branch.agentSessionId,
      branch.createdAt,
    );
  }

  /** The branch's agent session exists upstream now, under the id upstream answered. */
  markForked(branch: number, agentSessionId: string): void {
    this.sql.exec("UPDATE branches SET forked = 1, agent_session_id = ? WHERE branch = ?", agentSessionId, branch);
  }

  /** The branch's agent session was started afresh, nothing copied into it (the session it would fork is gone): forked from nothing. */
  markStartedAfresh(branch: number): void {
    this.sql.exec("UPDATE branches SET forked = 1, fork_of = NULL WHERE branch = ?", branch);
  }

  // ---- queued turns (../turn-queue.ts)

  queuedTurn(turnId: string): QueuedTurn | null {
    const row = this.sql.exec<QueuedRow>("SELECT * FROM queued_turns WHERE turn_id = ?", turnId).toArray()[0];
    return row ? toQueued(row) : null;
  }

  /** The turns that wait (queued, or starting: recorded pending and being dispatched), in order. */
  waitingTurns(): QueuedTurn[] {
    return this.sql
      .exec<QueuedRow>("SELECT * FROM queued_turns WHERE state IN ('queued', 'starting') ORDER BY position")
      .toArray()
      .map(toQueued);
  }

  insertQueuedTurn(input: {
    turnId: string;
    requestDigest: string;
    request: TurnRequest;
    executionId: string;
    now: number;
  }): void {
    const position =
      (this.sql.exec<{ n: number | null }>("SELECT MAX(position) AS n FROM queued_turns").one().n ?? 0) + 1;
    this.sql.exec(
      "INSERT INTO queued_turns (turn_id, position, request_digest, request, execution_id, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)",
      input.turnId,
      position,
      input.requestDigest,
      JSON.stringify(input.request),
      input.executionId,
      input.now,
      input.now,
    );
  }

  /** A queued turn's request as edited (the digest of the send that queued it stays). */
  setQueuedRequest(turnId: string, request: TurnRequest, now: number): void {
    this.sql.exec(
      "UPDATE queued_turns SET request = ?, updated_at = ? WHERE turn_id = ?",
      JSON.stringify(request),
      now,
      turnId,
    );
  }

  setQueuedState(turnId: string, state: QueueState, now: number, error?: TurnError): void {
    this.sql.exec(
      "UPDATE queued_turns SET state = ?, error = ?, updated_at = ? WHERE turn_id = ?",
      state,
      error ? JSON.stringify(error) : null,
      now,
      turnId,
    );
  }
}
