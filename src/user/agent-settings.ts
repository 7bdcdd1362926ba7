/**
 * The user's agent settings (docs/api.md#bring-your-own-key, #mcp-servers, #standing-instructions):
 * model credentials and MCP servers, each under a name a turn gives, their secrets sealed at rest
 * (../lib/seal.ts, bound to the setting's name) and answered to no route, and the standing
 * instructions. What a turn's dispatch needs is opened here for the session object only
 * (`openForTurn`): a name that is gone or disabled is refused with its code.
 */
import { Refusal } from "../errors";
import { seal, unseal } from "../lib/seal";
import type {
  CredentialView,
  InstructionsView,
  McpServerView,
  PutCredentialBody,
  PutMcpServerBody,
  TurnSecrets,
} from "../schemas/agent-settings";
import type { AgentSettingsStore, CredentialRow, McpServerRow } from "./agent-settings-store";

/** How many of each a user may keep. */
const MAX_CREDENTIALS = 20;
const MAX_MCP_SERVERS = 20;

const KEY_SEALED_FOR = "agent-gateway model credential v1";
const AUTH_SEALED_FOR = "agent-gateway mcp server auth v1";

export interface AgentSettingsDeps {
  store: AgentSettingsStore;
  transaction<T>(fn: () => T): T;
  /** The key that seals secrets at rest (the server's SESSION_ID_SECRET). */
  sealingSecret(): string;
  now(): number;
}

const iso = (ms: number) => new Date(ms).toISOString();

function credentialView(row: CredentialRow): CredentialView {
  return {
    name: row.name,
    provider: row.provider,
    baseUrl: row.baseUrl,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

function mcpView(row: McpServerRow): McpServerView {
  return {
    name: row.name,
    url: row.url,
    authHeader: row.authHeader,
    enabled: row.enabled,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

export class AgentSettings {
  constructor(private readonly deps: AgentSettingsDeps) {}

  credentials(): CredentialView[] {
    return this.deps.store.credentials().map(credentialView);
  }

  /** Creates the credential, or replaces its key (a rotation: turns naming it go on without conflict). */
  async putCredential(name: string, body: PutCredentialBody): Promise<CredentialView & { created: boolean }> {
    const sealedKey = await seal(this.deps.sealingSecret(), KEY_SEALED_FOR, `credential:${name}`, body.key);
    return this.deps.transaction(() => {
      const { store } = this.deps;
      const known = store.credential(name);
      if (!known && store.credentials().length >= MAX_CREDENTIALS)
        throw new Refusal("settings_full", `at most ${MAX_CREDENTIALS} credentials; delete one first`);
      const now = this.deps.now();
      const row = {
        name,
        provider: body.provider,
        baseUrl: body.baseUrl ?? null,
        sealedKey,
        createdAt: known?.createdAt ?? now,
        updatedAt: now,
      };
      store.putCredential(row);
      return { ...credentialView(row), created: !known };
    });
  }

  deleteCredential(name: string): boolean {
    return this.deps.store.deleteCredential(name);
  }

  mcpServers(): McpServerView[] {
    return this.deps.store.mcpServers().map(mcpView);
  }

  /**
   * Creates the server, or replaces it: its auth replaced when given, removed when null, kept when
   * omitted (the page never holds it, so turning a server off must not drop it). `url` is checked by the caller.
   */
  async putMcpServer(name: string, body: PutMcpServerBody): Promise<McpServerView & { created: boolean }> {
    const sealedAuth = body.auth
      ? await seal(this.deps.sealingSecret(), AUTH_SEALED_FOR, `mcp:${name}`, body.auth.value)
      : null;
    return this.deps.transaction(() => {
      const { store } = this.deps;
      const known = store.mcpServers().find((s) => s.name === name);
      if (!known && store.mcpServers().length >= MAX_MCP_SERVERS)
        throw new Refusal("settings_full", `at most ${MAX_MCP_SERVERS} MCP servers; delete one first`);
      const now = this.deps.now();
      const keep = body.auth === undefined && known !== undefined;
      const row = {
        name,
        url: body.url,
        authHeader: keep ? known.authHeader : (body.auth?.header ?? null),
        sealedAuth: keep ? known.sealedAuth : sealedAuth,
        enabled: body.enabled ?? true,
        createdAt: known?.createdAt ?? now,
        updatedAt: now,
      };
      store.putMcpServer(row);
      return { ...mcpView(row), created: !known };
    });
  }

  deleteMcpServer(name: string): boolean {
    return this.deps.store.deleteMcpServer(name);
  }

  instructions(): InstructionsView {
    const row = this.deps.store.instructions();
    return { text: row?.text ?? "", updatedAt: row ? iso(row.updatedAt) : null };
  }

  putInstructions(text: string): InstructionsView {
    this.deps.store.putInstructions(text, this.deps.now());
    return this.instructions();
  }

  /** Whether each named setting exists and may be used (a turn is refused before anything is stored otherwise). */
  check(credential: string | undefined, mcpServers: readonly string[] | undefined): void {
    if (credential !== undefined && !this.deps.store.credential(credential))
      throw new Refusal(
        "credential_not_found",
        `no model credential named ${credential} (PUT /v1/credentials/${credential})`,
        {
          field: "credential",
        },
      );
    if (mcpServers && mcpServers.length > 0) {
      const known = new Map(this.deps.store.mcpServers().map((s) => [s.name, s]));
      for (const name of mcpServers) {
        const server = known.get(name);
        if (!server)
          throw new Refusal("mcp_server_not_found", `no MCP server named ${name} (PUT /v1/mcp-servers/${name})`, {
            field: "mcpServers",
          });
        if (!server.enabled)
          throw new Refusal("mcp_server_disabled", `the MCP server ${name} is disabled; enable it or leave it out`, {
            field: "mcpServers",
          });
      }
    }
  }

  /** What a turn's dispatch needs, opened: the named credential's key, the named servers with their auth, the instructions. */
  async openForTurn(credential: string | undefined, mcpServers: readonly string[] | undefined): Promise<TurnSecrets> {
    this.check(credential, mcpServers);
    const secret = this.deps.sealingSecret();
    const out: TurnSecrets = {};
    if (credential !== undefined) {
      const row = this.deps.store.credential(credential)!;
      const key = await unseal(secret, KEY_SEALED_FOR, `credential:${row.name}`, row.sealedKey);
      out.credential = {
        name: row.name,
        provider: row.provider,
        key,
        ...(row.baseUrl ? { baseUrl: row.baseUrl } : {}),
      };
    }
    if (mcpServers && mcpServers.length > 0) {
      const rows = new Map(this.deps.store.mcpServers().map((s) => [s.name, s]));
      out.mcpServers = await Promise.all(
        mcpServers.map(async (name) => {
          const row = rows.get(name)!;
          const value =
            row.sealedAuth && row.authHeader
              ? await unseal(secret, AUTH_SEALED_FOR, `mcp:${row.name}`, row.sealedAuth)
              : null;
          return { name, url: row.url, ...(value !== null ? { headers: { [row.authHeader!]: value } } : {}) };
        }),
      );
    }
    const instructions = this.deps.store.instructions();
    if (instructions) out.instructions = instructions.text;
    return out;
  }

  forgetAll(): void {
    this.deps.store.forgetAll();
  }
}
