/**
 * The user's conversation index (GET /v1/conversations) and the browser streams that wait for a
 * conversation to enter it. Each session touches its entry (title, state, what it waits for, its
 * branch, its spend); a conversation the live account did not admit (./account.ts, the
 * fence) is listed nowhere. A stream of a conversation the user does not have yet waits here on a
 * hibernatable WebSocket (src/lib/subscription-wire.ts AWAIT_PATH), closed with CLOSE_KNOWN when
 * the conversation enters the index, so the stream follows its first turn at once and an idle tab
 * on a new conversation costs nothing meanwhile.
 */
import { AWAIT_PATH, CLOSE_KNOWN, CLOSE_PROTOCOL } from "../lib/subscription-wire";
import type { ConversationEntry } from "../schemas/api";
import type { Spend } from "../usage/budgets";
import type { AccountStore } from "./account-store";
import type { IndexTouch, UserStore } from "./store";

/** The tag of the sockets waiting for a conversation (at most 256 characters: ids are at most 128). */
const awaitTag = (conversationId: string) => `await:${conversationId}`;

export interface ConversationsDeps {
  store: UserStore;
  /** The admissions (the fence, ./account.ts): the index takes touches only of admitted conversations. */
  accountStore: AccountStore;
  transaction<T>(fn: () => T): T;
  /** The object's hibernatable sockets: accept one under tags, list those of a tag (all without one). */
  sockets: { accept(ws: WebSocket, tags: string[]): void; get(tag?: string): WebSocket[] };
}

export class ConversationIndex {
  constructor(private readonly deps: ConversationsDeps) {}

  /** A session's news of its conversation; streams opened before the conversation existed follow it from now on. */
  touch(entry: IndexTouch): void {
    // A conversation the live account did not admit (its account deleted since) is listed nowhere.
    if (!this.deps.accountStore.admitted(entry.conversationId)) return;
    this.deps.store.touch(entry);
    this.releaseWaiting(CLOSE_KNOWN, "the conversation exists", entry.conversationId);
  }

  list(limit: number): ConversationEntry[] {
    return this.deps.store.list(limit);
  }

  /** Whether the user has this conversation (a read of one it does not have wakes no session object). */
  knows(conversationId: string): boolean {
    return this.deps.store.knows(conversationId);
  }

  /** The user renamed the conversation: its entry as listed, or null when the user has no such conversation. */
  rename(conversationId: string, title: string): ConversationEntry | null {
    return this.deps.store.rename(conversationId, title);
  }

  /** Tokens the user spent in every other conversation, deleted ones included. */
  spendElsewhere(conversationId: string): Spend {
    return this.deps.store.spendElsewhere(conversationId);
  }

  /** The conversation was deleted: off the index (its spend kept), its admission gone, its id's deletions counted. */
  remove(conversationId: string): void {
    this.deps.transaction(() => {
      this.deps.store.unlist(conversationId);
      this.deps.accountStore.forgetAdmission(conversationId);
      this.deps.store.countDeletion(conversationId);
    });
  }

  // ------------------------------------------------------------------ streams waiting for a conversation

  /** A waiting stream's WebSocket (204 when the conversation is known already). */
  accept(request: Request): Response {
    const url = new URL(request.url);
    const conversationId = url.searchParams.get("conversation");
    if (
      url.pathname !== AWAIT_PATH ||
      request.headers.get("upgrade")?.toLowerCase() !== "websocket" ||
      !conversationId ||
      conversationId.length > 128
    ) {
      return new Response("expected a WebSocket upgrade to /await?conversation=<id>", { status: 400 });
    }
    if (this.knows(conversationId)) return new Response(null, { status: 204 });
    const { 0: client, 1: server } = new WebSocketPair();
    this.deps.sockets.accept(server, [awaitTag(conversationId)]);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Nothing is sent on a waiting socket: a message is not this wire. */
  message(ws: WebSocket): void {
    ws.close(CLOSE_PROTOCOL, "nothing is sent on a waiting socket");
  }

  /** The Worker closed its side (its browser left): the close is answered. */
  close(ws: WebSocket, code: number): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
    } catch {
      // already closed
    }
  }

  /** Closes the sockets waiting for `conversationId` (all of them without one) with `code`. */
  releaseWaiting(code: number, reason: string, conversationId?: string): void {
    for (const ws of this.deps.sockets.get(conversationId === undefined ? undefined : awaitTag(conversationId))) {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
    }
  }
}
