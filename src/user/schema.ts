/**
 * The user object's SQLite schema and its migrations, version by version: the one place a change
 * of the user's tables is made. What reads and writes them: ./store.ts (the environment, the
 * create ledger, the conversation index and what deleted conversations spent),
 * ./account-store.ts (what the gateway did to the sandbox, the deletion record, the admissions)
 * ./webhook-store.ts (endpoints and deliveries) and ./terminals.ts (the user's terminals).
 */

/** The schema this code reads and writes. */
const CURRENT = 12;

/** v6 (issue 22, the sandbox's life): what the gateway did to the user's environment, and the durable record of an account's deletion. */
const ACCOUNT_TABLES_V6 = [
  "CREATE TABLE IF NOT EXISTS environment_actions (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, action TEXT NOT NULL, environment_id TEXT NOT NULL, detail TEXT)",
  `CREATE TABLE IF NOT EXISTS account_deletion (
     id INTEGER PRIMARY KEY CHECK (id = 1), user_id TEXT, began_at INTEGER NOT NULL, step TEXT NOT NULL,
     conversations_deleted INTEGER NOT NULL DEFAULT 0, last_error TEXT, finished_at INTEGER
   )`,
];

/** v8: webhook endpoints and their deliveries (the outbox and the delivery log in one table). */
const WEBHOOK_TABLES_SQL = `
  CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT NOT NULL, description TEXT, link_origin TEXT NOT NULL,
    secret TEXT NOT NULL, previous_secret TEXT, previous_expires_at INTEGER, secret_rotated_at INTEGER, created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS webhook_deliveries (
    webhook_id TEXT PRIMARY KEY, endpoint_id TEXT NOT NULL, event_key TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL, created_at INTEGER NOT NULL, last_attempt_at INTEGER, next_attempt_at INTEGER,
    delivered_at INTEGER, given_up_at INTEGER, last_status INTEGER, last_error TEXT,
    UNIQUE (endpoint_id, event_key)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
`;

/** v10: the conversations the live account admitted (each with its session bound, its first turn under way or done). */
const ACCOUNT_TABLES_V10 = [
  "CREATE TABLE IF NOT EXISTS admissions (conversation_id TEXT PRIMARY KEY)",
  // Every conversation listed before was admitted.
  "INSERT OR IGNORE INTO admissions (conversation_id) SELECT conversation_id FROM conversations",
];

/** v11: the user's model credentials, MCP servers and standing instructions (./agent-settings-store.ts). */
const AGENT_SETTINGS_TABLES_SQL = `
  CREATE TABLE IF NOT EXISTS credentials (
    name TEXT PRIMARY KEY, provider TEXT NOT NULL, base_url TEXT, sealed_key TEXT NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS mcp_servers (
    name TEXT PRIMARY KEY, url TEXT NOT NULL, auth_header TEXT, sealed_auth TEXT, enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS instructions (id INTEGER PRIMARY KEY CHECK (id = 1), text TEXT NOT NULL, updated_at INTEGER NOT NULL);
`;

/** Brings the user object's tables to the current schema (nothing when they are). */
export function migrateUserSchema(sql: Pick<SqlStorage, "exec">): void {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const current = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version ?? 0;
  if (current >= CURRENT) return;
  if (current < 5) migrateToV5(sql, current);
  // v6 (issue 22, the sandbox's life): what the gateway did to the user's environment, and the
  // durable record of an account's deletion (./account-store.ts).
  if (current < 6) for (const statement of ACCOUNT_TABLES_V6) sql.exec(statement);
  // v7: the branch each conversation shows (docs/api.md#branches); before, every one showed its only
  // line, branch 0.
  if (current < 7) sql.exec("ALTER TABLE conversations ADD COLUMN branch INTEGER NOT NULL DEFAULT 0");
  // v8: webhook endpoints and their deliveries (the outbox and the delivery log in one table).
  if (current < 8) sql.exec(WEBHOOK_TABLES_SQL);
  // v9: whether the user renamed the conversation (README.md#public-api-v1, PATCH /v1/conversations/:cid):
  // a renamed title is the user's, and no touch of the session's (one in flight from before the
  // rename included) writes over it.
  if (current < 9) sql.exec("ALTER TABLE conversations ADD COLUMN renamed INTEGER NOT NULL DEFAULT 0");
  // v10: the conversations the live account admitted, the account deletion's fence (./account.ts).
  if (current < 10) for (const statement of ACCOUNT_TABLES_V10) sql.exec(statement);
  // v11: the agent each conversation runs (docs/api.md#choosing-the-agent), as JSON; null: not known yet;
  // and the user's agent settings (./agent-settings-store.ts): model keys and MCP servers' auth sealed.
  if (current < 11) {
    sql.exec("ALTER TABLE conversations ADD COLUMN agent TEXT");
    sql.exec(AGENT_SETTINGS_TABLES_SQL);
  }
  // v12: the user's terminals (./terminals.ts): where each lives upstream, never what it showed.
  if (current < 12)
    sql.exec(
      "CREATE TABLE IF NOT EXISTS terminals (terminal_id TEXT PRIMARY KEY, kind TEXT NOT NULL, conversation_id TEXT, environment_id TEXT NOT NULL, connection_id TEXT NOT NULL, generation INTEGER, created_at INTEGER NOT NULL)",
    );
  sql.exec("DELETE FROM schema_version");
  sql.exec(`INSERT INTO schema_version (version) VALUES (${CURRENT})`);
}

function migrateToV5(sql: Pick<SqlStorage, "exec">, current: number): void {
  if (current < 2) migrateToV2(sql);
  // v3: how many times each conversation id was deleted: a conversation id used again talks to a
  // new agent session, never the old agent's memory.
  sql.exec("CREATE TABLE IF NOT EXISTS incarnations (conversation_id TEXT PRIMARY KEY, deletions INTEGER NOT NULL)");
  // v4: what deleted conversations spent: spend is the user's, kept when conversations go.
  sql.exec(
    "CREATE TABLE IF NOT EXISTS deleted_spend (id INTEGER PRIMARY KEY CHECK (id = 1), used_tokens INTEGER NOT NULL, incomplete INTEGER NOT NULL)",
  );
  // v5: the create ledger: the highest generation whose sandbox create was sent, and the highest
  // whose bring-up failed (a create proves it made a sandbox only under a key never sent before).
  sql.exec(
    "CREATE TABLE IF NOT EXISTS create_ledger (id INTEGER PRIMARY KEY CHECK (id = 1), sent INTEGER NOT NULL, failed INTEGER NOT NULL)",
  );
  if (current < 5) {
    // v5: where each conversation's spend comes from (measured, estimated, unknown), so a user's
    // budget says when it counts estimates. Spend recorded before was not told apart: unknown.
    sql.exec("ALTER TABLE conversations ADD COLUMN usage_provenance TEXT NOT NULL DEFAULT 'unknown'");
    sql.exec("ALTER TABLE deleted_spend ADD COLUMN provenance TEXT NOT NULL DEFAULT 'unknown'");
  }
  // v5: what each conversation's running turn waits for (an open ask), null when nothing.
  sql.exec("ALTER TABLE conversations ADD COLUMN waiting_for TEXT");
}

function migrateToV2(sql: Pick<SqlStorage, "exec">): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS environment (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS conversations (
      conversation_id TEXT PRIMARY KEY, title TEXT NOT NULL, state TEXT NOT NULL,
      last_event_id INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at DESC);
  `);
  // v2: what each conversation spent, for the per-user token budget.
  sql.exec("ALTER TABLE conversations ADD COLUMN used_tokens INTEGER NOT NULL DEFAULT 0");
  sql.exec("ALTER TABLE conversations ADD COLUMN usage_complete INTEGER NOT NULL DEFAULT 1");
}
