/**
 * The user object's records of the sandbox's life and of the account's deletion: `environment_actions` (what the
 * gateway did to the user's environment, a bounded log), `account_deletion` (the durable deletion record, whose step
 * says where a deletion resumes) and `admissions` (the conversations the live account admitted: the deletion's fence).
 * Typed records in and out; the rules (the gate, what is admitted, the deletion's steps) are ./account.ts's and
 * ./account-gate.ts's, the log's ./environment.ts's. The tables are made by the user object's migration
 * (./schema.ts, v6 and v10). What belongs together is written in one transaction, or one synchronous step, by the
 * caller.
 */
import type { DeletionStep, EnvironmentAction } from "../schemas/environment";

/** What the gateway did to the user's environment, as stored (its time in ms). */
export interface ActionRecord {
  at: number;
  action: EnvironmentAction["action"];
  environmentId: string;
  detail: string | null;
}

/** The account's deletion record (times in ms); its user id is forgotten once it finished. */
export interface DeletionRecord {
  userId: string | null;
  beganAt: number;
  /** The next step to run (`done` once finished). */
  step: DeletionStep;
  conversationsDeleted: number;
  lastError: string | null;
  finishedAt: number | null;
}

interface DeletionRow extends Record<string, SqlStorageValue> {
  user_id: string | null;
  began_at: number;
  step: string;
  conversations_deleted: number;
  last_error: string | null;
  finished_at: number | null;
}

export class AccountStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  // ------------------------------------------------------------------ what the gateway did

  /** Logs an action; the log keeps the newest `kept` (the oldest go first). */
  recordAction(action: ActionRecord, kept: number): void {
    this.sql.exec(
      "INSERT INTO environment_actions (at, action, environment_id, detail) VALUES (?, ?, ?, ?)",
      action.at,
      action.action,
      action.environmentId,
      action.detail,
    );
    this.sql.exec("DELETE FROM environment_actions WHERE seq <= (SELECT MAX(seq) FROM environment_actions) - ?", kept);
  }

  /** The log, newest first. */
  actions(): ActionRecord[] {
    return this.sql
      .exec<{ at: number; action: string; environment_id: string; detail: string | null }>(
        "SELECT at, action, environment_id, detail FROM environment_actions ORDER BY seq DESC",
      )
      .toArray()
      .map((r) => ({
        at: r.at,
        action: r.action as EnvironmentAction["action"],
        environmentId: r.environment_id,
        detail: r.detail,
      }));
  }

  // ------------------------------------------------------------------ the admissions (the fence)

  /** Admits a conversation (idempotent). Whether it may be admitted is the caller's to check, in the same step. */
  admit(conversationId: string): void {
    this.sql.exec("INSERT OR IGNORE INTO admissions (conversation_id) VALUES (?)", conversationId);
  }

  admitted(conversationId: string): boolean {
    return this.sql.exec("SELECT 1 FROM admissions WHERE conversation_id = ?", conversationId).toArray().length > 0;
  }

  /** Forgets an admission; `unlisted`: only if the index does not list its conversation. */
  forgetAdmission(conversationId: string, unlisted = false): void {
    const listed = unlisted ? " AND conversation_id NOT IN (SELECT conversation_id FROM conversations)" : "";
    this.sql.exec(`DELETE FROM admissions WHERE conversation_id = ?${listed}`, conversationId);
  }

  /** Admitted conversations the index does not list yet. */
  unlistedAdmissions(): string[] {
    return this.sql
      .exec<{ conversation_id: string }>(
        "SELECT conversation_id FROM admissions WHERE conversation_id NOT IN (SELECT conversation_id FROM conversations) ORDER BY conversation_id",
      )
      .toArray()
      .map((r) => r.conversation_id);
  }

  // ------------------------------------------------------------------ the deletion record

  /** The deletion record (null: no deletion ever began). */
  deletion(): DeletionRecord | null {
    const row = this.sql.exec<DeletionRow>("SELECT * FROM account_deletion WHERE id = 1").toArray()[0];
    if (!row) return null;
    return {
      userId: row.user_id,
      beganAt: row.began_at,
      step: row.step as DeletionStep,
      conversationsDeleted: row.conversations_deleted,
      lastError: row.last_error,
      finishedAt: row.finished_at,
    };
  }

  /** Writes a new deletion record, begun at `at` (`sealed`, nothing deleted yet), in place of any earlier one. */
  beginDeletion(userId: string, at: number): void {
    this.sql.exec(
      "INSERT INTO account_deletion (id, user_id, began_at, step, conversations_deleted, last_error, finished_at) VALUES (1, ?, ?, 'sealed', 0, NULL, NULL) ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, began_at = excluded.began_at, step = 'sealed', conversations_deleted = 0, last_error = NULL, finished_at = NULL",
      userId,
      at,
    );
  }

  /** The deletion's next step is `step` (its last error cleared). */
  advanceDeletion(step: Exclude<DeletionStep, "done">): void {
    this.sql.exec("UPDATE account_deletion SET step = ?, last_error = NULL WHERE id = 1", step);
  }

  /** The deletion finished at `at`: its step `done`, its user id forgotten. */
  finishDeletion(at: number): void {
    this.sql.exec(
      "UPDATE account_deletion SET step = 'done', last_error = NULL, user_id = NULL, finished_at = ? WHERE id = 1",
      at,
    );
  }

  countConversationDeleted(): void {
    this.sql.exec("UPDATE account_deletion SET conversations_deleted = conversations_deleted + 1 WHERE id = 1");
  }

  /** The deletion's last step stopped short with `error`. */
  deletionFailed(error: string): void {
    this.sql.exec("UPDATE account_deletion SET last_error = ? WHERE id = 1", error);
  }
}
