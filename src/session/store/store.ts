/**
 * The session object's SQLite storage: typed accessors over its tables (the schema and its
 * migrations are ./schema.ts). Everything that belongs together is written in one
 * transactionSync by the caller (../event-log.ts).
 *
 * What the ingest path reads per frame is held in memory, read from storage once per instance
 * and kept in step with every write made through this store: the last seq, each turn's status
 * and lost marker, and each running execution's upstream cursor and the opaque upstream ids it
 * has seen. So a frame costs at most one statement (its event's INSERT); the cursor and the seen
 * ids are written once per commit (`settleAdmissions`). A transaction that rolls back drops what
 * is held (`discardHeld`), which is read again from storage on next use.
 *
 * The held tail (./held-tail.ts, docs/sse-protocol.md §12): text deltas published before they
 * are stored, at most TAIL_MAX_DELTAS of one part, written in one row write by the next commit
 * (from `appendEvent` and `settleAdmissions`, so the log's order is the order viewers saw). Every
 * read of the log expands chunk rows (./log-chunks.ts) and adds the tail after what is stored. A
 * new instance that finds a turn running does not know what tail the old one published: its seqs
 * start TAIL_MAX_DELTAS past the stored ones (`lastSeq`), so no id a viewer may hold is given again.
 *
 * Over 400 lines on purpose: every SQL statement that reads or writes a session's tables is here,
 * one section per table, so what a row costs and what a schema change touches are read in one
 * file; the rules above the storage live in the modules that call it.
 */
import { z } from "zod";
import { ClaimsSchema } from "../../providers/claims";
import { Provenance } from "../../schemas/common";
import { EventEnvelopeSchema, TranscriptPartSchema, TurnStatus as TurnStatusSchema, UsageViewSchema, type UsageView } from "../../schemas/api";
import { AgentExactRunControlRef, CancellationAcknowledgement, InteractionAcknowledgement, InteractionRequest } from "../../schemas/contracts";
import { HeldTail, TAIL_MAX_DELTAS, type UpdateToHold } from "./held-tail";
import { CHUNK_TYPE, compactRows, expandRows, firstSeqOf, type EventRow } from "./log-chunks";
import { migrateSessionSchema } from "./schema";
import type { BranchRecord, TreeTurn } from "../turn-tree";
import { ExecutionUsageStateSchema, executionView, type ExecutionUsageState } from "../../usage/usage-fold";

/** Upstream ids that are whole numbers come in order: a repeat is one at or below the cursor. */
const NUMERIC_ID = /^\d{1,15}$/;

/** Whether an upstream id is a whole number (ids that come in order: the cursor is the newest stored row's). */
export function isNumericUpstreamId(id: string): boolean {
  return NUMERIC_ID.test(id);
}

export type TurnStatus = z.infer<typeof TurnStatusSchema>;
export type TranscriptPart = z.infer<typeof TranscriptPartSchema>;
export const TERMINAL_TURN_STATUSES: ReadonlySet<TurnStatus> = new Set(["completed", "failed", "cancelled"]);

const SessionContextSchema = z.strictObject({ sessionId: z.string(), conversationId: z.string(), ownerKey: z.string() });
export type SessionContext = z.infer<typeof SessionContextSchema>;

/** What the `meta` table holds, one schema per key: written and read back validated. */
const MetaSchemas = {
  /** Who this session belongs to, bound on first use. */
  session: SessionContextSchema,
  /** The agent session upstream, when it is not the session id: a conversation id used again after a delete starts afresh. */
  agentSessionId: z.string(),
  createdAt: z.number().int(),
  title: z.string(),
  /** The environment the last turn ran in (the session lives there upstream). */
  environmentId: z.string(),
  /** What that environment lets the gateway offer, as the provider read it. */
  claims: ClaimsSchema,
  /** Tokens the user spent in other conversations, as read when the last turn started. */
  userElsewhere: z.strictObject({
    used: z.number().int().nonnegative(),
    complete: z.boolean(),
    // Before schema 9 it was not recorded (read again at the next turn).
    provenance: Provenance.default("unknown"),
  }),
  /** The branch the conversation shows (../turn-tree.ts); absent: branch 0. */
  activeBranch: z.number().int().nonnegative(),
  /** The environment whose fork route was proved missing (404, 501): an edit there is refused before any upstream call. */
  forkUnavailable: z.strictObject({ environmentId: z.string(), since: z.number().int() }),
  /** Runs whose turn the gateway ended while they may still run upstream (../abandoned-runs.ts). */
  abandonedRuns: z.array(
    z.strictObject({
      turnId: z.string(),
      ref: AgentExactRunControlRef,
      /** When the turn was ended here. */
      since: z.number().int(),
      /** Settlements tried without an answer on the run's end. */
      attempts: z.number().int().nonnegative(),
    }),
  ),
  /** The seq up to which the log's webhook events were handed to the user object (../webhook-handoff.ts). */
  webhooksHandedOff: z.number().int().nonnegative(),
  /** The last seq an instance that opened on a running turn skipped to (./held-tail.ts): the next one skips past it. */
  seqFloor: z.number().int().nonnegative(),
  /** The highest seq trimming removed the log at and below (absent: never trimmed): a cursor at or above it is held (docs/sse-protocol.md §4, §13). */
  trimmedThrough: z.number().int().nonnegative(),
  /** Upstream sessions released while idle (../session-release.ts): each with the execution id of its last run then. */
  releasedSessions: z.record(z.string(), z.string()),
};
type MetaKey = keyof typeof MetaSchemas;
type MetaValue<K extends MetaKey> = z.infer<(typeof MetaSchemas)[K]>;

export const TurnRequest = z.strictObject({
  message: z.string(),
  model: z.string().optional(),
  interactions: z.record(z.string(), z.boolean()).optional(),
  /** The turn this one follows, as the client named it (null: a first message sent again); absent: the active branch's tip. Part of the request digest. */
  parentTurnId: z.string().nullable().optional(),
});
export type TurnRequest = z.infer<typeof TurnRequest>;

export const TurnError = z.strictObject({ code: z.string(), message: z.string() });
export type TurnError = z.infer<typeof TurnError>;

export interface TurnRecord {
  turnId: string;
  ordinal: number;
  /** The turn it follows (null: a first message). */
  parentTurnId: string | null;
  /** The branch (agent session) it runs in (../turn-tree.ts). */
  branch: number;
  requestDigest: string;
  request: TurnRequest;
  executionId: string;
  status: TurnStatus;
  controlRef: AgentExactRunControlRef | null;
  upstreamCursor: string | null;
  /** Its result's text, as stored: null when it has none, or when `answerInParts` (read it with ../transcript.ts withAnswer). */
  resultText: string | null;
  /** Its result is its message's text (its text parts joined), held once, in its parts: not stored again. */
  answerInParts: boolean;
  error: TurnError | null;
  usage: UsageView | null;
  cancelReason: string | null;
  acceptedSeq: number | null;
  /** Since when the reader has not been able to reach the run (null while it reads). */
  lostAt: number | null;
  /** The finished message's parts, kept when the log was trimmed into the turn (null otherwise). */
  parts: TranscriptPart[] | null;
  /** When it was sent (a turn that waited in the queue: when it was queued). */
  createdAt: number;
  /** When it started: recorded pending, to be dispatched (its time limit counts from here). */
  startedAt: number;
  updatedAt: number;
  completedAt: number | null;
}

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

/**
 * Where a queued turn is (../turn-queue.ts): waiting (`queued`); recorded pending in `turns` and
 * being dispatched (`starting`); dispatched (`started`: its record is the turn's from then on);
 * removed before it started (`removed`); refused at its start (`refused`, with its error).
 */
export const QueueState = z.enum(["queued", "starting", "started", "removed", "refused"]);
export type QueueState = z.infer<typeof QueueState>;

export interface QueuedTurn {
  turnId: string;
  /** Its place: queued turns start in ascending position. */
  position: number;
  /** The digest of the send that queued it: a retry of that send finds it, an edit keeps it. */
  requestDigest: string;
  /** What it will send, as last edited. */
  request: TurnRequest;
  executionId: string;
  state: QueueState;
  /** Why it was removed or refused. */
  error: TurnError | null;
  createdAt: number;
  updatedAt: number;
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

export type { EventRow };

/** What a browser receives as `data:` of one SSE frame. */
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

/** An event to append: the envelope less what the log assigns. */
export type NewEvent = Omit<EventEnvelope, "seq" | "at"> & { upstreamId?: string | null; now: number };

export type InteractionStatus = "outstanding" | "answered" | "expired" | "cancelled";

export type StoredOperation =
  | { kind: "cancel"; requestDigest: string; ack: CancellationAcknowledgement }
  | { kind: "answer"; requestDigest: string; ack: InteractionAcknowledgement };

export interface InteractionRecord {
  interactionId: string;
  turnId: string;
  executionId: string;
  request: InteractionRequest;
  status: InteractionStatus;
  outcome: string | null;
  answerHmac: string | null;
  operationId: string | null;
  createdAt: number;
  resolvedAt: number | null;
}

interface InteractionRow extends Record<string, SqlStorageValue> {
  interaction_id: string;
  turn_id: string;
  execution_id: string;
  request: string;
  status: string;
  outcome: string | null;
  answer_hmac: string | null;
  operation_id: string | null;
  created_at: number;
  resolved_at: number | null;
}

const InteractionStatusSchema = z.enum(["outstanding", "answered", "expired", "cancelled"]);

function toInteraction(row: InteractionRow): InteractionRecord {
  return {
    interactionId: row.interaction_id,
    turnId: row.turn_id,
    executionId: row.execution_id,
    request: InteractionRequest.parse(JSON.parse(row.request)),
    status: InteractionStatusSchema.parse(row.status),
    outcome: row.outcome,
    answerHmac: row.answer_hmac,
    operationId: row.operation_id,
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
  };
}

function parseJson<S extends z.ZodType>(schema: S, text: string | null): z.output<S> | null {
  if (text === null) return null;
  return schema.parse(JSON.parse(text));
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

/** An upstream session's latest run (`SessionStore.upstreamRuns`). */
export interface UpstreamRun {
  ref: AgentExactRunControlRef;
  status: TurnStatus;
  completedAt: number | null;
}

/** A branch other than 0: where it was forked from, and its agent session upstream. */
export interface StoredBranch extends BranchRecord {
  agentSessionId: string;
  /** Whether its agent session exists upstream (forked, or started afresh by its first turn). */
  forked: boolean;
  createdAt: number;
}

/** A running execution's upstream cursor and seen ids, as held in memory (see the header). */
interface HeldCursor {
  turnId: string;
  /** The last upstream id admitted (exclusive cursor). */
  cursor: string | undefined;
  /** Opaque (non-numeric) ids seen, read from storage on first need. */
  seen: Set<string> | undefined;
  /** Opaque ids admitted and not yet written, and whether the turn's cursor is to be written. */
  unsaved: string[];
  cursorDirty: boolean;
}

export class SessionStore {
  /** Rows written through this store since it was opened (SQLite rows are billed per row written). */
  rowsWritten = 0;
  /** Deltas published and not stored yet (see the header). */
  private readonly tail: HeldTail;
  /** The seqs this instance may not give again (a predecessor's tail): set on the first read of the last seq. */
  private seqFloor: number | undefined;
  /** How many seqs past the stored ones a predecessor may have published unstored (a turn ran when this store opened). */
  private readonly inheritedTail: number;
  /** This instance's floor, to store before it publishes an update it holds (a successor then skips past it too). */
  private floorToStore: number | undefined;
  /** Of those, the rows turn-end compaction wrote (its DELETEs count, a row each; ../compaction.ts). */
  compactionRowsWritten = 0;
  private readonly sql: Pick<SqlStorage, "exec">;
  /** The log's last seq, once read (appends advance it). */
  private heldLastSeq: number | undefined;
  /** Turn statuses read or written (null: no such turn). */
  private readonly heldStatus = new Map<string, TurnStatus | null>();
  /** Turns' lost markers read or written. */
  private readonly heldLost = new Map<string, number | null>();
  /** Per execution: its upstream cursor and seen ids. */
  private readonly heldCursors = new Map<string, HeldCursor>();

  constructor(sql: SqlStorage) {
    this.sql = {
      exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]) => {
        const cursor = sql.exec<T>(query, ...bindings);
        this.rowsWritten += cursor.rowsWritten;
        return cursor;
      },
    };
    migrateSessionSchema(this.sql);
    this.tail = new HeldTail(this.sql);
    // A turn running when this store opens may have had deltas published by the instance before
    // and never stored: their seqs are not given again.
    this.inheritedTail = this.sql.exec("SELECT 1 FROM turns WHERE status = 'running' LIMIT 1").toArray().length > 0 ? TAIL_MAX_DELTAS : 0;
  }

  // ---- meta

  getMeta<K extends MetaKey>(key: K): MetaValue<K> | null {
    const text = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value;
    return text === undefined ? null : (MetaSchemas[key].parse(JSON.parse(text)) as MetaValue<K>);
  }

  setMeta<K extends MetaKey>(key: K, value: MetaValue<K>): void {
    const text = JSON.stringify(MetaSchemas[key].parse(value));
    // A value written again unchanged writes no row.
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value WHERE value IS NOT excluded.value", key, text);
  }

  // ---- turns

  turn(turnId: string): TurnRecord | null {
    const row = this.sql.exec<TurnRow>("SELECT * FROM turns WHERE turn_id = ?", turnId).toArray()[0];
    return row ? this.withLiveUsage(toTurn(row)) : null;
  }

  /** Just a turn's status: the hot path reads this per event, from memory once read. */
  turnStatus(turnId: string): TurnStatus | null {
    const held = this.heldStatus.get(turnId);
    if (held !== undefined) return held;
    const status = (this.sql.exec<{ status: string }>("SELECT status FROM turns WHERE turn_id = ?", turnId).toArray()[0]?.status as TurnStatus | undefined) ?? null;
    this.heldStatus.set(turnId, status);
    return status;
  }

  /**
   * Forgets what is held in memory (the last seq, statuses, lost markers, cursors): a transaction
   * rolled back, so storage is the truth again.
   */
  discardHeld(): void {
    // The tail was published: it is held again, to be written by the next commit.
    this.tail.rolledBack();
    this.heldLastSeq = undefined;
    this.heldStatus.clear();
    this.heldLost.clear();
    this.heldCursors.clear();
  }

  /** The turn that is pending or running, if any (at most one: turns run one at a time). */
  activeTurn(): TurnRecord | null {
    const row = this.sql.exec<TurnRow>("SELECT * FROM turns WHERE status IN ('pending', 'running') ORDER BY ordinal DESC LIMIT 1").toArray()[0];
    return row ? this.withLiveUsage(toTurn(row)) : null;
  }

  turns(): TurnRecord[] {
    return this.sql
      .exec<TurnRow>("SELECT * FROM turns ORDER BY ordinal")
      .toArray()
      .map((row) => this.withLiveUsage(toTurn(row)));
  }

  /** Ended turns whose events are not compacted yet (a crash between a turn's end and its compaction), oldest first. */
  endedUncompacted(): string[] {
    return this.sql
      .exec<{ turn_id: string }>("SELECT turn_id FROM turns WHERE compacted IS NULL AND status IN ('completed', 'failed', 'cancelled') ORDER BY ordinal")
      .toArray()
      .map((r) => r.turn_id);
  }

  /** Marks an ended turn compacted; `answerInParts`: its result is its message's text, dropped from the row (a mark unchanged writes no row). */
  markCompacted(turnId: string, answerInParts: boolean): void {
    const mark = answerInParts ? ANSWER_IN_PARTS : COMPACTED;
    this.sql.exec("UPDATE turns SET compacted = ?, result_text = CASE WHEN ? = ? THEN NULL ELSE result_text END WHERE turn_id = ? AND compacted IS NOT ?", mark, mark, ANSWER_IN_PARTS, turnId, mark);
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

  lastTurn(): TurnRecord | null {
    const row = this.sql.exec<TurnRow>("SELECT * FROM turns ORDER BY ordinal DESC LIMIT 1").toArray()[0];
    return row ? this.withLiveUsage(toTurn(row)) : null;
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

  /**
   * Records a pending turn, started `now` (`sentAt`: when it was sent, if earlier: a turn that
   * waited in the queue); without a place in the tree it follows the newest turn, in branch 0 (a
   * conversation that never branched).
   */
  insertPendingTurn(input: { turnId: string; parentTurnId?: string | null; branch?: number; requestDigest: string; request: TurnRequest; executionId: string; now: number; sentAt?: number }): void {
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
      .exec<{ turn_id: string; parent_turn_id: string | null; branch: number; ordinal: number }>("SELECT turn_id, parent_turn_id, branch, ordinal FROM turns ORDER BY ordinal")
      .toArray()
      .map((r) => ({ turnId: r.turn_id, parentTurnId: r.parent_turn_id, branch: r.branch, ordinal: r.ordinal }));
  }

  // ---- branches

  branches(): StoredBranch[] {
    return this.sql
      .exec<{ branch: number; fork_of: number | null; at_turn_id: string | null; agent_session_id: string; forked: number; created_at: number }>("SELECT * FROM branches ORDER BY branch")
      .toArray()
      .map((r) => ({ branch: r.branch, forkOf: r.fork_of, at: r.at_turn_id, agentSessionId: r.agent_session_id, forked: r.forked === 1, createdAt: r.created_at }));
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

  /**
   * The run's cursor: held in memory once read; from storage, the upstream id of its newest logged
   * event (numeric ids, which upstream sends in order), else the one stored on the turn.
   */
  cursorOf(turnId: string, executionId: string): string | undefined {
    return this.heldCursor(turnId, executionId).cursor;
  }

  private heldCursor(turnId: string, executionId: string): HeldCursor {
    let held = this.heldCursors.get(executionId);
    if (held) return held;
    const logged = this.sql
      .exec<{ upstream_id: string }>("SELECT upstream_id FROM events WHERE execution_id = ? AND upstream_id IS NOT NULL ORDER BY seq DESC LIMIT 1", executionId)
      .toArray()[0]?.upstream_id;
    const cursor =
      logged !== undefined && NUMERIC_ID.test(logged)
        ? logged
        : (this.sql.exec<{ upstream_cursor: string | null }>("SELECT upstream_cursor FROM turns WHERE turn_id = ?", turnId).toArray()[0]?.upstream_cursor ?? undefined);
    // Deltas held and not stored were admitted: the cursor is past them.
    const tail = this.tail.upstreamIdOf(executionId);
    const ahead = tail !== undefined && (cursor === undefined || (NUMERIC_ID.test(cursor) && Number(tail) > Number(cursor)));
    held = { turnId, cursor: ahead ? tail : cursor, seen: undefined, unsaved: [], cursorDirty: false };
    this.heldCursors.set(executionId, held);
    return held;
  }

  private lostAt(turnId: string): number | null {
    const held = this.heldLost.get(turnId);
    if (held !== undefined) return held;
    const lost = this.sql.exec<{ lost_at: number | null }>("SELECT lost_at FROM turns WHERE turn_id = ?", turnId).toArray()[0]?.lost_at ?? null;
    this.heldLost.set(turnId, lost);
    return lost;
  }

  /** Progress after the reader had lost the run: no longer lost (a statement only when it was). */
  private clearLost(turnId: string): void {
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

  // ---- queued turns (../turn-queue.ts)

  queuedTurn(turnId: string): QueuedTurn | null {
    const row = this.sql.exec<QueuedRow>("SELECT * FROM queued_turns WHERE turn_id = ?", turnId).toArray()[0];
    return row ? toQueued(row) : null;
  }

  /** The turns that wait (queued, or starting: recorded pending and being dispatched), in order. */
  waitingTurns(): QueuedTurn[] {
    return this.sql.exec<QueuedRow>("SELECT * FROM queued_turns WHERE state IN ('queued', 'starting') ORDER BY position").toArray().map(toQueued);
  }

  insertQueuedTurn(input: { turnId: string; requestDigest: string; request: TurnRequest; executionId: string; now: number }): void {
    const position = (this.sql.exec<{ n: number | null }>("SELECT MAX(position) AS n FROM queued_turns").one().n ?? 0) + 1;
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
    this.sql.exec("UPDATE queued_turns SET request = ?, updated_at = ? WHERE turn_id = ?", JSON.stringify(request), now, turnId);
  }

  setQueuedState(turnId: string, state: QueueState, now: number, error?: TurnError): void {
    this.sql.exec("UPDATE queued_turns SET state = ?, error = ?, updated_at = ? WHERE turn_id = ?", state, error ? JSON.stringify(error) : null, now, turnId);
  }

  // ---- operations (idempotent cancel and answer commands)

  /** A recorded operation: its kind, the digest (cancel) or keyed hash (answer) of its command, and its acknowledgement. */
  operation(operationId: string): StoredOperation | null {
    const row = this.sql
      .exec<{ kind: string; request_digest: string; ack: string }>("SELECT kind, request_digest, ack FROM operations WHERE operation_id = ?", operationId)
      .toArray()[0];
    if (!row) return null;
    const ack = JSON.parse(row.ack) as unknown;
    return row.kind === "cancel"
      ? { kind: "cancel", requestDigest: row.request_digest, ack: CancellationAcknowledgement.parse(ack) }
      : { kind: "answer", requestDigest: row.request_digest, ack: InteractionAcknowledgement.parse(ack) };
  }

  putOperation(operationId: string, operation: StoredOperation, now: number): void {
    this.sql.exec(
      "INSERT INTO operations (operation_id, kind, request_digest, ack, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(operation_id) DO UPDATE SET ack = excluded.ack",
      operationId,
      operation.kind,
      operation.requestDigest,
      JSON.stringify(operation.ack),
      now,
    );
  }

  // ---- interactions

  interaction(interactionId: string): InteractionRecord | null {
    const row = this.sql.exec<InteractionRow>("SELECT * FROM interactions WHERE interaction_id = ?", interactionId).toArray()[0];
    return row ? toInteraction(row) : null;
  }

  outstandingInteractions(): InteractionRecord[] {
    return this.sql.exec<InteractionRow>("SELECT * FROM interactions WHERE status = 'outstanding' ORDER BY created_at").toArray().map(toInteraction);
  }

  /** Every ask of one turn, in the order asked. */
  interactionsOfTurn(turnId: string): InteractionRecord[] {
    return this.sql.exec<InteractionRow>("SELECT * FROM interactions WHERE turn_id = ? ORDER BY created_at", turnId).toArray().map(toInteraction);
  }

  /** The turn's outstanding asks, oldest first. */
  outstandingOfTurn(turnId: string): InteractionRecord[] {
    return this.sql
      .exec<InteractionRow>("SELECT * FROM interactions WHERE status = 'outstanding' AND turn_id = ? ORDER BY created_at, rowid", turnId)
      .toArray()
      .map(toInteraction);
  }

  /** Records a new ask; false when it was known already. */
  addInteraction(input: { interactionId: string; turnId: string; executionId: string; request: unknown; now: number }): boolean {
    const result = this.sql.exec(
      "INSERT OR IGNORE INTO interactions (interaction_id, turn_id, execution_id, request, status, created_at) VALUES (?, ?, ?, ?, 'outstanding', ?)",
      input.interactionId,
      input.turnId,
      input.executionId,
      JSON.stringify(input.request),
      input.now,
    );
    return result.rowsWritten > 0;
  }

  resolveInteraction(interactionId: string, fields: { status: InteractionStatus; outcome?: string; answerHmac?: string; operationId?: string; now: number }): void {
    this.sql.exec(
      "UPDATE interactions SET status = ?, outcome = ?, answer_hmac = ?, operation_id = ?, resolved_at = ? WHERE interaction_id = ?",
      fields.status,
      fields.outcome ?? null,
      fields.answerHmac ?? null,
      fields.operationId ?? null,
      fields.now,
      interactionId,
    );
  }

  // ---- usage

  executionUsage(executionId: string): ExecutionUsageState | null {
    const row = this.sql.exec<{ state: string }>("SELECT state FROM usage WHERE execution_id = ?", executionId).toArray()[0];
    return row ? ExecutionUsageStateSchema.parse(JSON.parse(row.state)) : null;
  }

  allExecutionUsage(): ExecutionUsageState[] {
    return this.sql
      .exec<{ state: string }>("SELECT state FROM usage")
      .toArray()
      .map((r) => ExecutionUsageStateSchema.parse(JSON.parse(r.state)));
  }

  /**
   * Stores an execution's fold. Its view goes on the turn record once the turn has ended (here, for
   * a report after the end; else with the end, `finishTurn`): while a turn runs, its record's usage
   * is read from the fold (`withLiveUsage`), so a usage report writes one row, not two.
   */
  putExecutionUsage(turnId: string, state: ExecutionUsageState): void {
    this.sql.exec(
      "INSERT INTO usage (execution_id, turn_id, state) VALUES (?, ?, ?) ON CONFLICT(execution_id) DO UPDATE SET state = excluded.state",
      state.executionId,
      turnId,
      JSON.stringify(state),
    );
    const status = this.turnStatus(turnId);
    if (status !== null && TERMINAL_TURN_STATUSES.has(status)) this.sql.exec("UPDATE turns SET usage = ? WHERE turn_id = ?", JSON.stringify(executionView(state)), turnId);
  }

  /** Ends a turn; its usage view (from its execution's fold) is written with it, in the same row write. */
  finishTurn(turnId: string, fields: { status: TurnStatus; resultText?: string; error?: TurnError; now: number }): void {
    const executionId = this.sql.exec<{ execution_id: string }>("SELECT execution_id FROM turns WHERE turn_id = ?", turnId).toArray()[0]?.execution_id;
    const fold = executionId !== undefined ? this.executionUsage(executionId) : null;
    this.sql.exec(
      "UPDATE turns SET status = ?, result_text = ?, error = ?, completed_at = ?, updated_at = ?, usage = COALESCE(?, usage) WHERE turn_id = ?",
      fields.status,
      fields.resultText ?? null,
      fields.error ? JSON.stringify(fields.error) : null,
      fields.now,
      fields.now,
      fold ? JSON.stringify(executionView(fold)) : null,
      turnId,
    );
    this.heldStatus.set(turnId, fields.status);
  }

  /** A turn record as read: one that has not ended has its usage from its execution's fold (see `putExecutionUsage`). */
  private withLiveUsage(turn: TurnRecord): TurnRecord {
    if (TERMINAL_TURN_STATUSES.has(turn.status)) return turn;
    const fold = this.executionUsage(turn.executionId);
    return fold ? { ...turn, usage: executionView(fold) } : turn;
  }

  // ---- upstream de-duplication

  /**
   * The one de-duplication rule: whether an upstream frame is new (true) or a repeat (false: an
   * inclusive replay, a repeated frame), so each counts once. Numeric ids come in order: one at or
   * below the cursor is a repeat, and the cursor is the newest logged event's id, so a frame costs
   * one row (the caller logs it under its upstream id). Other ids are remembered one by one, the
   * newest being the turn's cursor. A new frame is progress: the reader is no longer lost.
   *
   * Decided in memory (the cursor and the seen ids are held); what it must write, the opaque ids
   * and the turn's cursor, is written by `settleAdmissions` once per commit, in the same
   * transaction.
   */
  admitUpstream(turnId: string, executionId: string, upstreamId: string): boolean {
    const held = this.heldCursor(turnId, executionId);
    if (NUMERIC_ID.test(upstreamId)) {
      if (held.cursor !== undefined && NUMERIC_ID.test(held.cursor) && Number(upstreamId) <= Number(held.cursor)) return false;
      held.cursor = upstreamId;
      this.clearLost(turnId);
      return true;
    }
    held.seen ??= new Set(
      this.sql
        .exec<{ upstream_id: string }>("SELECT upstream_id FROM upstream_seen WHERE execution_id = ?", executionId)
        .toArray()
        .map((r) => r.upstream_id),
    );
    if (held.seen.has(upstreamId)) return false;
    held.seen.add(upstreamId);
    held.unsaved.push(upstreamId);
    held.cursor = upstreamId;
    held.cursorDirty = true;
    this.clearLost(turnId);
    return true;
  }

  /** Writes what admissions left to write (opaque ids seen, the turn's cursor): once per commit, inside its transaction. */
  settleAdmissions(): void {
    // The tail first: a cursor written past deltas not stored would skip them after a crash.
    this.tail.flush();
    for (const [executionId, held] of this.heldCursors) {
      if (held.unsaved.length > 0) {
        const ids = held.unsaved;
        held.unsaved = [];
        this.sql.exec(
          "INSERT OR IGNORE INTO upstream_seen (execution_id, upstream_id) SELECT ?, value FROM json_each(?)",
          executionId,
          JSON.stringify(ids),
        );
      }
      if (held.cursorDirty && held.cursor !== undefined) {
        held.cursorDirty = false;
        this.sql.exec("UPDATE turns SET upstream_cursor = ? WHERE turn_id = ?", held.cursor, held.turnId);
      }
    }
  }

  forgetSeen(executionId: string): void {
    this.sql.exec("DELETE FROM upstream_seen WHERE execution_id = ?", executionId);
    this.heldCursors.delete(executionId);
  }

  /**
   * Drops what memory holds of an execution's cursor and seen ids (its reader stopped: the turn
   * ended, was cancelled or failed here, or the object shuts down), storage untouched. Safe between
   * commits, since every commit writes what it admitted (`settleAdmissions`): a reader started
   * again reads it back from storage once.
   */
  releaseHeld(executionId: string): void {
    this.heldCursors.delete(executionId);
  }

  // ---- event log

  /** Appends one event and answers it with its seq; the caller publishes it after the transaction. */
  appendEvent(input: NewEvent): EventRow {
    // What viewers saw before this event is stored before it.
    this.tail.flush();
    const at = new Date(input.now).toISOString();
    // Appends are synchronous in a single-threaded object: the next seq is held, not read per append.
    const seq = this.lastSeq() + 1;
    const envelope: EventEnvelope = {
      seq,
      turnId: input.turnId,
      executionId: input.executionId,
      type: input.type,
      data: input.data,
      ...(input.usage ? { usage: input.usage } : {}),
      ...(input.usageMode ? { usageMode: input.usageMode } : {}),
      at,
    };
    const text = JSON.stringify(envelope);
    this.sql.exec(
      "INSERT INTO events (seq, turn_id, execution_id, upstream_id, type, envelope) VALUES (?, ?, ?, ?, ?, ?)",
      seq,
      input.turnId,
      input.executionId,
      input.upstreamId ?? null,
      input.type,
      text,
    );
    this.heldLastSeq = seq;
    this.tail.appended();
    return { seq, type: input.type, envelope: text };
  }

  /**
   * At most `limit` events strictly after `afterSeq`: the stored rows (chunk rows expanded), then,
   * once storage has no more, the held tail. Fewer than `limit`: there is nothing more.
   */
  private page(afterSeq: number, limit: number, stored: EventRow[], tailToo: boolean): EventRow[] {
    const events = expandRows(stored).filter((row) => row.seq > afterSeq);
    // Every stored row holds an event after the cursor (its last seq is past it): a full read of rows is a full page.
    if (stored.length < limit && tailToo) events.push(...this.tail.rows().filter((row) => row.seq > afterSeq));
    return events.length > limit ? events.slice(0, limit) : events;
  }

  /** One page of the log strictly after `afterSeq`. */
  eventsAfter(afterSeq: number, limit: number): EventRow[] {
    return this.page(afterSeq, limit, this.sql.exec<EventRow>("SELECT seq, type, envelope FROM events WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, limit).toArray(), true);
  }

  /** One page of a branch's history strictly after `afterSeq`: the events of `turnIds` (its path) and those of no turn. */
  eventsAfterOf(afterSeq: number, limit: number, turnIds: string[]): EventRow[] {
    const stored = this.sql
      .exec<EventRow>(
        "SELECT seq, type, envelope FROM events WHERE seq > ? AND (turn_id IS NULL OR turn_id IN (SELECT value FROM json_each(?))) ORDER BY seq LIMIT ?",
        afterSeq,
        JSON.stringify(turnIds),
        limit,
      )
      .toArray();
    const held = this.tail.turnId();
    return this.page(afterSeq, limit, stored, held !== undefined && turnIds.includes(held));
  }

  // ---- the held tail (./held-tail.ts)

  /**
   * Holds a part's update (published by the caller at once, stored by the next commit) under the
   * next seq, and answers its row; null when the tail cannot take it (another part, full, or being
   * written): the caller commits (which stores the tail) and holds it then.
   */
  holdUpdate(input: UpdateToHold): EventRow | null {
    const seq = this.lastSeq() + 1;
    if (this.floorToStore !== undefined) {
      // Before anything held above the floor reaches a viewer (the output gate holds the send
      // until this write is durable): a successor that finds nothing stored past it skips past it.
      this.setMeta("seqFloor", this.floorToStore);
      this.floorToStore = undefined;
    }
    const row = this.tail.hold(input, seq);
    if (row) this.heldLastSeq = row.seq;
    return row;
  }

  /** Whether deltas are held (published, not stored). */
  holdsTail(): boolean {
    return this.tail.holds();
  }

  /** The transaction that wrote the tail committed: it is stored. */
  tailCommitted(): void {
    this.tail.committed();
  }

  /** The retained events of these types strictly after `afterSeq`, read back validated (the webhook hand-off). */
  eventsOfTypesAfter(afterSeq: number, types: readonly string[], limit: number): EventEnvelope[] {
    return this.sql
      .exec<{ envelope: string }>(`SELECT envelope FROM events WHERE seq > ? AND type IN (${types.map(() => "?").join(", ")}) ORDER BY seq LIMIT ?`, afterSeq, ...types, limit)
      .toArray()
      .map((row) => EventEnvelopeSchema.parse(JSON.parse(row.envelope)));
  }

  /** The retained events of one turn (the held ones included), read back validated. */
  eventsOfTurn(turnId: string): EventEnvelope[] {
    const stored = this.sql.exec<EventRow>("SELECT seq, type, envelope FROM events WHERE turn_id = ? ORDER BY seq", turnId).toArray();
    const held = this.tail.turnId() === turnId ? this.tail.rows() : [];
    return [...expandRows(stored), ...held].map((row) => EventEnvelopeSchema.parse(JSON.parse(row.envelope)));
  }

  lastSeq(): number {
    if (this.heldLastSeq === undefined) {
      // Trimming never removes the newest event, so the largest seq is the high-water mark; read once, then held.
      const stored = this.sql.exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events").one().seq ?? 0;
      if (this.seqFloor === undefined) {
        // Past the stored seqs and past the floor of any predecessor that stored nothing since.
        this.seqFloor = this.inheritedTail > 0 ? Math.max(stored, this.getMeta("seqFloor") ?? 0) + this.inheritedTail : stored;
        if (this.inheritedTail > 0) this.floorToStore = this.seqFloor;
      }
      this.heldLastSeq = Math.max(stored, this.seqFloor, this.tail.lastSeq() ?? 0);
    }
    return this.heldLastSeq;
  }

  /** The retained log's size: its events (a chunk row holds several), its rows, and the UTF-8 bytes of their envelopes. */
  logSize(): { events: number; rows: number; bytes: number } {
    return this.sql
      .exec<{ events: number; rows: number; bytes: number }>(
        "SELECT COALESCE(SUM(CASE WHEN type = ? THEN json_array_length(envelope, '$.updates') ELSE 1 END), 0) AS events, COUNT(*) AS rows, COALESCE(SUM(LENGTH(CAST(envelope AS BLOB))), 0) AS bytes FROM events",
        CHUNK_TYPE,
      )
      .one();
  }

  /** The turns' records: how many, and the bytes of their values (text and JSON; each number as its decimal text): what the turns keep beside the log. */
  turnsSize(): { rows: number; bytes: number } {
    const columns = this.sql.exec("SELECT * FROM turns LIMIT 0").columnNames;
    const sum = columns.map((c) => `COALESCE(LENGTH(CAST("${c}" AS BLOB)), 0)`).join(" + ");
    return this.sql.exec<{ rows: number; bytes: number }>(`SELECT COUNT(*) AS rows, COALESCE(SUM(${sum}), 0) AS bytes FROM turns`).one();
  }

  /** The first seq the log holds (a chunk row's first delta), or null when it holds none. */
  firstRetainedSeq(): number | null {
    const row = this.sql.exec<EventRow>("SELECT seq, type, envelope FROM events ORDER BY seq LIMIT 1").toArray()[0];
    return row ? firstSeqOf(row) : (this.tail.firstSeq() ?? null);
  }

  /** The seq at and below which trimming to `maxEvents` removes events (0: nothing). */
  trimCutoff(maxEvents: number): number {
    return Math.max(0, this.lastSeq() - maxEvents);
  }

  /** Turns with events at or below `seq` whose parts are not kept yet. */
  turnsTrimmedBy(seq: number): TurnRecord[] {
    return this.sql
      .exec<TurnRow>("SELECT * FROM turns WHERE parts IS NULL AND turn_id IN (SELECT DISTINCT turn_id FROM events WHERE seq <= ? AND turn_id IS NOT NULL)", seq)
      .toArray()
      .map(toTurn);
  }

  keepParts(turnId: string, parts: TranscriptPart[]): void {
    this.sql.exec("UPDATE turns SET parts = ? WHERE turn_id = ?", JSON.stringify(parts), turnId);
  }

  /** Removes the events at and below `cutoff`; turn records outlive the log. */
  trimEvents(cutoff: number): number {
    if (cutoff <= 0) return 0;
    const removed = this.sql.exec("DELETE FROM events WHERE seq <= ?", cutoff).rowsWritten;
    if (cutoff > (this.getMeta("trimmedThrough") ?? 0)) this.setMeta("trimmedThrough", cutoff);
    return removed;
  }

  /**
   * The lowest cursor the log holds (docs/sse-protocol.md §4): the seq trimming removed through,
   * else the oldest retained seq minus one. Not MIN(seq) - 1 alone: compaction removes seqs too
   * (§13), and a cursor in a compacted run is held, however old. Nor the trim's cutoff alone: a
   * chunk row holding seqs on both sides of it is kept whole (./held-tail.ts), its events held.
   */
  lowestHeldCursor(): number | null {
    const trimmed = this.getMeta("trimmedThrough");
    const first = this.firstRetainedSeq();
    if (first === null) return null;
    // A chunk row that holds seqs on both sides of a trim's cutoff was kept whole: its events are held.
    return trimmed === null ? first - 1 : Math.min(trimmed, first - 1);
  }

  // ---- compaction (../compaction.ts)

  /**
   * The event stored at exactly `seq` in its own row, as stored: validated, but the stored JSON's
   * own fields and order, not the schema's reading of them (a rewrite keeps them byte for byte).
   */
  storedEvent(seq: number): EventEnvelope | null {
    const text = this.sql.exec<{ envelope: string }>("SELECT envelope FROM events WHERE seq = ?", seq).toArray()[0]?.envelope;
    if (text === undefined) return null;
    // A row holding several events (not one event's envelope) is not one stored event: null.
    const raw = JSON.parse(text) as unknown;
    if (!EventEnvelopeSchema.safeParse(raw).success) return null;
    return (raw as EventEnvelope).seq === seq ? (raw as EventEnvelope) : null;
  }

  /** The seqs of the log's events within `fromSeq`..`toSeq` that are not of `turnId` (each ends a compaction run). */
  otherEventSeqs(turnId: string, fromSeq: number, toSeq: number): number[] {
    return this.sql
      .exec<{ seq: number }>("SELECT seq FROM events WHERE seq BETWEEN ? AND ? AND (turn_id IS NULL OR turn_id <> ?) ORDER BY seq", fromSeq, toSeq, turnId)
      .toArray()
      .map((r) => r.seq);
  }

  /**
   * Applies a compaction plan: each run's events become its one event at its last seq. Each row
   * holding an event of a run is rewritten once (./log-chunks.ts `compactRows`: a chunk keeps what
   * is left of it, a row left with nothing goes), and no other row: one row written per row
   * touched. A row keeps its upstream id (the execution's cursor, `cursorOf`, is the newest). The
   * caller holds the transaction.
   */
  applyCompaction(runs: readonly { fromSeq: number; toSeq: number; envelope: EventEnvelope }[]): void {
    if (runs.length === 0) return;
    const from = Math.min(...runs.map((r) => r.fromSeq));
    const to = Math.max(...runs.map((r) => r.toSeq));
    // The rows holding seqs from..to: a row is keyed by its last seq, so up to the first at or past `to`.
    const rows = this.sql
      .exec<EventRow>("SELECT seq, type, envelope FROM events WHERE seq >= ? AND seq <= COALESCE((SELECT MIN(seq) FROM events WHERE seq >= ?), ?) ORDER BY seq", from, to, to)
      .toArray();
    const rewrites = compactRows(
      rows,
      runs.map((run) => ({ fromSeq: run.fromSeq, toSeq: run.toSeq, row: { seq: run.toSeq, type: run.envelope.type, envelope: JSON.stringify(run.envelope) } })),
    );
    for (const rewrite of rewrites) {
      if (rewrite.to) this.sql.exec("UPDATE events SET seq = ?, type = ?, envelope = ? WHERE seq = ?", rewrite.to.seq, rewrite.to.type, rewrite.to.envelope, rewrite.seq);
      else this.sql.exec("DELETE FROM events WHERE seq = ?", rewrite.seq);
    }
  }
}
