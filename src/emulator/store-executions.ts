/**
 * The emulator's `executions`: each run a dispatch started, found by id or by its turn, moved on
 * by the runner's clock (its script step, when its next frame is due, the ask it waits for, the
 * answers given), and ended with its receipt; a run's end cancels its outstanding asks.
 */
import type { ExecutionRow } from "./store-schema";

export class ExecutionStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  execution(id: string): ExecutionRow | undefined {
    return this.sql.exec<ExecutionRow>("SELECT * FROM executions WHERE id = ?", id).toArray()[0];
  }

  executionByTurn(sandboxId: string, sessionId: string, turnId: string): ExecutionRow | undefined {
    return this.sql
      .exec<ExecutionRow>(
        "SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND turn_id = ?",
        sandboxId,
        sessionId,
        turnId,
      )
      .toArray()[0];
  }

  /** A finished execution of a turn (the completed-turn route). */
  finishedExecutionByTurn(sandboxId: string, sessionId: string, turnId: string): ExecutionRow | undefined {
    return this.sql
      .exec<ExecutionRow>(
        "SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND turn_id = ? AND status != 'running'",
        sandboxId,
        sessionId,
        turnId,
      )
      .toArray()[0];
  }

  runningExecutions(sandboxId: string, sessionId?: string): ExecutionRow[] {
    return sessionId === undefined
      ? this.sql
          .exec<ExecutionRow>("SELECT * FROM executions WHERE sandbox_id = ? AND status = 'running'", sandboxId)
          .toArray()
      : this.sql
          .exec<ExecutionRow>(
            "SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND status = 'running'",
            sandboxId,
            sessionId,
          )
          .toArray();
  }

  /** Running executions with a frame (or an ask's expiry) due by `now`. */
  dueExecutions(now: number): ExecutionRow[] {
    return this.sql
      .exec<ExecutionRow>(
        "SELECT * FROM executions WHERE status = 'running' AND next_at IS NOT NULL AND next_at <= ?",
        now,
      )
      .toArray();
  }

  /** The earliest time any running execution has something due, or null. */
  nextDueAt(): number | null {
    return this.sql
      .exec<{ next: number | null }>("SELECT MIN(next_at) AS next FROM executions WHERE status = 'running'")
      .one().next;
  }

  insertExecution(row: {
    id: string;
    sandboxId: string;
    sessionId: string;
    turnId: string | null;
    scriptInput: unknown;
    nextAt: number;
    frameDelayMs: number;
    createdAt: number;
    request: unknown;
    terminal: string;
  }): ExecutionRow {
    this.sql.exec(
      `INSERT INTO executions (id, sandbox_id, session_id, turn_id, status, script_input, step, next_at, frame_delay_ms, created_at, request, terminal)
       VALUES (?, ?, ?, ?, 'running', ?, 0, ?, ?, ?, ?, ?)`,
      row.id,
      row.sandboxId,
      row.sessionId,
      row.turnId,
      JSON.stringify(row.scriptInput),
      row.nextAt,
      row.frameDelayMs,
      row.createdAt,
      JSON.stringify(row.request),
      row.terminal,
    );
    return this.execution(row.id)!;
  }

  /** Moves a run on: the next script step and when it is due, and the ask it now waits for, if any. */
  setProgress(id: string, step: number, nextAt: number | null, waitingFor?: string): void {
    if (waitingFor === undefined)
      this.sql.exec("UPDATE executions SET step = ?, next_at = ? WHERE id = ?", step, nextAt, id);
    else
      this.sql.exec(
        "UPDATE executions SET step = ?, next_at = ?, waiting_for = ? WHERE id = ?",
        step,
        nextAt,
        waitingFor,
        id,
      );
  }

  setReceipt(id: string, finalText: string | null, usage: unknown, cost: number | null): void {
    this.sql.exec(
      "UPDATE executions SET final_text = ?, usage = ?, cost = ? WHERE id = ?",
      finalText,
      usage === undefined ? null : JSON.stringify(usage),
      cost,
      id,
    );
  }

  /** Records an answer and lets the run go on at `nextAt`. */
  setAnswers(id: string, answers: unknown, nextAt: number): void {
    this.sql.exec(
      "UPDATE executions SET answers = ?, waiting_for = NULL, next_at = ? WHERE id = ?",
      JSON.stringify(answers),
      nextAt,
      id,
    );
  }

  /** Ends a run; fields already recorded are kept unless given. Its outstanding asks are cancelled. */
  finishExecution(
    id: string,
    status: string,
    fields: { finalText?: string; usage?: unknown; cost?: number; error?: string },
  ): void {
    this.sql.exec(
      "UPDATE executions SET status = ?, next_at = NULL, finished_at = ?, final_text = COALESCE(?, final_text), usage = COALESCE(?, usage), cost = COALESCE(?, cost), error = COALESCE(?, error) WHERE id = ?",
      status,
      Date.now(),
      fields.finalText ?? null,
      fields.usage === undefined ? null : JSON.stringify(fields.usage),
      fields.cost ?? null,
      fields.error ?? null,
      id,
    );
    this.sql.exec("UPDATE asks SET status = 'cancelled' WHERE execution_id = ? AND status = 'outstanding'", id);
  }
}
