/**
 * The session object's SQLite schema and its migrations, version by version: each step says why
 * the schema changed. A store opened on an older database migrates it in place, keeping its rows.
 * The typed accessors are ./store.ts.
 */
import { COUNTERS } from "../../schemas/common";

// 11: a turn's record costs two rows to insert and one to change (issue 24).
// 12: a finished turn keeps its answer once, and its compaction is marked on its own row (issue 24).
// 13: a turn that waited in the queue keeps when it was sent, beside when it started (issue 36).
// 14: the workspace's checkpoints, one row each, and the conversation's attachments, the files its
//     uploads wrote into the workspace (issue 40).
// 15: a branch's own workspace, a sandbox forked from a checkpoint (issue 40).
const SCHEMA_VERSION = 15;

/** Unknown provenance for each counter a stored (pre-9) record holds a value of. */
function unknownProvenance(
  values: unknown,
  present: (v: unknown) => boolean = (v) => v !== undefined,
): Record<string, "unknown"> {
  const out: Record<string, "unknown"> = {};
  if (typeof values !== "object" || values === null) return out;
  for (const c of COUNTERS) if (present((values as Record<string, unknown>)[c])) out[c] = "unknown";
  return out;
}

/** A usage fold stored before schema 9, as schema 9 stores it. */
function usageStateV9(state: Record<string, unknown>): Record<string, unknown> {
  return {
    ...state,
    provenance: unknownProvenance(state.cumulative),
    stepsProvenance: unknownProvenance(state.steps),
    receiptProvenance: unknownProvenance(state.receipt),
    modelRequests: null,
    modelRequestsUnknown: false,
    servedModels: [],
    servedModelsRefused: false,
  };
}

/** A turn's usage view stored before schema 9, as schema 9 stores it. */
function usageViewV9(view: Record<string, unknown>): Record<string, unknown> {
  const known = unknownProvenance(view, (v) => v !== undefined && v !== null);
  return {
    ...view,
    provenance: Object.fromEntries(COUNTERS.map((c) => [c, known[c] ?? null])),
    modelRequests: null,
    servedModels: null,
  };
}

/** The `checkpoints` table's columns (./checkpoints.ts), in the fresh schema and its migration step. */
const CHECKPOINTS_COLUMNS = `key TEXT PRIMARY KEY, kind TEXT NOT NULL, turn_id TEXT NOT NULL, environment_id TEXT NOT NULL,
    snapshot_id TEXT, status TEXT NOT NULL, message TEXT, created_at INTEGER NOT NULL, changes_at INTEGER`;

/** The `branch_workspaces` table's columns (./checkpoints.ts). */
const BRANCH_WORKSPACES_COLUMNS = `branch INTEGER PRIMARY KEY, seed_key TEXT NOT NULL, environment TEXT NOT NULL,
    status TEXT NOT NULL, created_at INTEGER NOT NULL`;

/**
 * The schema the migrations below build, written at once for a new conversation (a database with
 * no table yet): one statement list instead of every step's (about 8 ms per new conversation).
 * A test builds a database both ways and compares their tables, columns and indexes
 * (./store.test.ts): a new step is added here too.
 */
const FRESH_SCHEMA = `
  CREATE TABLE schema_version (version INTEGER NOT NULL);
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE turns (
    turn_id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL,
    request_digest TEXT NOT NULL,
    request TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    status TEXT NOT NULL,
    control_ref TEXT,
    upstream_cursor TEXT,
    result_text TEXT,
    error TEXT,
    usage TEXT,
    accepted_seq INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER,
    cancel_reason TEXT,
    lost_at INTEGER,
    parts TEXT,
    parent_turn_id TEXT,
    branch INTEGER NOT NULL DEFAULT 0,
    compacted INTEGER,
    started_at INTEGER
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX turns_ordinal ON turns (ordinal);
  CREATE TABLE events (seq INTEGER PRIMARY KEY, turn_id TEXT, execution_id TEXT, upstream_id TEXT, type TEXT NOT NULL, envelope TEXT NOT NULL);
  CREATE TABLE upstream_seen (
    execution_id TEXT NOT NULL,
    upstream_id TEXT NOT NULL,
    PRIMARY KEY (execution_id, upstream_id)
  ) WITHOUT ROWID;
  CREATE TABLE usage (execution_id TEXT PRIMARY KEY, turn_id TEXT NOT NULL, state TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE operations (operation_id TEXT PRIMARY KEY, kind TEXT NOT NULL, request_digest TEXT NOT NULL, ack TEXT NOT NULL, created_at INTEGER NOT NULL);
  CREATE TABLE interactions (
    interaction_id TEXT PRIMARY KEY,
    turn_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    outcome TEXT,
    answer_hmac TEXT,
    operation_id TEXT,
    created_at INTEGER NOT NULL,
    resolved_at INTEGER
  );
  CREATE TABLE queued_turns (
    turn_id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    request_digest TEXT NOT NULL,
    request TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    state TEXT NOT NULL,
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE branches (branch INTEGER PRIMARY KEY, fork_of INTEGER, at_turn_id TEXT, agent_session_id TEXT NOT NULL, forked INTEGER NOT NULL, created_at INTEGER NOT NULL);
  CREATE TABLE checkpoints (${CHECKPOINTS_COLUMNS}) WITHOUT ROWID;
  CREATE TABLE branch_workspaces (${BRANCH_WORKSPACES_COLUMNS}) WITHOUT ROWID;
  CREATE TABLE attachments (id TEXT PRIMARY KEY, path TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL, media_type TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * Brings the database to SCHEMA_VERSION: a new one (no table of its own yet: the runtime's `_cf_`
 * tables aside) at once, with FRESH_SCHEMA; an older one step by step. `options.fresh` false: by
 * the steps always (the test that compares the two builds).
 */
export function migrateSessionSchema(sql: Pick<SqlStorage, "exec">, options: { fresh?: boolean } = {}): void {
  const found = sql
    .exec<{ tables: number; versioned: number }>(
      "SELECT COUNT(*) AS tables, COALESCE(SUM(name = 'schema_version'), 0) AS versioned FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
    )
    .one();
  if (found.tables === 0 && (options.fresh ?? true)) {
    sql.exec(FRESH_SCHEMA);
    sql.exec("INSERT INTO schema_version (version) VALUES (?)", SCHEMA_VERSION);
    return;
  }
  if (!found.versioned) sql.exec("CREATE TABLE schema_version (version INTEGER NOT NULL)");
  const current = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version ?? 0;
  if (current >= SCHEMA_VERSION) return;
  if (current < 1) {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS turns (
        turn_id TEXT PRIMARY KEY,
        ordinal INTEGER NOT NULL UNIQUE,
        request_digest TEXT NOT NULL,
        request TEXT NOT NULL,
        execution_id TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL,
        control_ref TEXT,
        upstream_cursor TEXT,
        result_text TEXT,
        error TEXT,
        usage TEXT,
        accepted_seq INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        completed_at INTEGER
      );
      CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        turn_id TEXT,
        execution_id TEXT,
        upstream_id TEXT,
        type TEXT NOT NULL,
        envelope TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS events_turn ON events (turn_id, seq);
      CREATE TABLE IF NOT EXISTS upstream_seen (
        execution_id TEXT NOT NULL,
        upstream_id TEXT NOT NULL,
        PRIMARY KEY (execution_id, upstream_id)
      ) WITHOUT ROWID;
    `);
  }
  if (current < 2) {
    // The usage fold of each execution (docs/contracts.md), kept beside the turn it belongs to.
    sql.exec(
      "CREATE TABLE IF NOT EXISTS usage (execution_id TEXT PRIMARY KEY, turn_id TEXT NOT NULL, state TEXT NOT NULL)",
    );
    // Why a cancelled turn was cancelled (the user's reason, or budget_exceeded).
    sql.exec("ALTER TABLE turns ADD COLUMN cancel_reason TEXT");
    // Idempotency of cancel and answer operations: operationId → request digest and acknowledgement.
    sql.exec(
      "CREATE TABLE IF NOT EXISTS operations (operation_id TEXT PRIMARY KEY, kind TEXT NOT NULL, request_digest TEXT NOT NULL, ack TEXT NOT NULL, created_at INTEGER NOT NULL)",
    );
  }
  if (current < 3) {
    // Asks the agent made, and how each ended. Answers are never stored: only a keyed hash of
    // one, to tell the same answer from another.
    sql.exec(`
      CREATE TABLE IF NOT EXISTS interactions (
        interaction_id TEXT PRIMARY KEY,
        turn_id TEXT NOT NULL,
        execution_id TEXT NOT NULL,
        request TEXT NOT NULL,
        status TEXT NOT NULL,
        outcome TEXT,
        answer_hmac TEXT,
        operation_id TEXT,
        created_at INTEGER NOT NULL,
        resolved_at INTEGER
      );
    `);
  }
  if (current < 4) {
    // Meta values became JSON validated per key; the provider's capability document gave way to
    // the claims the provider reads off it (read again at the next turn).
    for (const key of ["title", "environmentId"]) {
      sql.exec("UPDATE meta SET value = json_quote(value) WHERE key = ?", key);
    }
    sql.exec("DELETE FROM meta WHERE key = 'capabilities'");
  }
  if (current < 5) {
    // Since when the running turn's upstream reader could not reach its run (null while it reads).
    sql.exec("ALTER TABLE turns ADD COLUMN lost_at INTEGER");
  }
  if (current < 6) {
    // A finished turn's message parts, kept when trimming the log cuts into the turn's events.
    sql.exec("ALTER TABLE turns ADD COLUMN parts TEXT");
  }
  if (current < 7) {
    // Rows are billed per row written: no AUTOINCREMENT (each insert also wrote sqlite_sequence;
    // the newest event is never trimmed, so MAX(seq) is the high-water mark) and no index by turn
    // (each insert wrote an index row; the transcript reads a turn's events by scanning the log).
    sql.exec(`
      CREATE TABLE events_v7 (seq INTEGER PRIMARY KEY, turn_id TEXT, execution_id TEXT, upstream_id TEXT, type TEXT NOT NULL, envelope TEXT NOT NULL);
      INSERT INTO events_v7 (seq, turn_id, execution_id, upstream_id, type, envelope) SELECT seq, turn_id, execution_id, upstream_id, type, envelope FROM events;
      DROP TABLE events;
      ALTER TABLE events_v7 RENAME TO events;
    `);
  }
  if (current < 8) {
    // Each status change wrote an index row too. The running turn is found by walking the
    // ordinal index from the newest turn, and outstanding asks are few: no query needs these.
    sql.exec("DROP INDEX IF EXISTS turns_status; DROP INDEX IF EXISTS interactions_status;");
    // Tables keyed by text, rebuilt WITHOUT ROWID: a write is one row, not a row and its key's index row.
    sql.exec(`
      CREATE TABLE meta_v8 (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      INSERT INTO meta_v8 (key, value) SELECT key, value FROM meta;
      DROP TABLE meta;
      ALTER TABLE meta_v8 RENAME TO meta;
      CREATE TABLE usage_v8 (execution_id TEXT PRIMARY KEY, turn_id TEXT NOT NULL, state TEXT NOT NULL) WITHOUT ROWID;
      INSERT INTO usage_v8 (execution_id, turn_id, state) SELECT execution_id, turn_id, state FROM usage;
      DROP TABLE usage;
      ALTER TABLE usage_v8 RENAME TO usage;
    `);
  }
  if (current < 9) {
    // The usage fold keeps each figure's provenance, the run's request count and its served
    // models (docs/contracts.md "The usage fold"). A fold stored before recorded none of them:
    // its figures are of unknown provenance (never measured), its count and models unknown.
    for (const row of sql
      .exec<{ execution_id: string; state: string }>("SELECT execution_id, state FROM usage")
      .toArray()) {
      sql.exec(
        "UPDATE usage SET state = ? WHERE execution_id = ?",
        JSON.stringify(usageStateV9(JSON.parse(row.state))),
        row.execution_id,
      );
    }
    for (const row of sql
      .exec<{ turn_id: string; usage: string }>("SELECT turn_id, usage FROM turns WHERE usage IS NOT NULL")
      .toArray()) {
      sql.exec(
        "UPDATE turns SET usage = ? WHERE turn_id = ?",
        JSON.stringify(usageViewV9(JSON.parse(row.usage))),
        row.turn_id,
      );
    }
  }
  if (current < 10) {
    // Turns sent while another runs, waiting their turn (../turn-queue.ts): in order of `position`,
    // each with the digest of the request it was sent with (a retry of that send finds it) and its
    // request as last edited. A row stays as the record of a queued turn that was removed or
    // refused at its start; one that started is in `turns` (its row here marks it `started`).
    sql.exec(`
      CREATE TABLE IF NOT EXISTS queued_turns (
        turn_id TEXT PRIMARY KEY,
        position INTEGER NOT NULL,
        request_digest TEXT NOT NULL,
        request TEXT NOT NULL,
        execution_id TEXT NOT NULL,
        state TEXT NOT NULL,
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) WITHOUT ROWID;
    `);
    // Conversations branch (../turn-tree.ts): each turn follows a parent turn and belongs to a
    // branch (its agent session). Turns stored before were one line: each follows the one before
    // it, in branch 0. A forked branch's origin and agent session are a row of `branches`.
    // (Each column only where it is missing: a database another step rewrote may have it.)
    const columns = sql.exec("SELECT * FROM turns LIMIT 0").columnNames;
    if (!columns.includes("parent_turn_id")) {
      sql.exec("ALTER TABLE turns ADD COLUMN parent_turn_id TEXT");
      sql.exec(
        "UPDATE turns SET parent_turn_id = (SELECT p.turn_id FROM turns p WHERE p.ordinal < turns.ordinal ORDER BY p.ordinal DESC LIMIT 1)",
      );
    }
    if (!columns.includes("branch")) sql.exec("ALTER TABLE turns ADD COLUMN branch INTEGER NOT NULL DEFAULT 0");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS branches (branch INTEGER PRIMARY KEY, fork_of INTEGER, at_turn_id TEXT, agent_session_id TEXT NOT NULL, forked INTEGER NOT NULL, created_at INTEGER NOT NULL)",
    );
  }
  if (current < 11) {
    // Rows are billed per row written: a turn's insert wrote four (the table, its turn_id key's
    // index, and the UNIQUE indexes on ordinal and execution_id), and its start two (execution_id's
    // index). Keyed by turn_id WITHOUT ROWID, with the ordinal index the newest-first walks use: two
    // rows to insert, one to change. An execution id is unique by construction (one per turn, from
    // its request digest) and no query looks a turn up by it.
    sql.exec(`
      CREATE TABLE turns_v11 (
        turn_id TEXT PRIMARY KEY,
        ordinal INTEGER NOT NULL,
        request_digest TEXT NOT NULL,
        request TEXT NOT NULL,
        execution_id TEXT NOT NULL,
        status TEXT NOT NULL,
        control_ref TEXT,
        upstream_cursor TEXT,
        result_text TEXT,
        error TEXT,
        usage TEXT,
        accepted_seq INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        completed_at INTEGER,
        cancel_reason TEXT,
        lost_at INTEGER,
        parts TEXT,
        parent_turn_id TEXT,
        branch INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;
      INSERT INTO turns_v11 (turn_id, ordinal, request_digest, request, execution_id, status, control_ref, upstream_cursor, result_text, error, usage, accepted_seq, created_at, updated_at, completed_at, cancel_reason, lost_at, parts, parent_turn_id, branch)
        SELECT turn_id, ordinal, request_digest, request, execution_id, status, control_ref, upstream_cursor, result_text, error, usage, accepted_seq, created_at, updated_at, completed_at, cancel_reason, lost_at, parts, parent_turn_id, branch FROM turns;
      DROP TABLE turns;
      ALTER TABLE turns_v11 RENAME TO turns;
      CREATE UNIQUE INDEX turns_ordinal ON turns (ordinal);
    `);
  }
  if (current < 12) {
    // `compacted` (../turn-end.ts compactTurn): NULL until an ended turn's events are compacted; 1
    // once they are; 2 once they are and its result is its message's text, which its parts hold:
    // `result_text` is then NULL and the text is read back from the parts (../transcript.ts withAnswer),
    // not kept twice. It replaces the meta mark `compactPending`, a row written at every turn's end
    // and another at its compaction: a turn ended and not compacted is one whose row says NULL.
    // Turns ended before keep their result as stored; those still marked are compacted at start.
    const columns = sql.exec("SELECT * FROM turns LIMIT 0").columnNames;
    if (!columns.includes("compacted")) sql.exec("ALTER TABLE turns ADD COLUMN compacted INTEGER");
    const marked =
      sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'compactPending'").toArray()[0]?.value ?? "[]";
    sql.exec(
      "UPDATE turns SET compacted = 1 WHERE status IN ('completed', 'failed', 'cancelled') AND turn_id NOT IN (SELECT value FROM json_each(?))",
      marked,
    );
    sql.exec("DELETE FROM meta WHERE key = 'compactPending'");
  }
  if (current < 13) {
    // `created_at` is when a turn was sent, `started_at` when it started (NULL: the same). A turn
    // that waited in the queue was recorded with its start as `created_at`: its send is its queue
    // row's `created_at`.
    const columns = sql.exec("SELECT * FROM turns LIMIT 0").columnNames;
    if (!columns.includes("started_at")) sql.exec("ALTER TABLE turns ADD COLUMN started_at INTEGER");
    sql.exec(`
      UPDATE turns SET started_at = created_at, created_at = (SELECT q.created_at FROM queued_turns q WHERE q.turn_id = turns.turn_id)
        WHERE started_at IS NULL AND turn_id IN (SELECT turn_id FROM queued_turns);
    `);
  }
  if (current < 14) {
    // The workspace's checkpoints (../workspace.ts): none were taken before this version.
    sql.exec(`CREATE TABLE IF NOT EXISTS checkpoints (${CHECKPOINTS_COLUMNS}) WITHOUT ROWID`);
    // The files this conversation's uploads wrote into the workspace, by the id each upload
    // answered (./attachments.ts); a new table, nothing to carry over.
    sql.exec(
      "CREATE TABLE IF NOT EXISTS attachments (id TEXT PRIMARY KEY, path TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL, media_type TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID",
    );
  }
  if (current < 15) {
    // A branch's own workspace (../workspace.ts): none were forked before this version.
    sql.exec(`CREATE TABLE IF NOT EXISTS branch_workspaces (${BRANCH_WORKSPACES_COLUMNS}) WITHOUT ROWID`);
  }
  sql.exec("DELETE FROM schema_version");
  sql.exec("INSERT INTO schema_version (version) VALUES (?)", SCHEMA_VERSION);
}

/** Whether the session's tables exist (a conversation was bound here): reading one that does not exist creates none. */
export function schemaExists(sql: Pick<SqlStorage, "exec">): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").toArray().length > 0;
}
