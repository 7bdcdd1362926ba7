/**
 * The sandbox's terminals (issue 41; docs/sandbox-wire.md §11, §12): a PTY's socket under the
 * sidecar proxy, its frames both ways, and its metadata. The frames are [ours] (no public source
 * shows them): a JSON text frame for `ready`, `exit`, `error` (and `output` where a deployment sends
 * text), binary messages for the PTY's output bytes. What the gateway makes of them (the sequence,
 * the cursor, the truth rules) is src/terminal/'s.
 */
import { z } from "zod";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { SandboxTerminals, TerminalConnection, UpstreamTerminalFrame } from "../provider";
import { sandboxRoutes } from "./routes";
import { refine } from "./wire-errors";

const CAPABILITY = "interactiveTerminal";

const ControlFrame = z.union([
  z.object({
    type: z.literal("ready"),
    sessionId: z.unknown().optional(),
    restored: z.unknown().optional(),
    detachTimeoutMs: z.unknown().optional(),
  }),
  z.object({ type: z.literal("output"), data: z.string() }),
  z.object({
    type: z.literal("exit"),
    exitCode: z.number().int().optional().catch(undefined),
    exitSignal: z.string().optional().catch(undefined),
  }),
  z.object({ type: z.literal("error"), message: z.string().catch("the terminal reported an error") }),
]);

/** A 404 on a terminal route: the sandbox gone, the terminal unknown, or the route missing (no terminals here). */
function terminalError(err: unknown, what: string): unknown {
  if (!(err instanceof ProviderError)) return err;
  const wire = err.options.wireCode?.toUpperCase();
  if (err.code === "not_found" && wire !== "SANDBOX_NOT_FOUND" && wire !== "TERMINAL_NOT_FOUND")
    return err.as("capability_denied", `this deployment has no terminals (${what} answered ${err.options.status})`, {
      retryable: false,
      details: { missing: [CAPABILITY] },
    });
  return refine(err);
}

/** One upstream frame read: a text frame by its JSON, a binary one as output bytes; null for a frame of no known shape. */
function readFrame(data: string | ArrayBuffer, decoder: TextDecoder): UpstreamTerminalFrame | null {
  if (typeof data !== "string") return { type: "output", data: decoder.decode(new Uint8Array(data), { stream: true }) };
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  const frame = ControlFrame.safeParse(parsed);
  if (!frame.success) return null;
  const value = frame.data;
  if (value.type === "exit")
    return {
      type: "exit",
      ...(value.exitCode !== undefined ? { exitCode: value.exitCode } : {}),
      ...(value.exitSignal !== undefined ? { exitSignal: value.exitSignal } : {}),
    };
  return value;
}

class SocketConnection implements TerminalConnection {
  private closed = false;
  private closedWith: { code: number; reason: string } | null = null;
  private readonly closeListeners: ((code: number, reason: string) => void)[] = [];
  private listener: ((frame: UpstreamTerminalFrame) => void) | null = null;
  /** Frames read before anyone listened (kept for the first listener). */
  private early: UpstreamTerminalFrame[] | null = [];

  constructor(private readonly socket: WebSocket) {
    const decoder = new TextDecoder();
    const deliver = (data: string | ArrayBuffer) => {
      const frame = readFrame(data, decoder);
      if (!frame) return;
      if (this.listener) this.listener(frame);
      else this.early?.push(frame);
    };
    // In order: a binary message may come as a Blob, read first; what follows waits for it.
    let queue: Promise<void> | null = null;
    socket.addEventListener("message", (event) => {
      const data = event.data as string | ArrayBuffer | Blob;
      if (!(data instanceof Blob) && queue === null) return deliver(data);
      const read = data instanceof Blob ? data.arrayBuffer() : Promise.resolve(data);
      const next: Promise<void> = (queue ?? Promise.resolve()).then(async () => {
        deliver(await read);
        if (queue === next) queue = null;
      });
      queue = next;
    });
    const ended = (code: number, reason: string) => {
      if (this.closed) return;
      this.closed = true;
      this.closedWith = { code, reason };
      for (const listener of this.closeListeners) listener(code, reason);
    };
    socket.addEventListener("close", (event) => ended(event.code, event.reason));
    socket.addEventListener("error", () => ended(1006, "the socket failed"));
  }

  onFrame(listener: (frame: UpstreamTerminalFrame) => void): void {
    this.listener = listener;
    const early = this.early ?? [];
    this.early = null;
    for (const frame of early) listener(frame);
  }

  onClose(listener: (code: number, reason: string) => void): void {
    // A listener that comes after the close hears it too (a drop during the attach's checks).
    const closed = this.closedWith;
    if (closed) queueMicrotask(() => listener(closed.code, closed.reason));
    else this.closeListeners.push(listener);
  }

  input(data: string): void {
    this.send({ type: "input", data });
  }

  resize(cols: number, rows: number): void {
    this.send({ type: "resize", cols, rows });
  }

  close(): void {
    if (this.closed) return;
    try {
      this.socket.close(1000, "detached");
    } catch {
      // Already closing.
    }
  }

  private send(frame: object): void {
    if (this.closed) return;
    try {
      this.socket.send(JSON.stringify(frame));
    } catch {
      // The socket went meanwhile: its close is on its way.
    }
  }
}

export class TangleTerminals implements SandboxTerminals {
  constructor(private readonly client: HttpTransport) {}

  async connect(
    environmentId: string,
    connectionId: string,
    open: { cols: number; rows: number; generation?: number },
  ): Promise<TerminalConnection> {
    const route = sandboxRoutes.terminalSocket(environmentId, connectionId);
    const query: Record<string, string> = { cols: String(open.cols), rows: String(open.rows) };
    if (open.generation !== undefined) query.generation = String(open.generation);
    try {
      return new SocketConnection(await this.client.upgrade(route, query));
    } catch (err) {
      throw terminalError(err, "the terminal socket");
    }
  }

  async metadata(environmentId: string, sessionId: string): Promise<Record<string, unknown> | null> {
    const route = sandboxRoutes.terminalMetadata(environmentId, sessionId);
    let body: unknown;
    try {
      body = await (await this.client.send(route)).json();
    } catch (err) {
      if (err instanceof ProviderError && err.options.wireCode?.toUpperCase() === "TERMINAL_NOT_FOUND") return null;
      throw terminalError(err, "the terminal's metadata");
    }
    // `{ success, data }` (an older sidecar's envelope), or the object bare.
    const record = z.record(z.string(), z.unknown()).safeParse(body);
    if (!record.success) return null;
    const data = z.record(z.string(), z.unknown()).safeParse(record.data.data);
    return data.success ? data.data : record.data;
  }
}
