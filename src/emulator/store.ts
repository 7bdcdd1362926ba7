/**
 * The emulator's SQLite state and its typed accessors: sandboxes, executions, frames, asks,
 * counters and settings (faults, variants). Everything that must survive an eviction lives here;
 * nothing here knows HTTP or streams.
 *
 * Over 400 lines on purpose: every SQL statement of the emulator's state is here, one section per
 * table, with the schema and its in-place upgrades, so a change to the state is read in one file.
 */
import { EmulatorFaults } from "./faults";
import { EmulatorVariants } from "./variants";

export interface SandboxRow extends Record<string, SqlStorageValue> {
  id: string;
  idempotency_key: string | null;
  /** The create body, as JSON. */
  body: string;
  status: string;
  readiness: string;
  ready_at: number | null;
  created_at: number;
  error: string | null;
  /** Answers that showed this ready sandbox as "warming" since it last became ready (variant `readiness`). */
  warming_polls: number;
  /** When it last reached running (ms), null before. */
  started_at: number | null;
  /** The last runtime call, create or resume (ms): idleness is measured from it (or from a run's end, if later). */
  last_activity_at: number | null;
}

export interface ExecutionRow extends Record<string, SqlStorageValue> {
  id: string;
  sandbox_id: string;
  session_id: string;
  turn_id: string | null;
  status: string;
  /** The script's input (ScriptInput without answers), as JSON. */
  script_input: string;
  /** Index of the next script frame to emit. */
  step: number;
  /** When the next frame is due (or, while waiting for a person, when the ask expires). */
  next_at: number | null;
  frame_delay_ms: number;
  created_at: number;
  finished_at: number | null;
  final_text: string | null;
  usage: string | null;
  cost: number | null;
  error: string | null;
  /** The dispatch body as received, as JSON. */
  request: string | null;
  /** The ask the run waits for, if any. */
  waiting_for: string | null;
  /** Answers given so far, by interaction id, as JSON. */
  answers: string;
  /** How the run ends on the wire (variant `terminal`, fixed when it started). */
  terminal: string;
}

export interface FrameRow extends Record<string, SqlStorageValue> {
  id: number;
  type: string;
  data: string;
}

export interface AskRow extends Record<string, SqlStorageValue> {
  interaction_id: string;
  execution_id: string;
  session_id: string;
  request: string;
  status: string;
  answer: string | null;
  /** How the ask is answered: `interaction` (the answer route), or `plan-route` (only plan/approve and plan/reject). */
  via: string;
}

export interface SessionSummaryRow extends Record<string, SqlStorageValue> {
  session_id: string;
  running: number;
  updated: number;
}

/** Freezes a parsed setting all the way down: a caller that changed a shared one would change it for every later reader. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export class EmulatorStore {
  /**
   * The settings (faults, variants) as last read or written, parsed and frozen: the runner reads the
   * faults for every frame it sends. This store is the object's only writer of them, so a write
   * (or a reset) here is the only thing that changes them.
   */
  private readonly settings = new Map<string, unknown>();

  constructor(private readonly sql: SqlStorage) {
    this.migrate();
  }

  private migrate(): void {
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS sandboxes (
        id TEXT PRIMARY KEY, idempotency_key TEXT UNIQUE, body TEXT NOT NULL, status TEXT NOT NULL,
        readiness TEXT NOT NULL, ready_at INTEGER, created_at INTEGER NOT NULL, error TEXT,
        warming_polls INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE IF NOT EXISTS executions (
        id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, session_id TEXT NOT NULL, turn_id TEXT,
        status TEXT NOT NULL, script_input TEXT NOT NULL, step INTEGER NOT NULL, next_at INTEGER,
        frame_delay_ms INTEGER NOT NULL, created_at INTEGER NOT NULL, finished_at INTEGER,
        final_text TEXT, usage TEXT, cost REAL, error TEXT, request TEXT,
        waiting_for TEXT, answers TEXT NOT NULL DEFAULT '{}', terminal TEXT NOT NULL DEFAULT 'result+done'
      );
      CREATE TABLE IF NOT EXISTS asks (
        interaction_id TEXT PRIMARY KEY, execution_id TEXT NOT NULL, session_id TEXT NOT NULL,
        request TEXT NOT NULL, status TEXT NOT NULL, answer TEXT, via TEXT NOT NULL DEFAULT 'interaction'
      );
      CREATE INDEX IF NOT EXISTS executions_session ON executions (sandbox_id, session_id);
      -- The clock's two questions, asked on every tick (what is due, when is the next): answered
      -- from the running runs alone, not a scan of every run the emulator ever stored.
      CREATE INDEX IF NOT EXISTS executions_due ON executions (status, next_at);
      CREATE TABLE IF NOT EXISTS frames (
        execution_id TEXT NOT NULL, id INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (execution_id, id)
      );
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS forks (
        sandbox_id TEXT NOT NULL, session_id TEXT NOT NULL, source_session_id TEXT NOT NULL,
        message_id TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (sandbox_id, session_id)
      );
      CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    `);
    // A store an older emulator left behind (a developer's local state) gets the newer columns.
    this.addColumn("sandboxes", "warming_polls", "INTEGER NOT NULL DEFAULT 0");
    this.addColumn("executions", "terminal", "TEXT NOT NULL DEFAULT 'result+done'");
    this.addColumn("asks", "via", "TEXT NOT NULL DEFAULT 'interaction'");
    this.addColumn("sandboxes", "started_at", "INTEGER");
    this.addColumn("sandboxes", "last_activity_at", "INTEGER");
  }

  private addColumn(table: string, column: string, declaration: string): void {
    if (this.sql.exec(`SELECT * FROM ${table} LIMIT 0`).columnNames.includes(column)) return;
    this.sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${declaration}`);
  }

  /** Forgets everything: sandboxes, runs, frames, asks, counters, faults and variants. */
  reset(): void {
    this.settings.clear();
    this.sql.exec(
      "DELETE FROM sandboxes; DELETE FROM executions; DELETE FROM frames; DELETE FROM asks; DELETE FROM counters; DELETE FROM settings; DELETE FROM forks;",
    );
  }

  // ---------------------------------------------------------------- counters

  count(name: string, by = 1): void {
    this.sql.exec(
      "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
      name,
      by,
    );
  }

  counters(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const row of this.sql.exec<{ name: string; value: number }>("SELECT name, value FROM counters"))
      out[row.name] = row.value;
    return out;
  }

  // ---------------------------------------------------------------- settings

  private setting(name: string): unknown {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM settings WHERE name = ?", name).toArray()[0];
    return row ? JSON.parse(row.value) : undefined;
  }

  private setSetting(name: string, value: unknown): void {
    this.settings.delete(name);
    this.sql.exec(
      "INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
      name,
      JSON.stringify(value),
    );
  }

  /** A setting parsed by `parse`, read from SQLite once and kept (frozen) until it is written. */
  private parsedSetting<T>(name: string, parse: (value: unknown) => T): T {
    if (this.settings.has(name)) return this.settings.get(name) as T;
    const value = this.setting(name);
    const parsed = deepFreeze(value === undefined ? ({} as T) : parse(value));
    this.settings.set(name, parsed);
    return parsed;
  }

  faults(): EmulatorFaults {
    return this.parsedSetting("faults", (v) => EmulatorFaults.parse(v));
  }

  setFaults(faults: EmulatorFaults): void {
    this.setSetting("faults", faults);
  }

  variants(): EmulatorVariants {
    return this.parsedSetting("variants", (v) => EmulatorVariants.parse(v));
  }

  setVariants(variants: EmulatorVariants): void {
    this.setSetting("variants", variants);
  }

  // ---------------------------------------------------------------- sandboxes

  /** A sandbox row as stored (deleted ones included). */
  sandbox(id: string): SandboxRow | undefined {
    return this.sql.exec<SandboxRow>("SELECT * FROM sandboxes WHERE id = ?", id).toArray()[0];
  }

  sandboxIdByIdempotencyKey(key: string): string | undefined {
    return this.sql.exec<{ id: string }>("SELECT id FROM sandboxes WHERE idempotency_key = ?", key).toArray()[0]?.id;
  }

  /** Ids of sandboxes not deleted, oldest first. */
  sandboxIds(limit: number, offset: number): string[] {
    return this.sql
      .exec<{ id: string }>(
        "SELECT id FROM sandboxes WHERE status != 'deleted' ORDER BY created_at LIMIT ? OFFSET ?",
        limit,
        offset,
      )
      .toArray()
      .map((r) => r.id);
  }

  insertSandbox(row: {
    id: string;
    idempotencyKey: string | null;
    body: unknown;
    readyAt: number;
    createdAt: number;
  }): void {
    // A key held by a deleted sandbox is freed first, so a create with it makes a new one.
    if (row.idempotencyKey)
      this.sql.exec("UPDATE sandboxes SET idempotency_key = NULL WHERE idempotency_key = ?", row.idempotencyKey);
    this.sql.exec(
      "INSERT INTO sandboxes (id, idempotency_key, body, status, readiness, ready_at, created_at, last_activity_at) VALUES (?, ?, ?, 'provisioning', 'transitioning', ?, ?, ?)",
      row.id,
      row.idempotencyKey,
      JSON.stringify(row.body),
      row.readyAt,
      row.createdAt,
      row.createdAt,
    );
  }

  /** The sandbox was used now (a runtime call, a resume). */
  touchSandbox(id: string, at: number): void {
    this.sql.exec("UPDATE sandboxes SET last_activity_at = ? WHERE id = ?", at, id);
  }

  setSandboxStartedAt(id: string, at: number): void {
    this.sql.exec("UPDATE sandboxes SET started_at = ? WHERE id = ?", at, id);
  }

  /**
   * Ages the sandbox by `ms`, as if that much time had passed for it: its times and its runs'
   * move back by that much (`POST /_emulator/sandboxes/:id/clock`).
   */
  ageSandbox(id: string, ms: number): void {
    this.sql.exec(
      "UPDATE sandboxes SET created_at = created_at - ?, started_at = started_at - ?, last_activity_at = last_activity_at - ?, ready_at = ready_at - ? WHERE id = ?",
      ms,
      ms,
      ms,
      ms,
      id,
    );
    this.sql.exec(
      "UPDATE executions SET created_at = created_at - ?, finished_at = finished_at - ? WHERE sandbox_id = ?",
      ms,
      ms,
      id,
    );
  }

  /** When the sandbox's last run ended (ms), null when none has. */
  lastRunEndedAt(sandboxId: string): number | null {
    return this.sql
      .exec<{ at: number | null }>("SELECT MAX(finished_at) AS at FROM executions WHERE sandbox_id = ?", sandboxId)
      .one().at;
  }

  /** How many sandboxes run now (the account's usage [ours]). */
  runningSandboxCount(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sandboxes WHERE status = 'running'").one().n;
  }

  updateSandbox(
    id: string,
    fields: { status: string; readiness: string; readyAt: number | null; error: string | null },
  ): void {
    this.sql.exec(
      "UPDATE sandboxes SET status = ?, readiness = ?, ready_at = ?, error = ? WHERE id = ?",
      fields.status,
      fields.readiness,
      fields.readyAt,
      fields.error,
      id,
    );
  }

  setSandboxStatus(id: string, status: string): void {
    this.sql.exec("UPDATE sandboxes SET status = ? WHERE id = ?", status, id);
  }

  /** Sets how many answers have shown this sandbox "warming" (0 when it becomes ready again). */
  setWarmingPolls(id: string, polls: number): void {
    this.sql.exec("UPDATE sandboxes SET warming_polls = ? WHERE id = ?", polls, id);
  }

  /** Marks a sandbox deleted and frees its idempotency key. */
  deleteSandbox(id: string): void {
    this.sql.exec("UPDATE sandboxes SET status = 'deleted', idempotency_key = NULL WHERE id = ?", id);
  }

  // ---------------------------------------------------------------- executions

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

  /** A session's executions, newest first. */
  sessionExecutions(sandboxId: string, sessionId: string): ExecutionRow[] {
    return this.sql
      .exec<ExecutionRow>(
        "SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? ORDER BY created_at DESC",
        sandboxId,
        sessionId,
      )
      .toArray();
  }

  sessionSummaries(sandboxId: string): SessionSummaryRow[] {
    return this.sql
      .exec<SessionSummaryRow>(
        "SELECT session_id, MAX(status = 'running') AS running, MAX(created_at) AS updated FROM executions WHERE sandbox_id = ? GROUP BY session_id",
        sandboxId,
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

  countSessionExecutions(sandboxId: string, sessionId: string): number {
    return this.sql
      .exec<{ n: number }>(
        "SELECT COUNT(*) AS n FROM executions WHERE sandbox_id = ? AND session_id = ?",
        sandboxId,
        sessionId,
      )
      .one().n;
  }

  // ---- forks (a session copied from another up to one of its runs)

  forkOf(sandboxId: string, sessionId: string): { source: string; messageId: string } | undefined {
    const row = this.sql
      .exec<{ source_session_id: string; message_id: string }>(
        "SELECT source_session_id, message_id FROM forks WHERE sandbox_id = ? AND session_id = ?",
        sandboxId,
        sessionId,
      )
      .toArray()[0];
    return row ? { source: row.source_session_id, messageId: row.message_id } : undefined;
  }

  insertFork(sandboxId: string, sessionId: string, source: string, messageId: string, now: number): void {
    this.sql.exec(
      "INSERT INTO forks (sandbox_id, session_id, source_session_id, message_id, created_at) VALUES (?, ?, ?, ?, ?)",
      sandboxId,
      sessionId,
      source,
      messageId,
      now,
    );
  }

  /**
   * A session's conversation, oldest first: each run's id and message, a fork's copied runs (up to
   * and including the run it was forked at) before its own.
   */
  sessionHistory(sandboxId: string, sessionId: string, depth = 0): Array<{ executionId: string; message: string }> {
    const fork = depth < 64 ? this.forkOf(sandboxId, sessionId) : undefined;
    let copied: Array<{ executionId: string; message: string }> = [];
    if (fork) {
      const source = this.sessionHistory(sandboxId, fork.source, depth + 1);
      const at = source.findIndex((m) => m.executionId === fork.messageId);
      copied = at < 0 ? [] : source.slice(0, at + 1);
    }
    const own = this.sql
      .exec<{ id: string; script_input: string }>(
        "SELECT id, script_input FROM executions WHERE sandbox_id = ? AND session_id = ? ORDER BY created_at, rowid",
        sandboxId,
        sessionId,
      )
      .toArray()
      .map((r) => ({
        executionId: r.id,
        message: String((JSON.parse(r.script_input) as { message?: unknown }).message ?? ""),
      }));
    return [...copied, ...own];
  }

  /** Forgets a session: its executions, their frames and asks. */
  deleteSession(sandboxId: string, sessionId: string): void {
    this.sql.exec("DELETE FROM forks WHERE sandbox_id = ? AND session_id = ?", sandboxId, sessionId);
    this.sql.exec(
      "DELETE FROM frames WHERE execution_id IN (SELECT id FROM executions WHERE sandbox_id = ? AND session_id = ?)",
      sandboxId,
      sessionId,
    );
    this.sql.exec(
      "DELETE FROM asks WHERE execution_id IN (SELECT id FROM executions WHERE sandbox_id = ? AND session_id = ?)",
      sandboxId,
      sessionId,
    );
    this.sql.exec("DELETE FROM executions WHERE sandbox_id = ? AND session_id = ?", sandboxId, sessionId);
  }

  // ---------------------------------------------------------------- frames

  lastFrameId(executionId: string): number {
    return (
      this.sql
        .exec<{ last: number | null }>("SELECT MAX(id) AS last FROM frames WHERE execution_id = ?", executionId)
        .one().last ?? 0
    );
  }

  insertFrame(executionId: string, id: number, type: string, data: string): void {
    this.sql.exec("INSERT INTO frames (execution_id, id, type, data) VALUES (?, ?, ?, ?)", executionId, id, type, data);
  }

  /** An execution's frames with id ≥ `from`, in order. */
  framesFrom(executionId: string, from: number): FrameRow[] {
    return this.sql
      .exec<FrameRow>(
        "SELECT id, type, data FROM frames WHERE execution_id = ? AND id >= ? ORDER BY id",
        executionId,
        from,
      )
      .toArray();
  }

  framesOfType(executionId: string, type: string): FrameRow[] {
    return this.sql
      .exec<FrameRow>(
        "SELECT id, type, data FROM frames WHERE execution_id = ? AND type = ? ORDER BY id",
        executionId,
        type,
      )
      .toArray();
  }

  // ---------------------------------------------------------------- asks

  /** Records an ask the run now waits for (once: a rebuilt script asks the same ask again). */
  insertAsk(
    interactionId: string,
    executionId: string,
    sessionId: string,
    request: unknown,
    via: "interaction" | "plan-route",
  ): void {
    this.sql.exec(
      "INSERT OR IGNORE INTO asks (interaction_id, execution_id, session_id, request, status, via) VALUES (?, ?, ?, ?, 'outstanding', ?)",
      interactionId,
      executionId,
      sessionId,
      JSON.stringify(request),
      via,
    );
  }

  ask(interactionId: string): AskRow | undefined {
    return this.sql.exec<AskRow>("SELECT * FROM asks WHERE interaction_id = ?", interactionId).toArray()[0];
  }

  resolveAsk(interactionId: string, status: "answered" | "expired", answer: unknown): void {
    this.sql.exec(
      "UPDATE asks SET status = ?, answer = ? WHERE interaction_id = ?",
      status,
      JSON.stringify(answer),
      interactionId,
    );
  }

  /**
   * The outstanding asks of a session in one sandbox, oldest first: those offered as interactions,
   * or (`planRoute`) those too that only the plan routes decide.
   */
  outstandingAsks(sandboxId: string, sessionId: string, planRoute = false): AskRow[] {
    return this.sql
      .exec<AskRow>(
        `SELECT a.* FROM asks a JOIN executions e ON e.id = a.execution_id
         WHERE e.sandbox_id = ? AND a.session_id = ? AND a.status = 'outstanding' ${planRoute ? "" : "AND a.via = 'interaction'"} ORDER BY a.rowid`,
        sandboxId,
        sessionId,
      )
      .toArray();
  }
}
