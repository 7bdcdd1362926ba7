/**
 * The account's gate and its deletion (docs/api.md#deleting-an-account). The gate: a request is
 * served as the account its token was issued for stands (./account-records.ts `gate`), a turn
 * admits its conversation only for a token the live account lets in (the fence), and nothing of an
 * account is read or run once its deletion began. The deletion: its record is written first, then
 * its steps run (./account-deletion.ts has them and their order); one cut short is resumed by the
 * alarm, or by asking again.
 */
import { deriveSessionId } from "../auth/ids";
import { readConfig } from "../config";
import { Refusal, type RpcResult } from "../errors";
import { CLOSE_DELETED } from "../lib/subscription-wire";
import { createProvider } from "../providers";
import type { AccountAnswer, AccountDeletion } from "../schemas/environment";
import { runDeletion } from "./account-deletion";
import type { AccountRecords } from "./account-records";
import type { ConversationIndex } from "./conversations";
import type { UserEnvironment } from "./environment";
import type { UserStore } from "./store";

/** How long after a deletion step stopped short (or began, in case this instance dies) the alarm runs it again. */
const DELETION_RETRY_MS = 30_000;

export interface AccountDeps {
  env: Env;
  store: UserStore;
  records: AccountRecords;
  conversations: ConversationIndex;
  environment: UserEnvironment;
  /** Every webhook endpoint and delivery of the user forgotten (./webhook-desk.ts `forgetAll`). */
  forgetWebhooks(): Promise<void>;
  transaction<T>(fn: () => T): T;
  alarm: { set(atMs: number): Promise<void>; clear(): Promise<void> };
}

export class Account {
  /** The deletion steps under way in this instance (one at a time: a request and the alarm share it). */
  private deleting: Promise<void> | undefined;

  constructor(private readonly deps: AccountDeps) {}

  /** Whether a request of a token issued at `issuedAtSeconds` is served (`account`: GET or DELETE /v1/me); a refusal says why not. */
  gate(issuedAtSeconds: number | null, account: boolean): void {
    const gate = this.deps.records.gate(issuedAtSeconds, account);
    if (!gate.open) throw new Refusal(gate.code, gate.message);
  }

  /** Reads and turns of an account being deleted are refused from the moment its deletion began. */
  refuseWhileDeleting(): void {
    if (this.deps.records.pending())
      throw new Refusal(
        "account_deleting",
        "this account is being deleted: its conversations and sandbox can no longer be read or used",
      );
  }

  /** A conversation the live account did not admit belongs to an account deleted since (./account-records.ts, the fence). */
  refuseUnadmitted(conversationId: string): void {
    if (this.deps.records.admitted(conversationId)) return;
    throw new Refusal(
      "account_deleted",
      "this conversation's account was deleted; sign in again for a new, empty account",
    );
  }

  /**
   * Admits a conversation whose session is being bound, for a request whose token was issued at
   * `issuedAtSeconds` (refused as the gate refuses that token). Answers how many times this
   * conversation id was deleted (0 for a first use).
   */
  admit(conversationId: string, issuedAtSeconds: number | null): number {
    const gate = this.deps.records.admit(conversationId, issuedAtSeconds);
    if (!gate.open) throw new Refusal(gate.code, gate.message);
    return this.deps.store.deletions(conversationId);
  }

  /** The account as a token issued at `issuedAtSeconds` sees it: the deletion, if one began. */
  view(issuedAtSeconds: number | null): AccountAnswer {
    return { deletion: this.deps.records.deletion(issuedAtSeconds) };
  }

  /**
   * Deletes the account: the record is written first, then the steps run; one cut short is resumed
   * by the alarm, or by calling this again. Answers the deletion as it stands (`deleted`, or
   * `deleting` with the last error).
   */
  async delete(userId: string, issuedAtSeconds: number | null): Promise<AccountDeletion> {
    this.deps.records.begin(userId, issuedAtSeconds);
    // If this instance dies mid-way, the alarm picks the deletion up.
    await this.deps.alarm.set(Date.now() + DELETION_RETRY_MS);
    await this.continue();
    return this.deps.records.deletion(issuedAtSeconds)!;
  }

  /** Runs the pending deletion's steps (one run at a time); a step that fails is retried from the alarm. */
  continue(): Promise<void> {
    this.deleting ??= this.steps().finally(() => {
      this.deleting = undefined;
    });
    return this.deleting;
  }

  private async steps(): Promise<void> {
    const { env, store, records, conversations } = this.deps;
    const pending = records.pending();
    // Nothing to delete: the alarm stays as it is (webhook deliveries may need it).
    if (!pending) return;
    const config = readConfig(env);
    const provider = createProvider(config, env);
    const session = async (conversationId: string) =>
      env.SESSIONS.get(
        env.SESSIONS.idFromName(await deriveSessionId(config.SESSION_ID_SECRET, pending.userId, conversationId)),
      );
    try {
      await runDeletion({
        step: () => records.pending()?.step ?? "done",
        advance: (step) => records.advance(step),
        forgetWebhooks: () => this.deps.forgetWebhooks(),
        // Every admitted conversation: the listed ones, then those whose first turn is under way.
        conversations: () => [...store.conversationIds(), ...records.unlistedAdmissions()],
        closeStreams: async (cid) => {
          await (await session(cid)).closeBrowserStreams();
        },
        deleteConversation: async (cid) => {
          const answer = (await (await session(cid)).deleteConversation(cid)) as RpcResult<{ deleted: true }>;
          if (!answer.ok) {
            // A conversation its session object does not hold (a refused first turn wiped it) has only its row here.
            if (answer.refusal.code !== "conversation_not_found")
              throw new Error(`conversation ${cid}: ${answer.refusal.message}`);
            conversations.remove(cid);
          }
          records.countConversationDeleted();
        },
        deleteSandbox: () => this.deps.environment.deleteForAccount(provider),
        wipeIndex: () => this.deps.transaction(() => store.wipe()),
      });
      await this.deps.alarm.clear();
      // Streams that waited for a conversation of this account end with it (a reconnect is told why).
      conversations.releaseWaiting(CLOSE_DELETED, "account deleted");
    } catch (err) {
      const message = err instanceof Refusal || err instanceof Error ? err.message : String(err);
      records.failed(message);
      console.error(
        JSON.stringify({
          msg: "account deletion stopped short; the alarm resumes it",
          step: records.pending()?.step,
          error: message,
        }),
      );
      await this.deps.alarm.set(Date.now() + DELETION_RETRY_MS);
    }
  }
}
