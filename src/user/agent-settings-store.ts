/**
 * The user's agent settings as stored (docs/api.md#bring-your-own-key and the sections after it):
 * `credentials` (model keys, sealed), `mcp_servers` (their auth header's value sealed) and
 * `instructions` (one row). Typed records in and out; sealing is the room's (./agent-settings.ts).
 */

export interface CredentialRow {
  name: string;
  provider: string;
  baseUrl: string | null;
  sealedKey: string;
  createdAt: number;
  updatedAt: number;
}

export interface McpServerRow {
  name: string;
  url: string;
  /** The auth header's name (its value is sealed); null: none. */
  authHeader: string | null;
  sealedAuth: string | null;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

export class AgentSettingsStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  credentials(): CredentialRow[] {
    return this.sql
      .exec<{
        name: string;
        provider: string;
        base_url: string | null;
        sealed_key: string;
        created_at: number;
        updated_at: number;
      }>("SELECT * FROM credentials ORDER BY name")
      .toArray()
      .map((r) => ({
        name: r.name,
        provider: r.provider,
        baseUrl: r.base_url,
        sealedKey: r.sealed_key,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      }));
  }

  credential(name: string): CredentialRow | null {
    return this.credentials().find((c) => c.name === name) ?? null;
  }

  putCredential(row: CredentialRow): void {
    this.sql.exec(
      `INSERT INTO credentials (name, provider, base_url, sealed_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET provider = excluded.provider, base_url = excluded.base_url,
         sealed_key = excluded.sealed_key, updated_at = excluded.updated_at`,
      row.name,
      row.provider,
      row.baseUrl,
      row.sealedKey,
      row.createdAt,
      row.updatedAt,
    );
  }

  deleteCredential(name: string): boolean {
    return this.sql.exec("DELETE FROM credentials WHERE name = ?", name).rowsWritten > 0;
  }

  mcpServers(): McpServerRow[] {
    return this.sql
      .exec<{
        name: string;
        url: string;
        auth_header: string | null;
        sealed_auth: string | null;
        enabled: number;
        created_at: number;
        updated_at: number;
      }>("SELECT * FROM mcp_servers ORDER BY name")
      .toArray()
      .map((r) => ({
        name: r.name,
        url: r.url,
        authHeader: r.auth_header,
        sealedAuth: r.sealed_auth,
        enabled: r.enabled === 1,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      }));
  }

  putMcpServer(row: McpServerRow): void {
    this.sql.exec(
      `INSERT INTO mcp_servers (name, url, auth_header, sealed_auth, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET url = excluded.url, auth_header = excluded.auth_header,
         sealed_auth = excluded.sealed_auth, enabled = excluded.enabled, updated_at = excluded.updated_at`,
      row.name,
      row.url,
      row.authHeader,
      row.sealedAuth,
      row.enabled ? 1 : 0,
      row.createdAt,
      row.updatedAt,
    );
  }

  deleteMcpServer(name: string): boolean {
    return this.sql.exec("DELETE FROM mcp_servers WHERE name = ?", name).rowsWritten > 0;
  }

  instructions(): { text: string; updatedAt: number } | null {
    const row = this.sql
      .exec<{ text: string; updated_at: number }>("SELECT text, updated_at FROM instructions WHERE id = 1")
      .toArray()[0];
    return row ? { text: row.text, updatedAt: row.updated_at } : null;
  }

  putInstructions(text: string, now: number): void {
    if (text === "") this.sql.exec("DELETE FROM instructions WHERE id = 1");
    else
      this.sql.exec(
        "INSERT INTO instructions (id, text, updated_at) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
        text,
        now,
      );
  }

  /** Every setting forgotten (the account's deletion). */
  forgetAll(): void {
    this.sql.exec("DELETE FROM credentials");
    this.sql.exec("DELETE FROM mcp_servers");
    this.sql.exec("DELETE FROM instructions");
  }
}
