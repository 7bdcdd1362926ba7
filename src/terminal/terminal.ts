/**
 * One Durable Object per terminal of a user's (issue 41; docs/api.md#terminals): a shell over the
 * relay (./relay.ts), which holds the sandbox's socket, the output log and the viewers' sockets. Its
 * name is the user's owner key and the terminal id, so a user reaches only their own terminals.
 * While it holds the sandbox's socket it stays in memory (an outgoing socket does not hibernate):
 * the relay's idle close bounds that.
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig } from "../config";
import { captureRpc, Refusal, type RpcResult } from "../errors";
import { PROTOCOL_HEADER, SPEC_HEADER } from "../lib/terminal-wire";
import { createProvider } from "../providers";
import type { CloseAnswer, Geometry, TerminalRef, TerminalSpec } from "./relay";
import { TerminalRelay } from "./relay";
import { TerminalState } from "./state";

export type { CloseAnswer, TerminalRef, TerminalSpec } from "./relay";

export class TerminalObject extends DurableObject<Env> {
  private readonly relay: TerminalRelay;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const config = readConfig(env);
    const state = new TerminalState(ctx.storage.sql);
    const terminals = createProvider(config, env).terminals;
    this.relay = new TerminalRelay({
      terminals: terminals ?? {
        connect: () => Promise.reject(new Refusal("capability_denied", "no terminals here")),
        metadata: () => Promise.resolve(null),
      },
      now: () => Date.now(),
      readyTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
      idleMs: config.TERMINAL_IDLE_SECONDS * 1000,
      setAlarm: (at) => {
        ctx.storage.setAlarm(at).catch(() => undefined);
      },
      firstSeq: () => state.firstSeq(),
      reserveThrough: (seq) => state.reserveThrough(seq),
      expiry: { read: () => state.expiresAt(), write: (at) => state.setExpiresAt(at) },
    });
  }

  async attach(
    spec: TerminalSpec,
    geometry: Geometry,
  ): Promise<RpcResult<{ status: "attached" | "reattached"; terminal: TerminalRef }>> {
    return captureRpc(async () => {
      const attached = await this.relay.attach(spec, geometry);
      if (attached instanceof Refusal) throw attached;
      return { status: attached.status, terminal: await this.relay.ref(spec) };
    });
  }

  async ref(spec: TerminalSpec): Promise<TerminalRef> {
    return this.relay.ref(spec);
  }

  async liveness(): Promise<{ held: boolean; expiresAt: number | null }> {
    return this.relay.liveness();
  }

  async close(): Promise<CloseAnswer> {
    return this.relay.close();
  }

  /** A viewer's socket (the Worker checked the user's token and the terminal): 101, then the relay's frames. */
  override async fetch(request: Request): Promise<Response> {
    const spec = JSON.parse(request.headers.get(SPEC_HEADER) ?? "null") as TerminalSpec | null;
    if (!spec || request.headers.get("upgrade")?.toLowerCase() !== "websocket")
      return new Response("a terminal's socket", { status: 400 });
    const sinceParam = new URL(request.url).searchParams.get("since");
    const since = sinceParam === null ? undefined : Number(sinceParam);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    // Accepted as a plain socket, not a hibernatable one: a viewer lives only while the object holds
    // the sandbox's socket (which keeps it in memory anyway), and its frames are handled in order.
    server.accept();
    server.addEventListener("message", (event) => this.relay.fromViewer(server, event.data as string | ArrayBuffer));
    server.addEventListener("close", () => this.relay.viewerGone(server));
    server.addEventListener("error", () => this.relay.viewerGone(server));
    this.ctx.waitUntil(this.relay.addViewer(server, spec, since));
    const protocol = request.headers.get(PROTOCOL_HEADER);
    return new Response(null, {
      status: 101,
      webSocket: client,
      ...(protocol ? { headers: { "sec-websocket-protocol": protocol } } : {}),
    });
  }

  override async alarm(): Promise<void> {
    this.relay.alarm();
  }
}
