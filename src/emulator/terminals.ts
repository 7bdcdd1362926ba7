/**
 * The sandbox's terminals (docs/sandbox-wire.md §12): each PTY, in memory, with the one socket
 * attached to it. A PTY runs a program (the shell of ./shell.ts, or the agent's TUI of ./tui.ts)
 * that writes its output through the PTY: the PTY counts it, keeps its newest bytes for a reattach
 * (variant `terminalRetainedBytes`) and sends it to the socket (binary, or JSON text frames under
 * variant `terminalFrames: "json"`). A second socket on a connection id replaces the first (4000
 * `replaced`); with no socket the PTY lives the detach window (variant `terminalDetachMs`, else
 * `EMULATOR_TERMINAL_DETACH_MS`, else 60 s), then is gone. A sandbox that stops or goes away ends
 * its PTYs (1001, no exit frame).
 *
 * State is memory only, as a real PTY's is: an evicted emulator object has no terminals (the
 * sockets it held closed with it).
 */
import type { Shell } from "./shell";
import type { EmulatorStore } from "./store";
import { effectiveVariants } from "./variants";
import { absolutePath } from "./workspace-path";

/** What a PTY runs: it is started with the PTY's host, then given the typed text and the resizes. */
export interface PtyProgram {
  /** The program's name and command line, as the metadata shows them. */
  readonly name: string;
  readonly shell: string;
  start(host: PtyHost): void;
  input(text: string): void;
  resize(cols: number, rows: number): void;
  /** The generation a socket's writes must carry (the TUI's control), or undefined when any socket may write. */
  generation?(): number;
  /** The PTY ended (exited, detached too long, or its sandbox went away): let go of what it holds. */
  ended?(): void;
}

/** What a program writes through. */
export interface PtyHost {
  write(text: string): void;
  exit(code: number): void;
}

/** The shell (./shell.ts) as a PTY runs it. */
export function shellProgram(shell: Shell): PtyProgram {
  let host: PtyHost | undefined;
  return {
    name: "sh",
    shell: "/bin/sh",
    start(h) {
      host = h;
      h.write(shell.start());
    },
    input(text) {
      const { output, exitCode } = shell.input(text);
      host?.write(output);
      if (exitCode !== undefined) host?.exit(exitCode);
    },
    resize: (cols, rows) => shell.resize(cols, rows),
  };
}

interface Attached {
  ws: WebSocket;
  json: boolean;
  /** Fault `terminalDrop`: close 1011 after this many output messages. */
  dropAfter?: number;
  sent: number;
  generation?: number;
  decoder: TextDecoder;
}

interface Pty {
  sandboxId: string;
  connectionId: string;
  sessionId: string;
  program: PtyProgram;
  cols: number;
  rows: number;
  createdAt: number;
  lastActivityAt: number;
  retained: Uint8Array[];
  retainedBytes: number;
  socket?: Attached;
  timer?: ReturnType<typeof setTimeout>;
  alive: boolean;
  exitCode?: number;
  inputBytes: number;
  outputBytes: number;
}

/** A PTY as the control route lists it. */
export interface PtySummary {
  connectionId: string;
  sessionId: string;
  sockets: number;
  alive: boolean;
  inputBytes: number;
  outputBytes: number;
}

export interface OpenOptions {
  sandboxId: string;
  connectionId: string;
  cols: number;
  rows: number;
  generation?: number;
  /** The program of a new PTY on this id. */
  program: () => PtyProgram;
}

const DEFAULT_DETACH_MS = 60_000;
/** Output goes out in messages of at most this many UTF-16 units. */
const CHUNK = 16 * 1024;
const encoder = new TextEncoder();

/** Splits text into chunks of at most `size` units, never between a surrogate pair's halves. */
function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + size, text.length);
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

const send = (ws: WebSocket, message: string | Uint8Array) => {
  try {
    ws.send(message);
  } catch {
    // The socket closed under us: its close event detaches it.
  }
};
const close = (ws: WebSocket, code: number, reason: string) => {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed.
  }
};

export class Terminals {
  private readonly ptys = new Map<string, Pty>();

  constructor(
    private readonly store: EmulatorStore,
    /** The configured detach window (ms), when the environment sets one. */
    private readonly configuredDetachMs: () => number | undefined,
    /** A sandbox ended: what else it ends (the sessions' TUIs). */
    private readonly onSandboxEnded: (sandboxId: string) => void = () => undefined,
  ) {}

  private key(sandboxId: string, connectionId: string): string {
    return `${sandboxId}\n${connectionId}`;
  }

  /** The detach window in force: the variant, the environment, the default. */
  detachMs(): number {
    return this.store.variants().terminalDetachMs ?? this.configuredDetachMs() ?? DEFAULT_DETACH_MS;
  }

  /**
   * Opens a socket on a connection id: reattaches its live PTY (replaying the retained output) or
   * starts a new one. Answers the 101.
   */
  open(options: OpenOptions): Response {
    const pair = new WebSocketPair();
    const client = pair[0];
    const ws = pair[1];
    ws.accept();
    const v = effectiveVariants(this.store.variants());
    this.store.count("terminals.sockets");
    if (v.terminalReady === "silent") {
      // A 101 and nothing: no PTY behind it.
      return new Response(null, { status: 101, webSocket: client });
    }
    const key = this.key(options.sandboxId, options.connectionId);
    const found = this.ptys.get(key);
    const restored = found?.alive === true;
    if (found && !restored) this.gone(found);
    const pty = restored ? found : this.start(options);
    if (pty.timer !== undefined) clearTimeout(pty.timer);
    pty.timer = undefined;
    if (pty.socket) {
      const old = pty.socket;
      pty.socket = undefined;
      close(old.ws, 4000, "replaced");
    }
    const faults = this.store.faults();
    let dropAfter: number | undefined;
    if (faults.terminalDrop !== undefined) {
      dropAfter = faults.terminalDrop;
      this.store.setFaults({ ...faults, terminalDrop: undefined });
    }
    const attached: Attached = {
      ws,
      json: v.terminalFrames === "json",
      dropAfter,
      sent: 0,
      generation: options.generation,
      decoder: new TextDecoder(),
    };
    pty.socket = attached;
    send(
      ws,
      JSON.stringify({
        type: "ready",
        connectionId: pty.connectionId,
        sessionId: pty.sessionId,
        restored,
        ...(v.terminalReady === "no-detach-window" ? {} : { detachTimeoutMs: this.detachMs() }),
      }),
    );
    const live = pty;
    // In order, a binary message read first (it may come as a Blob).
    let queue = Promise.resolve();
    ws.addEventListener("message", (event) => {
      queue = queue.then(async () => {
        const data = event.data instanceof Blob ? new Uint8Array(await event.data.arrayBuffer()) : event.data;
        this.message(live, attached, data);
      });
    });
    const detached = () => this.detached(live, attached);
    ws.addEventListener("close", detached);
    ws.addEventListener("error", detached);
    if (restored) this.replay(live, attached);
    else live.program.start(this.host(live));
    if (attached.dropAfter === 0 && live.socket === attached) this.drop(live, attached);
    return new Response(null, { status: 101, webSocket: client });
  }

  private start(options: OpenOptions): Pty {
    const now = Date.now();
    const pty: Pty = {
      sandboxId: options.sandboxId,
      connectionId: options.connectionId,
      sessionId: `term_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
      program: options.program(),
      cols: options.cols,
      rows: options.rows,
      createdAt: now,
      lastActivityAt: now,
      retained: [],
      retainedBytes: 0,
      alive: true,
      inputBytes: 0,
      outputBytes: 0,
    };
    this.ptys.set(this.key(options.sandboxId, options.connectionId), pty);
    this.store.count("terminals.started");
    return pty;
  }

  private host(pty: Pty): PtyHost {
    return {
      write: (text) => this.output(pty, text),
      exit: (code) => this.exited(pty, code),
    };
  }

  /** The program wrote: counted, retained, sent. */
  private output(pty: Pty, text: string): void {
    if (!pty.alive || text === "") return;
    pty.lastActivityAt = Date.now();
    for (const piece of chunks(text, CHUNK)) {
      const bytes = encoder.encode(piece);
      pty.outputBytes += bytes.length;
      this.retain(pty, bytes);
      const socket = pty.socket;
      if (socket) this.deliver(pty, socket, socket.json ? piece : bytes);
    }
  }

  private deliver(pty: Pty, socket: Attached, data: string | Uint8Array): void {
    if (socket.dropAfter !== undefined && socket.sent >= socket.dropAfter) return;
    send(socket.ws, typeof data === "string" ? JSON.stringify({ type: "output", data }) : data);
    socket.sent++;
    if (socket.dropAfter !== undefined && socket.sent >= socket.dropAfter) this.drop(pty, socket);
  }

  /** Fault `terminalDrop`: the socket closes 1011 with no exit; the PTY lives on, detached. */
  private drop(pty: Pty, socket: Attached): void {
    this.store.count("terminals.dropped");
    this.detached(pty, socket);
    close(socket.ws, 1011, "dropped");
  }

  private retain(pty: Pty, bytes: Uint8Array): void {
    const limit = effectiveVariants(this.store.variants()).terminalRetainedBytes;
    pty.retained.push(bytes);
    pty.retainedBytes += bytes.length;
    while (pty.retainedBytes > limit) {
      const first = pty.retained[0]!;
      const over = pty.retainedBytes - limit;
      if (first.length <= over) {
        pty.retained.shift();
        pty.retainedBytes -= first.length;
      } else {
        pty.retained[0] = first.subarray(over);
        pty.retainedBytes -= over;
      }
    }
  }

  /** A reattach: the retained output, in the frames in force. */
  private replay(pty: Pty, socket: Attached): void {
    if (!socket.json) {
      for (const bytes of pty.retained) {
        if (pty.socket !== socket) return;
        this.deliver(pty, socket, bytes);
      }
      return;
    }
    const all = new Uint8Array(pty.retainedBytes);
    let at = 0;
    for (const bytes of pty.retained) {
      all.set(bytes, at);
      at += bytes.length;
    }
    for (const piece of chunks(new TextDecoder().decode(all), CHUNK)) {
      if (pty.socket !== socket) return;
      this.deliver(pty, socket, piece);
    }
  }

  private message(pty: Pty, socket: Attached, data: unknown): void {
    if (pty.socket !== socket || !pty.alive) return;
    const error = this.frameIn(pty, socket, data);
    if (error !== undefined) send(socket.ws, JSON.stringify({ type: "error", message: error }));
  }

  /** One frame up, applied; the error frame's message when it is refused. */
  private frameIn(pty: Pty, socket: Attached, data: unknown): string | undefined {
    if (typeof data !== "string") {
      const bytes = ArrayBuffer.isView(data)
        ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
        : new Uint8Array(data as ArrayBuffer);
      pty.inputBytes += bytes.length;
      return this.mayWrite(pty, socket) ?? this.input(pty, socket.decoder.decode(bytes, { stream: true }));
    }
    let frame: { type?: unknown; data?: unknown; cols?: unknown; rows?: unknown } | null;
    try {
      frame = JSON.parse(data) as typeof frame;
    } catch {
      return "a text frame must be JSON: {type: 'input' | 'resize', ...}";
    }
    if (frame === null || typeof frame !== "object") return "a text frame must be a JSON object";
    if (frame.type === "input") {
      if (typeof frame.data !== "string") return "input needs data: a string";
      pty.inputBytes += encoder.encode(frame.data).length;
      return this.mayWrite(pty, socket) ?? this.input(pty, frame.data);
    }
    if (frame.type === "resize") {
      const ok = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 1000;
      if (!ok(frame.cols) || !ok(frame.rows)) return "resize needs cols and rows: integers 1-1000";
      const stale = this.mayWrite(pty, socket);
      if (stale) return stale;
      pty.cols = frame.cols as number;
      pty.rows = frame.rows as number;
      pty.program.resize(pty.cols, pty.rows);
      return undefined;
    }
    return `unknown frame type ${JSON.stringify(frame.type)}: send input or resize`;
  }

  /** Undefined when this socket's generation is the held one (or the program has none); else the error. */
  private mayWrite(pty: Pty, socket: Attached): string | undefined {
    const held = pty.program.generation?.();
    if (held === undefined || (socket.generation ?? 0) === held) return undefined;
    this.store.count("terminals.staleWrites");
    return "generation_mismatch";
  }

  private input(pty: Pty, text: string): undefined {
    if (text === "") return undefined;
    pty.lastActivityAt = Date.now();
    // Typing in a terminal is the sandbox's use: its idle timeout counts from here.
    this.store.touchSandbox(pty.sandboxId, pty.lastActivityAt);
    pty.program.input(text);
    return undefined;
  }

  private exited(pty: Pty, code: number): void {
    if (!pty.alive) return;
    pty.alive = false;
    pty.exitCode = code;
    pty.program.ended?.();
    const socket = pty.socket;
    pty.socket = undefined;
    if (socket) {
      send(socket.ws, JSON.stringify({ type: "exit", exitCode: code }));
      close(socket.ws, 1000, "exited");
    }
    // Its metadata stays readable for the detach window, then it is gone.
    this.armDetach(pty);
  }

  /** A socket closed (or was dropped): with none left, the detach window starts. */
  private detached(pty: Pty, socket: Attached): void {
    if (pty.socket !== socket) return;
    pty.socket = undefined;
    this.armDetach(pty);
  }

  private armDetach(pty: Pty): void {
    if (pty.timer !== undefined) clearTimeout(pty.timer);
    pty.timer = setTimeout(() => this.gone(pty), this.detachMs());
  }

  /** The PTY is gone: forgotten, its program told, its socket (if any) closed 1001. */
  private gone(pty: Pty): void {
    if (pty.timer !== undefined) clearTimeout(pty.timer);
    pty.timer = undefined;
    const key = this.key(pty.sandboxId, pty.connectionId);
    if (this.ptys.get(key) === pty) this.ptys.delete(key);
    if (pty.alive) {
      pty.alive = false;
      pty.program.ended?.();
      this.store.count("terminals.ended");
    }
    const socket = pty.socket;
    pty.socket = undefined;
    if (socket) close(socket.ws, 1001, "terminal ended");
  }

  /** Every PTY of a sandbox that stopped or went away ends: sockets close 1001, no exit frame. */
  sandboxEnded(sandboxId: string): void {
    for (const pty of [...this.ptys.values()]) if (pty.sandboxId === sandboxId) this.gone(pty);
    this.onSandboxEnded(sandboxId);
  }

  /** Ends one PTY now (the TUI stopped): its socket closes 1001, no exit frame. */
  end(sandboxId: string, connectionId: string): void {
    const pty = this.ptys.get(this.key(sandboxId, connectionId));
    if (pty) this.gone(pty);
  }

  /** Ends every PTY of the sandbox with no socket now, as if its detach window had passed; how many. */
  expireDetached(sandboxId: string): number {
    let n = 0;
    for (const pty of [...this.ptys.values()])
      if (pty.sandboxId === sandboxId && !pty.socket) {
        this.gone(pty);
        n++;
      }
    return n;
  }

  /** Ends every PTY (the emulator's reset). */
  clear(): void {
    for (const pty of [...this.ptys.values()]) this.gone(pty);
  }

  list(sandboxId: string): PtySummary[] {
    return [...this.ptys.values()]
      .filter((p) => p.sandboxId === sandboxId)
      .map((p) => ({
        connectionId: p.connectionId,
        sessionId: p.sessionId,
        sockets: p.socket ? 1 : 0,
        alive: p.alive,
        inputBytes: p.inputBytes,
        outputBytes: p.outputBytes,
      }));
  }

  /** A PTY's metadata (§12), less the field variant `terminalMetadata` leaves out; undefined when unknown. */
  metadata(sandboxId: string, sessionId: string): Record<string, unknown> | undefined {
    const pty = [...this.ptys.values()].find((p) => p.sandboxId === sandboxId && p.sessionId === sessionId);
    if (!pty) return undefined;
    const iso = (ms: number) => new Date(ms).toISOString();
    const data: Record<string, unknown> = {
      sessionId: pty.sessionId,
      connectionId: pty.connectionId,
      name: pty.program.name,
      shell: pty.program.shell,
      cwd: absolutePath(""),
      cols: pty.cols,
      rows: pty.rows,
      createdAt: iso(pty.createdAt),
      lastActivityAt: iso(pty.lastActivityAt),
      isRunning: pty.alive,
      ...(pty.exitCode !== undefined ? { exitCode: pty.exitCode } : {}),
    };
    const left = effectiveVariants(this.store.variants()).terminalMetadata;
    if (left !== "full") delete data[left.slice(3)];
    return data;
  }
}
