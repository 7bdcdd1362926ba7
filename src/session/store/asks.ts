/**
 * The session's asks and operations: the `interactions` table (every ask of the agent, how it
 * ended, never an answer's values: only its keyed hash) and the `operations` table (idempotent
 * cancel and answer commands, each with the digest of its command and its acknowledgement).
 */

import { z } from "zod";
import { RestoreAck } from "../../schemas/checkpoints";
import { CancellationAcknowledgement, InteractionAcknowledgement, InteractionRequest } from "../../schemas/contracts";
import type { InteractionRecord, InteractionStatus, StoredOperation } from "./records";

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

export class AskStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  // ---- operations (idempotent cancel and answer commands)

  /** A recorded operation: its kind, the digest (cancel) or keyed hash (answer) of its command, and its acknowledgement. */
  operation(operationId: string): StoredOperation | null {
    const row = this.sql
      .exec<{ kind: string; request_digest: string; ack: string }>(
        "SELECT kind, request_digest, ack FROM operations WHERE operation_id = ?",
        operationId,
      )
      .toArray()[0];
    if (!row) return null;
    const ack = JSON.parse(row.ack) as unknown;
    if (row.kind === "cancel")
      return { kind: "cancel", requestDigest: row.request_digest, ack: CancellationAcknowledgement.parse(ack) };
    if (row.kind === "restore")
      return { kind: "restore", requestDigest: row.request_digest, ack: RestoreAck.parse(ack) };
    return { kind: "answer", requestDigest: row.request_digest, ack: InteractionAcknowledgement.parse(ack) };
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
    const row = this.sql
      .exec<InteractionRow>("SELECT * FROM interactions WHERE interaction_id = ?", interactionId)
      .toArray()[0];
    return row ? toInteraction(row) : null;
  }

  outstandingInteractions(): InteractionRecord[] {
    return this.sql
      .exec<InteractionRow>("SELECT * FROM interactions WHERE status = 'outstanding' ORDER BY created_at")
      .toArray()
      .map(toInteraction);
  }

  /** Every ask of one turn, in the order asked. */
  interactionsOfTurn(turnId: string): InteractionRecord[] {
    return this.sql
      .exec<InteractionRow>("SELECT * FROM interactions WHERE turn_id = ? ORDER BY created_at", turnId)
      .toArray()
      .map(toInteraction);
  }

  /** The turn's outstanding asks, oldest first. */
  outstandingOfTurn(turnId: string): InteractionRecord[] {
    return this.sql
      .exec<InteractionRow>(
        "SELECT * FROM interactions WHERE status = 'outstanding' AND turn_id = ? ORDER BY created_at, rowid",
        turnId,
      )
      .toArray()
      .map(toInteraction);
  }

  /** Records a new ask; false when it was known already. */
  addInteraction(input: {
    interactionId: string;
    turnId: string;
    executionId: string;
    request: unknown;
    now: number;
  }): boolean {
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

  resolveInteraction(
    interactionId: string,
    fields: { status: InteractionStatus; outcome?: string; answerHmac?: string; operationId?: string; now: number },
  ): void {
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
}
