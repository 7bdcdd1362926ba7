/**
 * The session object's storage: one store per group of tables, composed here over one SQL handle
 * that counts the rows written (SQLite rows are billed per row written). The schema and its
 * migrations are ./schema.ts, the record types ./records.ts; every SQL statement is in the table
 * stores:
 *  - ./meta.ts   the `meta` table, one validated value per key;
 *  - ./turns.ts  turns, branches and the queue (a turn's status and lost marker held in memory);
 *  - ./log.ts    the event log with its chunk rows, the held tail (./held-tail.ts) and the
 *                upstream cursors and seen ids, held in memory (a frame costs one statement);
 *  - ./asks.ts   asks and the operations (idempotent cancel and answer commands);
 *  - ./usage.ts  each execution's usage fold;
 *  - ./checkpoints.ts  the workspace's checkpoints (`checkpoints`, used as is by ../workspace.ts).
 *  - ./attachments.ts  the files the conversation's uploads wrote into the workspace.
 * What joins two groups is here: a turn that has not ended reads its usage from its execution's
 * fold, and its view is written on its record when it ends. Everything that belongs together is
 * written in one transactionSync by the caller (../event-log.ts); one that rolls back drops what
 * the stores hold in memory (`discardHeld`).
 */
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { type ExecutionUsageState, executionView } from "../../usage/usage-fold";
import { AskStore } from "./asks";
import { AttachmentStore } from "./attachments";
import { CheckpointStore } from "./checkpoints";
import type { UpdateToHold } from "./held-tail";
import { LogStore } from "./log";
import type { ChunkReads } from "./log-chunks";
import { type MetaKey, MetaStore, type MetaValue } from "./meta";
import {
  type EventEnvelope,
  type EventRow,
  type InteractionStatus,
  type NewEvent,
  type QueueState,
  type StoredBranch,
  type StoredOperation,
  TERMINAL_TURN_STATUSES,
  type TranscriptPart,
  type TurnError,
  type TurnRecord,
  type TurnRequest,
  type TurnStatus,
} from "./records";
import { migrateSessionSchema } from "./schema";
import { TurnStore } from "./turns";
import { UsageStore } from "./usage";

export class SessionStore {
  /** Rows written through this store since it was opened (SQLite rows are billed per row written). */
  rowsWritten = 0;
  /** Of those, the rows turn-end compaction wrote (its DELETEs count, a row each; ../compaction.ts). */
  compactionRowsWritten = 0;
  /** The SQL handle the stores share, counting what it writes. */
  private readonly sql: Pick<SqlStorage, "exec">;
  private readonly metaStore: MetaStore;
  private readonly turnStore: TurnStore;
  private readonly logStore: LogStore;
  private readonly askStore: AskStore;
  private readonly usageStore: UsageStore;
  /** The workspace's checkpoints: one room (../workspace.ts) reads and writes them, so they are used as is. */
  readonly checkpoints: CheckpointStore;
  /** The conversation's attachments (./attachments.ts). */
  readonly attachments: AttachmentStore;

  constructor(sql: SqlStorage) {
    this.sql = {
      exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]) => {
        const cursor = sql.exec<T>(query, ...bindings);
        this.rowsWritten += cursor.rowsWritten;
        return cursor;
      },
    };
    migrateSessionSchema(this.sql);
    this.metaStore = new MetaStore(this.sql);
    this.turnStore = new TurnStore(this.sql);
    this.logStore = new LogStore(this.sql, this.metaStore, this.turnStore);
    this.askStore = new AskStore(this.sql);
    this.usageStore = new UsageStore(this.sql);
    this.checkpoints = new CheckpointStore(this.sql);
    this.attachments = new AttachmentStore(this.sql);
  }

  /**
   * Forgets what is held in memory (the last seq, statuses, lost markers, cursors): a transaction
   * rolled back, so storage is the truth again.
   */
  discardHeld(): void {
    this.logStore.discardHeld();
    this.turnStore.discardHeld();
  }

  // ---- meta (./meta.ts)

  getMeta<K extends MetaKey>(key: K): MetaValue<K> | null {
    return this.metaStore.get(key);
  }

  setMeta<K extends MetaKey>(key: K, value: MetaValue<K>): void {
    this.metaStore.set(key, value);
  }

  // ---- turns, with their usage (./turns.ts, ./usage.ts)

  turn(turnId: string): TurnRecord | null {
    const turn = this.turnStore.turn(turnId);
    return turn ? this.withLiveUsage(turn) : null;
  }

  /** The turn that is pending or running, if any (at most one: turns run one at a time). */
  activeTurn(): TurnRecord | null {
    const turn = this.turnStore.activeTurn();
    return turn ? this.withLiveUsage(turn) : null;
  }

  turns(): TurnRecord[] {
    return this.turnStore.turns().map((turn) => this.withLiveUsage(turn));
  }

  lastTurn(): TurnRecord | null {
    const turn = this.turnStore.lastTurn();
    return turn ? this.withLiveUsage(turn) : null;
  }

  /** A turn record as read: one that has not ended has its usage from its execution's fold (see `putExecutionUsage`). */
  private withLiveUsage(turn: TurnRecord): TurnRecord {
    if (TERMINAL_TURN_STATUSES.has(turn.status)) return turn;
    const fold = this.usageStore.executionUsage(turn.executionId);
    return fold ? { ...turn, usage: executionView(fold) } : turn;
  }

  /**
   * Stores an execution's fold. Its view goes on the turn record once the turn has ended (here, for
   * a report after the end; else with the end, `finishTurn`): while a turn runs, its record's usage
   * is read from the fold (`withLiveUsage`), so a usage report writes one row, not two.
   */
  putExecutionUsage(turnId: string, state: ExecutionUsageState): void {
    this.usageStore.putExecutionUsage(turnId, state);
    const status = this.turnStore.turnStatus(turnId);
    if (status !== null && TERMINAL_TURN_STATUSES.has(status)) this.turnStore.setUsage(turnId, executionView(state));
  }

  /** Ends a turn; its usage view (from its execution's fold) is written with it, in the same row write. */
  finishTurn(
    turnId: string,
    fields: { status: TurnStatus; resultText?: string; error?: TurnError; now: number },
  ): void {
    const executionId = this.turnStore.executionIdOf(turnId);
    const fold = executionId !== undefined ? this.usageStore.executionUsage(executionId) : null;
    this.turnStore.finishTurn(turnId, fields, fold ? executionView(fold) : null);
  }

  executionUsage(executionId: string): ExecutionUsageState | null {
    return this.usageStore.executionUsage(executionId);
  }

  allExecutionUsage(): ExecutionUsageState[] {
    return this.usageStore.allExecutionUsage();
  }

  turnStatus(turnId: string): TurnStatus | null {
    return this.turnStore.turnStatus(turnId);
  }

  endedUncompacted(): string[] {
    return this.turnStore.endedUncompacted();
  }

  markCompacted(turnId: string, answerInParts: boolean): void {
    this.turnStore.markCompacted(turnId, answerInParts);
  }

  upstreamRuns() {
    return this.turnStore.upstreamRuns();
  }

  dispatchedExecutionIds(): string[] {
    return this.turnStore.dispatchedExecutionIds();
  }

  turnCount(): number {
    return this.turnStore.turnCount();
  }

  insertPendingTurn(input: Parameters<TurnStore["insertPendingTurn"]>[0]): void {
    this.turnStore.insertPendingTurn(input);
  }

  treeTurns() {
    return this.turnStore.treeTurns();
  }

  deleteTurn(turnId: string): void {
    this.turnStore.deleteTurn(turnId);
  }

  markRunning(turnId: string, controlRef: AgentExactRunControlRef, acceptedSeq: number, now: number): void {
    this.turnStore.markRunning(turnId, controlRef, acceptedSeq, now);
  }

  markLost(turnId: string, now: number): void {
    this.turnStore.markLost(turnId, now);
  }

  setCancelReason(turnId: string, reason: string): void {
    this.turnStore.setCancelReason(turnId, reason);
  }

  turnsTrimmedBy(seq: number): TurnRecord[] {
    return this.turnStore.turnsTrimmedBy(seq);
  }

  keepParts(turnId: string, parts: TranscriptPart[]): void {
    this.turnStore.keepParts(turnId, parts);
  }

  turnsSize(): { rows: number; bytes: number } {
    return this.turnStore.turnsSize();
  }

  // ---- branches and the queue (./turns.ts)

  branches(): StoredBranch[] {
    return this.turnStore.branches();
  }

  insertBranch(branch: Omit<StoredBranch, "forked">): void {
    this.turnStore.insertBranch(branch);
  }

  markForked(branch: number, agentSessionId: string): void {
    this.turnStore.markForked(branch, agentSessionId);
  }

  markStartedAfresh(branch: number): void {
    this.turnStore.markStartedAfresh(branch);
  }

  queuedTurn(turnId: string) {
    return this.turnStore.queuedTurn(turnId);
  }

  waitingTurns() {
    return this.turnStore.waitingTurns();
  }

  insertQueuedTurn(input: {
    turnId: string;
    requestDigest: string;
    request: TurnRequest;
    executionId: string;
    now: number;
  }): void {
    this.turnStore.insertQueuedTurn(input);
  }

  setQueuedRequest(turnId: string, request: TurnRequest, now: number): void {
    this.turnStore.setQueuedRequest(turnId, request, now);
  }

  setQueuedState(turnId: string, state: QueueState, now: number, error?: TurnError): void {
    this.turnStore.setQueuedState(turnId, state, now, error);
  }

  // ---- asks and operations (./asks.ts)

  operation(operationId: string): StoredOperation | null {
    return this.askStore.operation(operationId);
  }

  putOperation(operationId: string, operation: StoredOperation, now: number): void {
    this.askStore.putOperation(operationId, operation, now);
  }

  interaction(interactionId: string) {
    return this.askStore.interaction(interactionId);
  }

  outstandingInteractions() {
    return this.askStore.outstandingInteractions();
  }

  interactionsOfTurn(turnId: string) {
    return this.askStore.interactionsOfTurn(turnId);
  }

  outstandingOfTurn(turnId: string) {
    return this.askStore.outstandingOfTurn(turnId);
  }

  addInteraction(input: {
    interactionId: string;
    turnId: string;
    executionId: string;
    request: unknown;
    now: number;
  }): boolean {
    return this.askStore.addInteraction(input);
  }

  resolveInteraction(
    interactionId: string,
    fields: { status: InteractionStatus; outcome?: string; answerHmac?: string; operationId?: string; now: number },
  ): void {
    this.askStore.resolveInteraction(interactionId, fields);
  }

  // ---- the event log (./log.ts)

  cursorOf(turnId: string, executionId: string): string | undefined {
    return this.logStore.cursorOf(turnId, executionId);
  }

  admitUpstream(turnId: string, executionId: string, upstreamId: string): boolean {
    return this.logStore.admitUpstream(turnId, executionId, upstreamId);
  }

  admitChildUpdate(turnId: string, executionId: string, sourceEventId: string): boolean {
    return this.logStore.admitChildUpdate(turnId, executionId, sourceEventId);
  }

  settleAdmissions(): void {
    this.logStore.settleAdmissions();
  }

  forgetSeen(executionId: string): void {
    this.logStore.forgetSeen(executionId);
  }

  releaseHeld(executionId: string): void {
    this.logStore.releaseHeld(executionId);
  }

  appendEvent(input: NewEvent): EventRow {
    return this.logStore.appendEvent(input);
  }

  eventsAfter(afterSeq: number, limit: number): EventRow[] {
    return this.logStore.eventsAfter(afterSeq, limit);
  }

  eventsAfterOf(afterSeq: number, limit: number, turnIds: string[]): EventRow[] {
    return this.logStore.eventsAfterOf(afterSeq, limit, turnIds);
  }

  eventsOfTypesAfter(afterSeq: number, types: readonly string[], limit: number): EventEnvelope[] {
    return this.logStore.eventsOfTypesAfter(afterSeq, types, limit);
  }

  eventsOfTurn(turnId: string, reads?: ChunkReads): EventEnvelope[] {
    return this.logStore.eventsOfTurn(turnId, reads);
  }

  lastSeq(): number {
    return this.logStore.lastSeq();
  }

  holdUpdate(input: UpdateToHold): EventRow | null {
    return this.logStore.holdUpdate(input);
  }

  holdsTail(): boolean {
    return this.logStore.holdsTail();
  }

  tailCommitted(): void {
    this.logStore.tailCommitted();
  }

  logSize(): { events: number; rows: number; bytes: number } {
    return this.logStore.logSize();
  }

  firstRetainedSeq(): number | null {
    return this.logStore.firstRetainedSeq();
  }

  trimCutoff(maxEvents: number): number {
    return this.logStore.trimCutoff(maxEvents);
  }

  trimEvents(cutoff: number): number {
    return this.logStore.trimEvents(cutoff);
  }

  lowestHeldCursor(): number | null {
    return this.logStore.lowestHeldCursor();
  }

  storedEvent(seq: number): EventEnvelope | null {
    return this.logStore.storedEvent(seq);
  }

  otherEventSeqs(turnId: string, fromSeq: number, toSeq: number): number[] {
    return this.logStore.otherEventSeqs(turnId, fromSeq, toSeq);
  }

  applyCompaction(
    runs: readonly { fromSeq: number; toSeq: number; envelope: EventEnvelope }[],
    reads?: ChunkReads,
  ): void {
    this.logStore.applyCompaction(runs, reads);
  }
}
