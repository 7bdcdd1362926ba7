/**
 * The emulator's `asks`: what a run asked a person (an interaction, or a plan only the plan routes
 * decide), outstanding until it is answered, expires or its run ends.
 */
import type { AskRow } from "./store-schema";

export class AskStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

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
