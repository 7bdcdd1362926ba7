/**
 * The user object's storage of its sandbox and its conversation index: typed accessors over the
 * `environment`, `create_ledger`, `conversations`, `incarnations` and `deleted_spend` tables (the
 * schema is ./schema.ts; the account's tables are ./account-store.ts, the webhooks'
 * ./webhook-store.ts). What belongs together is written in one transaction by the caller.
 */
import { z } from "zod";
import type { CreateLedger, EnvironmentRecord } from "../providers/provider";
import { type ConversationAgent, ConversationAgentSchema } from "../schemas/agents";
import { type ConversationEntry, WaitingFor } from "../schemas/api";
import { Provenance } from "../schemas/common";
import type { Spend } from "../usage/budgets";
import { weakest } from "../usage/usage-fold";

const EnvironmentRecordSchema = z.object({
  environmentId: z.string(),
  generation: z.number().int().positive(),
  capabilities: z.record(z.string(), z.unknown()).nullable(),
  capabilitiesCheckedAt: z.string().optional(),
  warnings: z.array(z.string()),
  readyAt: z.string(),
  requested: z
    .object({ idleTimeoutSeconds: z.number().nullable(), maxLifetimeSeconds: z.number().nullable() })
    .optional(),
});

/** A touch of the index: what the session says of its conversation now. */
export interface IndexTouch {
  conversationId: string;
  title: string;
  state: "idle" | "running";
  waitingFor: WaitingFor | null;
  branch?: number;
  /** The agent the conversation runs (absent: a touch from before agents were listed). */
  agent?: ConversationAgent;
  lastEventId: number;
  updatedAt: number;
  usage: Spend;
}

/** The weakest of stored provenances (none: nothing was counted, which is exact); an unreadable value is unknown. */
function weakestOf(kinds: string[]): Provenance {
  return kinds.reduce<Provenance>(
    (acc, kind) => weakest(acc, Provenance.safeParse(kind).data ?? "unknown") ?? acc,
    "measured",
  );
}

export class UserStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  // ------------------------------------------------------------------ the environment and the create ledger

  environment(): EnvironmentRecord | null {
    const row = this.sql.exec<{ record: string }>("SELECT record FROM environment WHERE id = 1").toArray()[0];
    return row ? EnvironmentRecordSchema.parse(JSON.parse(row.record)) : null;
  }

  putEnvironment(record: EnvironmentRecord): void {
    this.sql.exec(
      "INSERT INTO environment (id, record) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET record = excluded.record",
      JSON.stringify(record),
    );
  }

  ledger(): CreateLedger {
    return (
      this.sql
        .exec<{ sent: number; failed: number }>("SELECT sent, failed FROM create_ledger WHERE id = 1")
        .toArray()[0] ?? { sent: 0, failed: 0 }
    );
  }

  writeLedger(next: CreateLedger): void {
    this.sql.exec(
      "INSERT INTO create_ledger (id, sent, failed) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET sent = excluded.sent, failed = excluded.failed",
      next.sent,
      next.failed,
    );
  }

  /**
   * Forgets the environment's record and retires every create key sent so far (the ledger's
   * `failed`), so the next create makes a new sandbox under a key never sent. Inside the caller's
   * transaction.
   */
  retireEnvironment(generation: number): void {
    const ledger = this.ledger();
    const retired = Math.max(ledger.sent, ledger.failed, generation);
    this.sql.exec(
      "INSERT INTO create_ledger (id, sent, failed) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET sent = excluded.sent, failed = excluded.failed",
      retired,
      retired,
    );
    this.sql.exec("DELETE FROM environment WHERE id = 1");
  }

  // ------------------------------------------------------------------ the conversation index

  /**
   * Lists the conversation as a touch says. Touches can arrive out of order (each is its own
   * call): one that saw less of the log than the row already has is older news and changes
   * nothing; a title the user set (`renamed`) is never written over.
   */
  touch(entry: IndexTouch): void {
    this.sql.exec(
      `INSERT INTO conversations (conversation_id, title, state, waiting_for, last_event_id, created_at, updated_at, used_tokens, usage_complete, usage_provenance, branch, agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(conversation_id) DO UPDATE SET title = CASE WHEN conversations.renamed = 1 THEN conversations.title ELSE excluded.title END, state = excluded.state, waiting_for = excluded.waiting_for, branch = excluded.branch, agent = COALESCE(excluded.agent, conversations.agent),
         last_event_id = excluded.last_event_id, updated_at = excluded.updated_at,
         used_tokens = excluded.used_tokens, usage_complete = excluded.usage_complete, usage_provenance = excluded.usage_provenance
       WHERE excluded.last_event_id >= conversations.last_event_id`,
      entry.conversationId,
      entry.title,
      entry.state,
      entry.waitingFor,
      entry.lastEventId,
      entry.updatedAt,
      entry.updatedAt,
      entry.usage.used,
      entry.usage.complete ? 1 : 0,
      entry.usage.provenance,
      entry.branch ?? 0,
      entry.agent ? JSON.stringify(entry.agent) : null,
    );
  }

  /** The most recently updated conversations, newest first. */
  list(limit: number): ConversationEntry[] {
    return this.entries("SELECT * FROM conversations ORDER BY updated_at DESC LIMIT ?", limit);
  }

  /** The user renamed the conversation: its listed title from now on. Answers the entry as listed, or null. */
  rename(conversationId: string, title: string): ConversationEntry | null {
    this.sql.exec("UPDATE conversations SET title = ?, renamed = 1 WHERE conversation_id = ?", title, conversationId);
    return this.entries("SELECT * FROM conversations WHERE conversation_id = ?", conversationId)[0] ?? null;
  }

  /** Rows of the conversation index as listed. */
  private entries(query: string, ...bindings: (string | number)[]): ConversationEntry[] {
    return this.sql
      .exec<{
        conversation_id: string;
        title: string;
        state: string;
        waiting_for: string | null;
        branch: number;
        agent: string | null;
        last_event_id: number;
        created_at: number;
        updated_at: number;
      }>(query, ...bindings)
      .toArray()
      .map((r) => ({
        conversationId: r.conversation_id,
        title: r.title,
        state: r.state as "idle" | "running",
        waitingFor: r.state === "running" && r.waiting_for !== null ? WaitingFor.parse(r.waiting_for) : null,
        branch: r.branch ?? 0,
        agent: r.agent === null ? null : (ConversationAgentSchema.safeParse(JSON.parse(r.agent)).data ?? null),
        lastEventId: r.last_event_id,
        createdAt: new Date(r.created_at).toISOString(),
        updatedAt: new Date(r.updated_at).toISOString(),
      }));
  }

  knows(conversationId: string): boolean {
    return this.sql.exec("SELECT 1 FROM conversations WHERE conversation_id = ?", conversationId).toArray().length > 0;
  }

  /** Every listed conversation, oldest first. */
  conversationIds(): string[] {
    return this.sql
      .exec<{ conversation_id: string }>("SELECT conversation_id FROM conversations ORDER BY created_at")
      .toArray()
      .map((r) => r.conversation_id);
  }

  /**
   * Tokens (input + output) the user spent in every other conversation, deleted ones included: a
   * floor when any is incomplete, and as weak as the weakest provenance of any spend it counts.
   */
  spendElsewhere(conversationId: string): Spend {
    const row = this.sql
      .exec<{ used: number | null; incomplete: number | null }>(
        "SELECT SUM(used_tokens) AS used, SUM(usage_complete = 0) AS incomplete FROM conversations WHERE conversation_id != ?",
        conversationId,
      )
      .one();
    const kinds = this.sql
      .exec<{ provenance: string }>(
        "SELECT DISTINCT usage_provenance AS provenance FROM conversations WHERE conversation_id != ? AND used_tokens > 0",
        conversationId,
      )
      .toArray()
      .map((r) => r.provenance);
    const deleted = this.sql
      .exec<{ used_tokens: number; incomplete: number; provenance: string }>(
        "SELECT used_tokens, incomplete, provenance FROM deleted_spend WHERE id = 1",
      )
      .toArray()[0];
    if (deleted && deleted.used_tokens > 0) kinds.push(deleted.provenance);
    return {
      used: (row.used ?? 0) + (deleted?.used_tokens ?? 0),
      complete: !row.incomplete && !deleted?.incomplete,
      provenance: weakestOf(kinds),
    };
  }

  /** Takes a conversation off the index, its spend kept among what deleted conversations spent. Inside the caller's transaction. */
  unlist(conversationId: string): void {
    const spent = this.sql
      .exec<{ used_tokens: number; usage_complete: number; usage_provenance: string }>(
        "SELECT used_tokens, usage_complete, usage_provenance FROM conversations WHERE conversation_id = ?",
        conversationId,
      )
      .toArray()[0];
    if (spent) {
      const before = this.sql
        .exec<{ used_tokens: number; provenance: string }>(
          "SELECT used_tokens, provenance FROM deleted_spend WHERE id = 1",
        )
        .toArray()[0];
      const kinds = [
        before && before.used_tokens > 0 ? before.provenance : null,
        spent.used_tokens > 0 ? spent.usage_provenance : null,
      ].filter((k) => k !== null);
      this.sql.exec(
        "INSERT INTO deleted_spend (id, used_tokens, incomplete, provenance) VALUES (1, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET used_tokens = used_tokens + excluded.used_tokens, incomplete = incomplete + excluded.incomplete, provenance = excluded.provenance",
        spent.used_tokens,
        spent.usage_complete ? 0 : 1,
        weakestOf(kinds),
      );
    }
    this.sql.exec("DELETE FROM conversations WHERE conversation_id = ?", conversationId);
  }

  /** How many times this conversation id was deleted (0 for a first use). */
  deletions(conversationId: string): number {
    const row = this.sql
      .exec<{ deletions: number }>("SELECT deletions FROM incarnations WHERE conversation_id = ?", conversationId)
      .toArray()[0];
    return row?.deletions ?? 0;
  }

  countDeletion(conversationId: string): void {
    this.sql.exec(
      "INSERT INTO incarnations (conversation_id, deletions) VALUES (?, 1) ON CONFLICT(conversation_id) DO UPDATE SET deletions = deletions + 1",
      conversationId,
    );
  }

  /** The account deletion's last wipe: the index, the admissions, spend, the environment and its log. Inside the caller's transaction. */
  wipe(): void {
    const tables = [
      "conversations",
      "admissions",
      "incarnations",
      "deleted_spend",
      "environment_actions",
      "environment",
    ];
    for (const table of tables) this.sql.exec(`DELETE FROM ${table}`);
  }
}
