/**
 * An agent session of a sandbox, as its runs (`executions`) seen together: its runs, its state and
 * the summaries of the list route, its conversation (a fork's copied runs before its own), where a
 * fork was copied from (`forks`), and its deletion with its runs, their frames and asks.
 */
import type { ExecutionRow, SessionSummaryRow } from "./store-schema";

/** Where a sandbox created from a snapshot came from: its source, and when the snapshot was taken. */
export type SandboxOrigin = (sandboxId: string) => { sandboxId: string; takenAt: number } | undefined;

export class AgentSessionStore {
  /**
   * `origin`: a sandbox created from a snapshot holds its source's agent sessions as they were
   * when the snapshot was taken (the agent keeps them under its home, the workspace's root).
   */
  constructor(
    private readonly sql: Pick<SqlStorage, "exec">,
    private readonly origin: SandboxOrigin = () => undefined,
  ) {}

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
    // A session this sandbox got with the snapshot it was created from: its runs up to then.
    const origin = !fork && depth < 64 ? this.origin(sandboxId) : undefined;
    if (origin) {
      const inherited = this.sql
        .exec<{ id: string }>(
          "SELECT id FROM executions WHERE sandbox_id = ? AND created_at <= ?",
          origin.sandboxId,
          origin.takenAt,
        )
        .toArray()
        .map((r) => r.id);
      const before = this.sessionHistory(origin.sandboxId, sessionId, depth + 1).filter((m) =>
        inherited.includes(m.executionId),
      );
      copied = [...before, ...copied];
    }
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
}
