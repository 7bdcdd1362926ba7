/**
 * The account's gate and its deletion (docs/api.md#deleting-an-account). The gate: a request is
 * served as the account its token was issued for stands (./account-gate.ts `gateFor`), and nothing
 * of an account is read or run once its deletion began. The deletion: its record is written first,
 * then its steps run (./account-deletion.ts has them and their order); one cut short is resumed by
 * the alarm, or by asking again. Its tables are ./account-store.ts's.
 *
 * The fence: a request belongs to the account its token was issued for (the gate), and it is
 * checked again where it writes, not only at the door: every turn sent admits its conversation
 * (`admit`) only for a token the live account's gate lets in, in the same step as the record is
 * read, and the user's sandbox, its conversation list and its webhook hand-offs take writes only
 * from admitted conversations. A deletion deletes every admitted conversation (listed or not yet)
 * and forgets them all; so a request that passed the door before the deletion ended and writes
 * after it finds its conversation not admitted, and its token refused at admission.
 */
import { deriveSessionId } from "../auth/ids";
import { readConfig } from "../config";
import { Refusal, type RpcResult } from "../errors";
import { CLOSE_DELETED } from "../lib/subscription-wire";
import { createProvider } from "../providers";
import type { AccountAnswer, AccountDeletion } from "../schemas/environment";
import { runDeletion } from "./account-deletion";
import { beginsDeletion, deletionSeenBy, type Gate, gateFor, pendingDeletion } from "./account-gate";
import type { AccountStore } from "./account-store";
import type { ConversationIndex } from "./conversations";
import type { UserEnvironment } from "./environment";
import type { UserStore } from "./store";

/** How long after a deletion step stopped short (or began, in case this instance dies) the alarm runs it again. */
const DELETION_RETRY_MS = 30_000;
/** How much of a failed step's error the deletion record keeps. */
const ERROR_KEPT_CHARS = 1000;

export interface AccountDeps {
  env: Env;
  store: UserStore;
  accountStore: AccountStore;
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
    refuseShut(gateFor(this.deps.accountStore.deletion(), issuedAtSeconds, account));
  }

  /** Reads and turns of an account being deleted are refused from the moment its deletion began. */
  refuseWhileDeleting(): void {
    if (this.pending())
      throw new Refusal(
        "account_deleting",
        "this account is being deleted: its conversations and sandbox can no longer be read or used",
      );
  }

  /** Whether the live account admitted the conversation (the fence, above). */
  admitted(conversationId: string): boolean {
    return this.deps.accountStore.admitted(conversationId);
  }

  /** A conversation the live account did not admit belongs to an account deleted since (the fence, above). */
  refuseUnadmitted(conversationId: string): void {
    if (this.admitted(conversationId)) return;
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
    const { accountStore } = this.deps;
    // The gate's verdict and the admission in one synchronous step: no deletion begins between them.
    refuseShut(gateFor(accountStore.deletion(), issuedAtSeconds, false));
    accountStore.admit(conversationId);
    return this.deps.store.deletions(conversationId);
  }

  /** A first turn was refused and its session wiped: its admission goes, unless the index lists the conversation. */
  forgetAdmission(conversationId: string): void {
    this.deps.accountStore.forgetAdmission(conversationId, true);
  }

  /** The account as a token issued at `issuedAtSeconds` sees it: the deletion, if one began. */
  view(issuedAtSeconds: number | null): AccountAnswer {
    return { deletion: deletionSeenBy(this.deps.accountStore.deletion(), issuedAtSeconds) };
  }

  /**
   * Deletes the account: the record is written first, then the steps run; one cut short is resumed
   * by the alarm, or by calling this again. Answers the deletion as it stands (`deleted`, or
   * `deleting` with the last error).
   */
  async delete(userId: string, issuedAtSeconds: number | null): Promise<AccountDeletion> {
    const { accountStore } = this.deps;
    // One under way, or finished for this token, is left as it is (read and written in one step).
    if (beginsDeletion(accountStore.deletion(), issuedAtSeconds)) accountStore.beginDeletion(userId, Date.now());
    // If this instance dies mid-way, the alarm picks the deletion up.
    await this.deps.alarm.set(Date.now() + DELETION_RETRY_MS);
    await this.continue();
    return deletionSeenBy(accountStore.deletion(), issuedAtSeconds)!;
  }

  /** Runs the pending deletion's steps (one run at a time); a step that fails is retried from the alarm. */
  continue(): Promise<void> {
    this.deleting ??= this.steps().finally(() => {
      this.deleting = undefined;
    });
    return this.deleting;
  }

  /** The deletion under way, if one is. */
  private pending(): ReturnType<typeof pendingDeletion> {
    return pendingDeletion(this.deps.accountStore.deletion());
  }

  private async steps(): Promise<void> {
    const { env, store, accountStore, conversations } = this.deps;
    const pending = this.pending();
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
        step: () => this.pending()?.step ?? "done",
        // `done` finishes the deletion and forgets the user id.
        advance: (step) =>
          step === "done" ? accountStore.finishDeletion(Date.now()) : accountStore.advanceDeletion(step),
        forgetWebhooks: () => this.deps.forgetWebhooks(),
        // Every admitted conversation: the listed ones, then those whose first turn is under way.
        conversations: () => [...store.conversationIds(), ...accountStore.unlistedAdmissions()],
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
          accountStore.countConversationDeleted();
        },
        deleteSandbox: () => this.deps.environment.deleteForAccount(provider),
        wipeIndex: () => this.deps.transaction(() => store.wipe()),
      });
      await this.deps.alarm.clear();
      // Streams that waited for a conversation of this account end with it (a reconnect is told why).
      conversations.releaseWaiting(CLOSE_DELETED, "account deleted");
    } catch (err) {
      const message = err instanceof Refusal || err instanceof Error ? err.message : String(err);
      accountStore.deletionFailed(message.slice(0, ERROR_KEPT_CHARS));
      console.error(
        JSON.stringify({
          msg: "account deletion stopped short; the alarm resumes it",
          step: this.pending()?.step,
          error: message,
        }),
      );
      await this.deps.alarm.set(Date.now() + DELETION_RETRY_MS);
    }
  }
}

/** A gate that is shut refuses the request, saying why. */
function refuseShut(gate: Gate): void {
  if (!gate.open) throw new Refusal(gate.code, gate.message);
}
