/**
 * The subscription socket protocol (src/lib/subscription-wire.ts) as the session object's fetch and
 * webSocket handlers speak it: an upgrade opens a subscription (a hibernatable socket whose
 * attachment holds its state), a pull answers its next page, a direct stream is opened for it
 * (./direct-streams.ts), anything else closes it. The replay-then-live rule under it is
 * ./subscriptions.ts's SubscriptionHub.
 */
import { CLOSE_PROTOCOL, DIRECT_PATH, PullMessage, SUBSCRIBE_PATH } from "../lib/subscription-wire";
import { DirectStreams } from "./direct-streams";
import type { EventRow } from "./store/records";
import type { SessionStore } from "./store/store";
import {
  attachmentOf,
  newSubscription,
  type StreamSnapshot,
  type Subscription,
  SubscriptionHub,
  subscriptionOf,
} from "./subscriptions";
import { pathOf } from "./turn-tree";

/** A direct stream's id: 128 random bits, hex. */
function directId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** What the session object lends the socket protocol: its Durable Object's hibernatable sockets. */
export interface SocketHost {
  /** Accepts a socket as hibernatable (ctx.acceptWebSocket). */
  accept(socket: WebSocket): void;
  /** The open sockets, after hibernation too (ctx.getWebSockets). */
  sockets(): WebSocket[];
}

/** The log a subscription replays: the session's store, or null before it exists (an empty log). */
export type SubscribedLog = () => Pick<
  SessionStore,
  "eventsAfter" | "eventsAfterOf" | "treeTurns" | "lastSeq" | "firstRetainedSeq" | "lowestHeldCursor"
> | null;

/** A replay page: the log's, or a branch's history (the events of the turns on its path, and those of no turn). */
function pageOf(store: ReturnType<SubscribedLog>, after: number, limit: number, branch?: number): EventRow[] {
  if (!store) return [];
  if (branch === undefined) return store.eventsAfter(after, limit);
  return store.eventsAfterOf(
    after,
    limit,
    pathOf(store.treeTurns(), branch).map((t) => t.turnId),
  );
}

/**
 * The subscription socket protocol (src/lib/subscription-wire.ts), as the session object's
 * fetch and webSocket handlers speak it: an upgrade opens a subscription, a pull answers its next
 * page, anything else closes it, and a close from the Worker is answered.
 */
export class SubscriptionSockets {
  /** States read from the sockets' attachments, kept per socket (the attachment is the truth). */
  private readonly states = new WeakMap<WebSocket, Subscription>();
  private readonly hub: SubscriptionHub<WebSocket>;
  private readonly directs: DirectStreams;
  /** The sockets this instance accepted, by their direct streams' id (after a hibernation: found by their attachments). */
  private readonly byDirectId = new Map<string, WebSocket>();

  /**
   * `snapshot`: the conversation's snapshot, read now (null when the object holds none);
   * `directQuietMs`: SSE_DIRECT_QUIET_MS (0: no direct streams).
   */
  constructor(
    private readonly host: SocketHost,
    log: SubscribedLog,
    snapshot: () => StreamSnapshot | null = () => null,
    directQuietMs: () => number = () => 0,
  ) {
    this.directs = new DirectStreams({ onQuiet: () => this.hub.endDirect(), quietMs: directQuietMs });
    this.hub = new SubscriptionHub<WebSocket>({
      sockets: () => host.sockets(),
      load: (ws) => this.load(ws),
      save: (ws, state) => {
        ws.serializeAttachment(attachmentOf(state));
        this.states.set(ws, state);
      },
      send: (ws, message) => ws.send(message),
      readPage: (after, limit, branch) => pageOf(log(), after, limit, branch),
      lastSeq: () => log()?.lastSeq() ?? 0,
      firstRetainedSeq: () => log()?.firstRetainedSeq() ?? null,
      lowestHeldCursor: () => log()?.lowestHeldCursor() ?? null,
      snapshot,
      directs: this.directs,
    });
  }

  private load(ws: WebSocket): Subscription | null {
    let state = this.states.get(ws);
    if (!state) {
      state = subscriptionOf(ws.deserializeAttachment()) ?? undefined;
      if (state) this.states.set(ws, state);
    }
    return state ?? null;
  }

  /**
   * Opens a subscription: a WebSocket upgrade to /subscribe?after=<seq>, accepted as hibernatable,
   * its cursor and liveness in the socket's attachment so they survive the object's memory.
   */
  accept(request: Request): Response {
    const url = new URL(request.url);
    const after = /^\d{1,15}$/.exec(url.searchParams.get("after") ?? "");
    const branch = url.searchParams.get("branch");
    const snapshot = url.searchParams.get("snapshot");
    const direct = url.searchParams.get("direct");
    if (
      url.pathname !== SUBSCRIBE_PATH ||
      request.headers.get("upgrade")?.toLowerCase() !== "websocket" ||
      !after ||
      (branch !== null && !/^\d{1,7}$/.test(branch)) ||
      (snapshot !== null && (snapshot !== "1" || branch !== null)) ||
      (direct !== null && direct !== "1")
    ) {
      return new Response("expected a subscription: a WebSocket upgrade to /subscribe?after=<seq>", { status: 400 });
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.host.accept(server);
    const id = direct === "1" ? directId() : undefined;
    server.serializeAttachment(
      attachmentOf(
        newSubscription(Number(after[0]), branch === null ? undefined : Number(branch), snapshot === "1", id),
      ),
    );
    if (id) this.byDirectId.set(id, server);
    return new Response(null, { status: 101, webSocket: client });
  }

  /**
   * Opens a subscription's direct stream: a GET of DIRECT_PATH?id=<its id>&max=<bytes>, answered
   * with the stream (409 when the subscription is not in a direct phase or its relay is too far
   * behind: the relay then ends its browser's stream, which reconnects from its last id).
   */
  openDirect(request: Request): Response {
    const url = new URL(request.url);
    const id = url.searchParams.get("id") ?? "";
    const max = /^\d{1,12}$/.exec(url.searchParams.get("max") ?? "");
    if (url.pathname !== DIRECT_PATH || !/^[0-9a-f]{32}$/.test(id) || !max)
      return new Response("expected a direct stream: GET /direct?id=<id>&max=<bytes>", { status: 400 });
    const socket = this.byDirectId.get(id) ?? this.host.sockets().find((ws) => this.load(ws)?.direct === id);
    const body = socket ? this.hub.openDirect(socket, Number(max[0])) : null;
    if (!body) return new Response("no direct stream to open for this subscription", { status: 409 });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  }

  /** A message from the Worker: a pull is answered with the next page; anything else closes the socket. */
  message(ws: WebSocket, message: string | ArrayBuffer): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message));
    } catch {
      parsed = undefined;
    }
    if (!PullMessage.safeParse(parsed).success) {
      ws.close(CLOSE_PROTOCOL, 'expected {"op":"pull"}');
      return;
    }
    // A socket whose state cannot be read has no cursor to serve: closed, its browser reconnects
    // from its last id, rather than waiting on a pull nothing answers.
    if (!this.load(ws)) {
      ws.close(CLOSE_PROTOCOL, "the subscription's state is unreadable");
      return;
    }
    this.hub.pull(ws);
  }

  /** The Worker closed its side: the close is answered (1005 and 1006, which cannot be sent, as a normal close). */
  close(ws: WebSocket, code: number): void {
    const direct = this.load(ws)?.direct;
    if (direct) {
      this.directs.abort(direct, "closed");
      this.byDirectId.delete(direct);
    }
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
    } catch {
      // already closed
    }
  }

  /** Closes every subscription (a delete, a dev drop); answers how many there were. */
  closeAll(code: number, reason: string): number {
    // What was published before the close reaches the live sockets before it.
    this.hub.flush();
    this.directs.endAll();
    this.byDirectId.clear();
    const sockets = this.host.sockets();
    for (const ws of sockets) {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
    }
    return sockets.length;
  }

  count(): number {
    return this.host.sockets().length;
  }

  /** Direct streams open now, and opened by this instance. */
  directCounts(): { directStreams: number; directStreamsOpened: number } {
    return { directStreams: this.directs.size, directStreamsOpened: this.directs.opened };
  }

  publish(row: EventRow): void {
    this.hub.publish(row);
  }

  /** Committed events in log order: the same messages to every live socket. */
  publishBatch(rows: readonly EventRow[]): void {
    this.hub.publishBatch(rows);
  }

  /** A turn ended: the direct streams end once its last events are sent (./direct-streams.ts). */
  endDirectSoon(): void {
    this.hub.endDirectSoon();
  }
}
