/**
 * What the session asks of its user's object (src/user/user.ts), over RPC: the user's sandbox,
 * the spend of the user's other conversations, the conversation index, the admission of a
 * conversation (the account's fence) and the webhook events handed over. A refusal the user
 * object answers is thrown here as the same Refusal.
 */
import { Refusal, type RpcResult } from "../errors";
import type { EnvironmentRecord } from "../providers/provider";
import type { TurnSecrets } from "../schemas/agent-settings";
import type { ConversationAgent } from "../schemas/agents";
import type { ConversationEntry, WaitingFor } from "../schemas/api";
import type { WebhookEvent } from "../schemas/webhooks";
import type { Spend } from "../usage/budgets";
import type { SessionContext } from "./store/records";

/** What the session says of its conversation in the user's index. */
export interface IndexEntry {
  title: string;
  state: "idle" | "running";
  waitingFor: WaitingFor | null;
  branch: number;
  agent: ConversationAgent;
  lastEventId: number;
  usage: Spend;
}

export class UserLink {
  constructor(private readonly env: Env) {}

  private stub(ownerKey: string) {
    return this.env.USERS.get(this.env.USERS.idFromName(ownerKey));
  }

  /** The user's ready environment; `stale` says that one was found unusable, `claimMissing` that its claims fell short. */
  async environment(context: SessionContext, stale?: string, claimMissing?: boolean): Promise<EnvironmentRecord> {
    // RPC typing drops the record's JSON document (unknown values); the shape is UserObject's own.
    const user = this.stub(context.ownerKey);
    const answer = (await user.ensureEnvironment(
      context.ownerKey,
      context.conversationId,
      stale,
      claimMissing,
    )) as unknown as RpcResult<EnvironmentRecord>;
    if (!answer.ok)
      throw new Refusal(
        answer.refusal.code,
        answer.refusal.message,
        answer.refusal.details,
        answer.refusal.retryAfterSeconds,
      );
    return answer.value;
  }

  /** Tokens the user spent in their other conversations. */
  usageElsewhere(context: SessionContext): Promise<Spend> {
    return this.stub(context.ownerKey).usageElsewhere(context.conversationId);
  }

  /** Updates the user's conversation list. */
  touchIndex(context: SessionContext, entry: IndexEntry): Promise<void> {
    return this.stub(context.ownerKey).touchConversation({
      conversationId: context.conversationId,
      updatedAt: Date.now(),
      ...entry,
    });
  }

  /**
   * Admits the conversation for a request whose token was issued at `issuedAt` (the account's
   * fence, src/user/account.ts); answers how many times its id was deleted before.
   */
  async admit(context: SessionContext, issuedAt: number | null): Promise<number> {
    const admitted = (await this.stub(context.ownerKey).admitConversation(
      context.conversationId,
      issuedAt,
    )) as RpcResult<number>;
    if (!admitted.ok) throw new Refusal(admitted.refusal.code, admitted.refusal.message);
    return admitted.value;
  }

  /** A refused first turn left nothing here: its admission goes too. */
  forgetAdmission(context: SessionContext): Promise<void> {
    return this.stub(context.ownerKey).forgetAdmission(context.conversationId);
  }

  /** The user renamed the conversation: its entry as listed, or null when the user has no such conversation. */
  rename(context: SessionContext, title: string): Promise<ConversationEntry | null> {
    return this.stub(context.ownerKey).renameConversation(context.conversationId, title);
  }

  /** The conversation was deleted: off the user's index. */
  remove(context: SessionContext): Promise<void> {
    return this.stub(context.ownerKey).removeConversation(context.conversationId);
  }

  /** The log's webhook events, handed to the user's object (./webhook-handoff.ts). */
  handOff(ownerKey: string, events: WebhookEvent[]): Promise<void> {
    return this.stub(ownerKey).acceptWebhookEvents(events);
  }

  /** The user's settings a turn names, opened for its dispatch (src/user/agent-settings.ts); a refusal names the setting. */
  async turnSettings(context: SessionContext, credential?: string, mcpServers?: string[]): Promise<TurnSecrets> {
    const answer = (await this.stub(context.ownerKey).openTurnSettings(
      credential,
      mcpServers,
    )) as RpcResult<TurnSecrets>;
    if (!answer.ok) throw new Refusal(answer.refusal.code, answer.refusal.message, answer.refusal.details);
    return answer.value;
  }
}
