/**
 * The user object's rooms, wired over its storage (./user.ts answers their RPCs): the schema
 * migrated first (./schema.ts), then its stores, the environment, the conversation index with its
 * waiting sockets, the webhook desk, the agent settings and the account, which reaches all of them for a deletion.
 * One place says what each room is given.
 */
import { readConfig } from "../config";
import { Account } from "./account";
import { AccountStore } from "./account-store";
import { AgentSettings } from "./agent-settings";
import { AgentSettingsStore } from "./agent-settings-store";
import { ConversationIndex } from "./conversations";
import { UserEnvironment } from "./environment";
import { migrateUserSchema } from "./schema";
import { UserStore } from "./store";
import { TerminalIndex } from "./terminals";
import { WebhookDesk, webhookSettings } from "./webhook-desk";
import { WebhookStore } from "./webhook-store";

export interface UserRooms {
  environments: UserEnvironment;
  conversations: ConversationIndex;
  webhooks: WebhookDesk;
  settings: AgentSettings;
  account: Account;
  terminals: TerminalIndex;
}

export function userRooms(ctx: DurableObjectState, env: Env): UserRooms {
  const sql = ctx.storage.sql;
  migrateUserSchema(sql);
  const store = new UserStore(sql);
  const transaction = <T>(fn: () => T): T => ctx.storage.transactionSync(fn);
  const accountStore = new AccountStore(sql);
  const environments = new UserEnvironment({ env, store, accountStore, transaction });
  const sockets = {
    accept: (ws: WebSocket, tags: string[]) => ctx.acceptWebSocket(ws, tags),
    get: (tag?: string) => ctx.getWebSockets(tag),
  };
  const conversations = new ConversationIndex({ store, accountStore, transaction, sockets });
  const webhooks = new WebhookDesk({
    store: new WebhookStore(sql),
    transaction,
    alarm: { get: () => ctx.storage.getAlarm(), set: (at) => ctx.storage.setAlarm(at) },
    settings: () => webhookSettings(readConfig(env)),
    fetch: (url, init) => fetch(url, init),
    now: () => Date.now(),
    random: () => Math.random(),
  });
  const settings = new AgentSettings({
    store: new AgentSettingsStore(sql),
    transaction,
    sealingSecret: () => readConfig(env).SESSION_ID_SECRET,
    now: () => Date.now(),
  });
  const terminals = new TerminalIndex(sql);
  const account = new Account({
    env,
    store,
    accountStore,
    conversations,
    environment: environments,
    // The deletion's `webhooks` step forgets every setting the user made: webhooks, model keys, MCP servers, instructions.
    forgetWebhooks: async () => {
      webhooks.forgetAll();
      settings.forgetAll();
      // The user's terminals are forgotten; their PTYs end with the sandbox, deleted later in the deletion.
      terminals.forgetAll();
    },
    transaction,
    alarm: { set: (at) => ctx.storage.setAlarm(at), clear: () => ctx.storage.deleteAlarm() },
  });
  return { environments, conversations, webhooks, settings, account, terminals };
}
