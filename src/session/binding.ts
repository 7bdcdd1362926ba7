/**
 * Whose conversation this session object holds, and its store. Nothing is stored until a turn
 * binds the conversation (reading one that does not exist stores nothing), and a wipe leaves the
 * object as if never used (a refused first turn, a delete). The binding is written once, with the
 * agent session a conversation id used again after a delete talks to (a fresh one upstream); a
 * later send must name the same session.
 */
import { Refusal } from "../errors";
import type { EventLog } from "./event-log";
import type { SessionContext } from "./store/records";
import { schemaExists } from "./store/schema";
import { SessionStore } from "./store/store";

export class SessionBinding {
  /** Null until the conversation exists. */
  current: SessionStore | null;
  /**
   * The session this object is bound to, once read: written once (bind) and gone only with
   * everything else (wipe), while the upstream reader asks for it with every batch it applies.
   * Null is not kept: an unbound object reads again.
   */
  private memo: SessionContext | null = null;

  constructor(private readonly storage: DurableObjectStorage) {
    this.current = schemaExists(storage.sql) ? new SessionStore(storage.sql) : null;
  }

  /** The store, created on first write (binding a conversation). */
  get store(): SessionStore {
    return (this.current ??= new SessionStore(this.storage.sql));
  }

  /** The bound session (kept once read), or null. */
  session(): SessionContext | null {
    return (this.memo ??= this.current?.getMeta("session") ?? null);
  }

  /** The bound session, or a refusal naming the conversation. */
  require(conversationId: string): SessionContext {
    const context = this.session();
    if (!context) throw new Refusal("conversation_not_found", `no conversation ${conversationId}`);
    return context;
  }

  /**
   * Records who this session belongs to on first use (`deletions`: how many times its conversation
   * id was deleted before, as the user's object admitted it); a later call must name the same
   * session.
   */
  bind(context: SessionContext, deletions: number, log: EventLog): void {
    const store = this.store;
    let known = store.getMeta("session");
    if (!known) {
      log.commit(() => {
        if (store.getMeta("session")) return;
        store.setMeta("session", context);
        store.setMeta("createdAt", Date.now());
        store.setMeta("webhooksHandedOff", 0);
        if (deletions > 0) store.setMeta("agentSessionId", `${context.sessionId}.${deletions}`);
      });
      known = store.getMeta("session")!;
    }
    if (known.sessionId !== context.sessionId || known.ownerKey !== context.ownerKey) {
      throw new Refusal("session_binding_mismatch", "this session object belongs to another session");
    }
  }

  /** Forgets everything stored: the object is as if never used. */
  async wipe(): Promise<void> {
    this.memo = null;
    await this.storage.deleteAlarm();
    await this.storage.deleteAll();
    this.current = null;
    this.memo = null;
  }
}
