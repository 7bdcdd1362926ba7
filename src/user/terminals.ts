/**
 * The user's terminals (docs/api.md#terminals): which ids they have, of which kind, and where each
 * lives upstream (its sandbox and the connection id the gateway chose, never the user's). The table
 * bounds how many a user has; nothing of a terminal's content is here.
 */
import { Refusal } from "../errors";

export interface TerminalRow {
  terminalId: string;
  kind: "shell" | "agent";
  conversationId: string | null;
  environmentId: string;
  connectionId: string;
  /** The control generation an agent's UI is driven under; null for a shell. */
  generation: number | null;
  createdAt: number;
}

type Row = {
  terminal_id: string;
  kind: string;
  conversation_id: string | null;
  environment_id: string;
  connection_id: string;
  generation: number | null;
  created_at: number;
};

const rowOf = (r: Row): TerminalRow => ({
  terminalId: r.terminal_id,
  kind: r.kind === "agent" ? "agent" : "shell",
  conversationId: r.conversation_id,
  environmentId: r.environment_id,
  connectionId: r.connection_id,
  generation: r.generation,
  createdAt: r.created_at,
});

export class TerminalIndex {
  constructor(private readonly sql: SqlStorage) {}

  list(): TerminalRow[] {
    return this.sql.exec<Row>("SELECT * FROM terminals ORDER BY created_at, terminal_id").toArray().map(rowOf);
  }

  get(terminalId: string): TerminalRow | null {
    const row = this.sql.exec<Row>("SELECT * FROM terminals WHERE terminal_id = ?", terminalId).toArray()[0];
    return row ? rowOf(row) : null;
  }

  /**
   * The terminal `wanted.terminalId`, registered if new (at most `max`, else 429
   * `terminal_limit_reached` naming the user's terminals) or moved to `wanted.environmentId` (a
   * sandbox replaced since: its PTY went with the old one, so a new connection id); `created` when
   * this call registered it (a failed first attach forgets it again).
   */
  register(
    wanted: Omit<TerminalRow, "createdAt">,
    max: number,
    now: number,
  ): { terminal: TerminalRow; created: boolean } {
    const existing = this.get(wanted.terminalId);
    if (existing) {
      if (existing.kind !== wanted.kind)
        throw new Refusal("terminal_not_found", `terminal ${wanted.terminalId} is not a ${wanted.kind} terminal`);
      const moved =
        existing.environmentId !== wanted.environmentId ||
        existing.connectionId !== wanted.connectionId ||
        existing.generation !== wanted.generation;
      if (!moved) return { terminal: existing, created: false };
      this.sql.exec(
        "UPDATE terminals SET environment_id = ?, connection_id = ?, generation = ? WHERE terminal_id = ?",
        wanted.environmentId,
        wanted.connectionId,
        wanted.generation,
        wanted.terminalId,
      );
      return { terminal: { ...existing, ...wanted }, created: false };
    }
    const held = this.list();
    if (held.length >= max)
      throw new Refusal(
        "terminal_limit_reached",
        `at most ${max} terminals are open at once: delete one (DELETE /v1/environment/terminals/:tid)`,
        { max, terminals: held.map((t) => t.terminalId) },
      );
    this.sql.exec(
      "INSERT INTO terminals (terminal_id, kind, conversation_id, environment_id, connection_id, generation, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      wanted.terminalId,
      wanted.kind,
      wanted.conversationId,
      wanted.environmentId,
      wanted.connectionId,
      wanted.generation,
      now,
    );
    return { terminal: { ...wanted, createdAt: now }, created: true };
  }

  forget(terminalId: string): void {
    this.sql.exec("DELETE FROM terminals WHERE terminal_id = ?", terminalId);
  }

  forgetAll(): void {
    this.sql.exec("DELETE FROM terminals");
  }
}
