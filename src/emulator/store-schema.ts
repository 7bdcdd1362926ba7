/**
 * The emulator's tables: a row type for each, the schema, and its in-place upgrades (a store an
 * older emulator left behind gets the newer columns, keeping its rows). A change to the shape of
 * the state is made here; the statements that read and write the rows are the table stores that
 * ./store.ts composes.
 */

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

/** Creates the tables the store does not have yet, and the columns an older emulator's tables lack. */
export function migrateEmulatorSchema(sql: Pick<SqlStorage, "exec">): void {
  sql.exec(`
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
    CREATE TABLE IF NOT EXISTS tree_files (
      owner TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT NULL,
      PRIMARY KEY (owner, path)
    );
    CREATE TABLE IF NOT EXISTS tree_chunks (
      owner TEXT NOT NULL, path TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL,
      PRIMARY KEY (owner, path, idx)
    );
    CREATE TABLE IF NOT EXISTS snapshots (
      id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, created_at INTEGER NOT NULL, tags TEXT NOT NULL,
      size_bytes INTEGER NOT NULL, idempotency_key TEXT, request_digest TEXT
    );
    CREATE UNIQUE INDEX IF NOT EXISTS snapshots_key ON snapshots (sandbox_id, idempotency_key);
    CREATE TABLE IF NOT EXISTS restores (
      operation_id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, snapshot_id TEXT NOT NULL, restored_at INTEGER NOT NULL
    );
  `);
  // A store an older emulator left behind (a developer's local state) gets the newer columns.
  addColumn(sql, "sandboxes", "warming_polls", "INTEGER NOT NULL DEFAULT 0");
  addColumn(sql, "executions", "terminal", "TEXT NOT NULL DEFAULT 'result+done'");
  addColumn(sql, "asks", "via", "TEXT NOT NULL DEFAULT 'interaction'");
  addColumn(sql, "sandboxes", "started_at", "INTEGER");
  addColumn(sql, "sandboxes", "last_activity_at", "INTEGER");
}

function addColumn(sql: Pick<SqlStorage, "exec">, table: string, column: string, declaration: string): void {
  if (sql.exec(`SELECT * FROM ${table} LIMIT 0`).columnNames.includes(column)) return;
  sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${declaration}`);
}

/** Empties every table: sandboxes, runs, frames, asks, forks, counters, settings, files and snapshots. */
export function clearEmulatorTables(sql: Pick<SqlStorage, "exec">): void {
  sql.exec(
    "DELETE FROM sandboxes; DELETE FROM executions; DELETE FROM frames; DELETE FROM asks; DELETE FROM counters; DELETE FROM settings; DELETE FROM forks;",
  );
  sql.exec("DELETE FROM tree_files; DELETE FROM tree_chunks; DELETE FROM snapshots; DELETE FROM restores;");
}
