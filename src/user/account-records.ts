/**
 * The user object's records of the sandbox's life and of the account's deletion (docs/api.md#the-sandboxs-life): what
 * the gateway did to the user's environment (a bounded log, newest kept), the durable deletion record whose step says
 * where a deletion resumes, and the conversations the live account admitted (the deletion's fence, below). The tables
 * are made by the user object's migration (./schema.ts, v6 and v10).
 *
 * The fence (docs/api.md#deleting-an-account): a request belongs to the account its token was issued
 * for (`gate`), and it is checked again where it writes, not only at the door: every turn sent
 * admits its conversation (`admit`) only for a token the live account's gate lets in, in the same
 * step as the record is read, and the user's sandbox, its conversation list
 * and its webhook hand-offs take writes only from admitted conversations. A deletion deletes every
 * admitted conversation (listed or not yet) and forgets them all; so a request that passed the door
 * before the deletion ended and writes after it finds its conversation not admitted, and its token
 * refused at admission.
 */
import type { AccountDeletion, DeletionStep, EnvironmentAction } from "../schemas/environment";

/** How many actions the log keeps (the oldest go first). */
const ACTIONS_KEPT = 50;

/**
 * How long after a deletion began a token must have been issued to open a fresh account: the
 * clock skew tokens are allowed (src/auth/tokens.ts), so a token issued before the deletion never
 * passes for a later one.
 */
const FRESH_TOKEN_AFTER_MS = 60_000;

interface DeletionRow extends Record<string, SqlStorageValue> {
  user_id: string | null;
  began_at: number;
  step: string;
  conversations_deleted: number;
  last_error: string | null;
  finished_at: number | null;
}

/** What a request may do while (or after) the account is deleted. */
export type Gate = { open: true } | { open: false; code: "account_deleting" | "account_deleted"; message: string };

export class AccountRecords {
  constructor(private readonly sql: SqlStorage) {}

  // ------------------------------------------------------------------ what the gateway did

  recordAction(action: EnvironmentAction["action"], environmentId: string, detail?: string): void {
    this.sql.exec(
      "INSERT INTO environment_actions (at, action, environment_id, detail) VALUES (?, ?, ?, ?)",
      Date.now(),
      action,
      environmentId,
      detail ?? null,
    );
    this.sql.exec(
      "DELETE FROM environment_actions WHERE seq <= (SELECT MAX(seq) FROM environment_actions) - ?",
      ACTIONS_KEPT,
    );
  }

  actions(): EnvironmentAction[] {
    return this.sql
      .exec<{ at: number; action: string; environment_id: string; detail: string | null }>(
        "SELECT at, action, environment_id, detail FROM environment_actions ORDER BY seq DESC",
      )
      .toArray()
      .map((r) => ({
        action: r.action as EnvironmentAction["action"],
        at: new Date(r.at).toISOString(),
        environmentId: r.environment_id,
        ...(r.detail !== null ? { detail: r.detail } : {}),
      }));
  }

  // ------------------------------------------------------------------ the fence

  /**
   * Admits a conversation for a request whose token was issued at `issuedAtSeconds`, if the live
   * account's gate lets that token in (the gate's verdict either way). Idempotent.
   */
  admit(conversationId: string, issuedAtSeconds: number | null): Gate {
    const gate = this.gate(issuedAtSeconds, false);
    if (gate.open) this.sql.exec("INSERT OR IGNORE INTO admissions (conversation_id) VALUES (?)", conversationId);
    return gate;
  }

  admitted(conversationId: string): boolean {
    return this.sql.exec("SELECT 1 FROM admissions WHERE conversation_id = ?", conversationId).toArray().length > 0;
  }

  /** Forgets an admission (its conversation deleted, or its first turn refused); `unlisted`: only if the index does not list it. */
  forgetAdmission(conversationId: string, unlisted = false): void {
    const listed = unlisted ? " AND conversation_id NOT IN (SELECT conversation_id FROM conversations)" : "";
    this.sql.exec(`DELETE FROM admissions WHERE conversation_id = ?${listed}`, conversationId);
  }

  /** Admitted conversations the index does not list yet (a first turn under way). */
  unlistedAdmissions(): string[] {
    return this.sql
      .exec<{ conversation_id: string }>(
        "SELECT conversation_id FROM admissions WHERE conversation_id NOT IN (SELECT conversation_id FROM conversations) ORDER BY conversation_id",
      )
      .toArray()
      .map((r) => r.conversation_id);
  }

  // ------------------------------------------------------------------ the deletion record

  private row(): DeletionRow | undefined {
    return this.sql.exec<DeletionRow>("SELECT * FROM account_deletion WHERE id = 1").toArray()[0];
  }

  /** A deletion under way (begun and not finished): its user id and next step. */
  pending(): { userId: string; step: DeletionStep } | null {
    const row = this.row();
    if (!row || row.finished_at !== null || row.user_id === null) return null;
    return { userId: row.user_id, step: row.step as DeletionStep };
  }

  /** A token issued this long after a finished deletion began belongs to a fresh account. */
  private freshAfter(row: DeletionRow, issuedAtSeconds: number | null): boolean {
    return (
      row.finished_at !== null &&
      issuedAtSeconds !== null &&
      issuedAtSeconds * 1000 > row.began_at + FRESH_TOKEN_AFTER_MS
    );
  }

  /**
   * Whether a request of a token issued at `issuedAtSeconds` is served. While a deletion runs,
   * nothing is (but the account routes, `account`); once it finished, a token issued before it
   * began is refused everywhere but the account routes, and one issued later opens a fresh account.
   */
  gate(issuedAtSeconds: number | null, account: boolean): Gate {
    const row = this.row();
    if (!row || this.freshAfter(row, issuedAtSeconds) || account) return { open: true };
    if (row.finished_at === null)
      return {
        open: false,
        code: "account_deleting",
        message: "this account is being deleted: its conversations and sandbox can no longer be read or used",
      };
    return {
      open: false,
      code: "account_deleted",
      message: "this account was deleted; sign in again for a new, empty account",
    };
  }

  /** The deletion as a token issued at `issuedAtSeconds` sees it (null: none, or one before this token's fresh account). */
  deletion(issuedAtSeconds: number | null): AccountDeletion | null {
    const row = this.row();
    if (!row || this.freshAfter(row, issuedAtSeconds)) return null;
    return {
      state: row.finished_at === null ? "deleting" : "deleted",
      step: row.step as DeletionStep,
      beganAt: new Date(row.began_at).toISOString(),
      finishedAt: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
      conversationsDeleted: row.conversations_deleted,
      lastError: row.last_error,
    };
  }

  /** Begins a deletion (written before anything is deleted); one under way, or finished for this token, is left as it is. */
  begin(userId: string, issuedAtSeconds: number | null): void {
    const row = this.row();
    if (row && (row.finished_at === null || !this.freshAfter(row, issuedAtSeconds))) return;
    this.sql.exec(
      "INSERT INTO account_deletion (id, user_id, began_at, step, conversations_deleted, last_error, finished_at) VALUES (1, ?, ?, 'sealed', 0, NULL, NULL) ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, began_at = excluded.began_at, step = 'sealed', conversations_deleted = 0, last_error = NULL, finished_at = NULL",
      userId,
      Date.now(),
    );
  }

  /** The deletion moves on to `step`; `done` finishes it and forgets the user id. */
  advance(step: DeletionStep): void {
    if (step === "done")
      this.sql.exec(
        "UPDATE account_deletion SET step = 'done', last_error = NULL, user_id = NULL, finished_at = ? WHERE id = 1",
        Date.now(),
      );
    else this.sql.exec("UPDATE account_deletion SET step = ?, last_error = NULL WHERE id = 1", step);
  }

  countConversationDeleted(): void {
    this.sql.exec("UPDATE account_deletion SET conversations_deleted = conversations_deleted + 1 WHERE id = 1");
  }

  failed(error: string): void {
    this.sql.exec("UPDATE account_deletion SET last_error = ? WHERE id = 1", error.slice(0, 1000));
  }
}
